"""The journey's recorder (molecule/journey): an aggregate callback beside the user's default output.

molecule/journey/journey.py enables it for every ansible-playbook it runs (ANSIBLE_CALLBACK_PLUGINS,
ANSIBLE_CALLBACKS_ENABLED; the command lines stay as README.md writes them) and names its output file in
JOURNEY_RECORD. It writes one JSON document at the end of the run: every gpufleet.nvidia.nvidia_plan result
(the plans' summaries and errors per role, the lines a preflight prints), every debug message, and the
recap's counts per host. The tests (molecule/journey/tests) compare them; nothing of the collection reads it.
"""

import json
import os

from ansible.plugins.callback import CallbackBase

PLAN = "gpufleet.nvidia.nvidia_plan"
DEBUG = ("ansible.builtin.debug", "debug")


def _plan_record(args, result):
    plans = result.get("plans") or {}
    if not plans and "plan" in result:  # the plan of one role only
        roles = args.get("role")
        plans = {(roles[0] if isinstance(roles, list) else roles): result["plan"]}
    return {
        "phase": args.get("phase", "preflight"),
        "plans": {
            role: {"summary": plan.get("summary"), "enabled": plan.get("enabled", True)}
            for role, plan in plans.items()
            if isinstance(plan, dict)
        },
        "errors": result.get("errors") or {},
        "lines": result.get("lines") or [],
    }


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "journey_record"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._records = []
        self._play = ""

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name()

    def _record(self, result, status):
        task = result._task
        action = getattr(task, "resolved_action", None) or task.action
        res = result._result
        entry = {
            "host": result._host.get_name(),
            "play": self._play,
            "task": task.name,
            "role": task._role.get_name(include_role_fqcn=False) if task._role else "",
            "action": action,
            "status": status,
            "changed": bool(res.get("changed")),
        }
        if action == PLAN:
            entry.update(_plan_record(task.args, res))
        elif action in DEBUG and "msg" in res:
            entry["msg"] = res["msg"]
        elif status != "failed":
            return
        else:
            entry["msg"] = res.get("msg")
        self._records.append(entry)

    def v2_runner_on_ok(self, result):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._record(result, "ignored" if ignore_errors else "failed")

    def v2_playbook_on_stats(self, stats):
        path = os.environ.get("JOURNEY_RECORD")
        if not path:
            return
        recap = {host: stats.summarize(host) for host in sorted(stats.processed)}
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"records": self._records, "recap": recap}, f, indent=1, default=str)
