# Copyright: gpufleet contributors
# Apache-2.0
"""Controller side of the audit: build the fleet report from every host's audit result and write it.

Documentation: plugins/modules/nvidia_fleet_report.py. The work is in module_utils/report.py (pure Python);
this plugin only reads hostvars, calls it, writes the files atomically and prints the summary table.
"""

from __future__ import annotations

import datetime
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.drift import (
    BaselineError,
    validate_baseline,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.report.build import (
    FORMATS,
    build_report,
    check_report_dir,
    drift_lines,
    record_from_result,
    summary_lines,
    write_reports,
)

display = Display()

ARGS = {
    "report_dir": {"type": "path", "required": True},
    "formats": {"type": "list", "elements": "str", "default": list(FORMATS), "choices": list(FORMATS)},
    "hosts": {"type": "list", "elements": "str"},
    "result_var": {"type": "str", "default": "__gpufleet_audit_facts"},
    "baseline_var": {"type": "str", "default": "gpufleet_baseline"},
    "preflight": {"type": "bool", "default": False},
    "fail_on_drift": {"type": "bool", "default": False},
    "fail_on_unreachable": {"type": "bool", "default": False},
    "print_summary": {"type": "bool", "default": True},
    "generated_at": {"type": "str"},
}


def _plain(value):
    """Ansible's lazy/tagged containers -> plain Python (dict/list/str/int/...)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return value
    return str(value)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _, args = self.validate_argument_spec(argument_spec=ARGS)
        task_vars = task_vars or {}
        hostvars = task_vars.get("hostvars", {})
        report_dir = args["report_dir"]

        problem = check_report_dir(report_dir, create=not self._task.check_mode)
        if problem:
            raise AnsibleActionFail(problem)

        names = args["hosts"]
        if names is None:
            names = [
                h for h in task_vars.get("groups", {}).get("all", []) if args["result_var"] in hostvars[h]
            ]
        baselines = {}
        for name in names:
            if name not in hostvars:
                raise AnsibleActionFail(f"hosts: {name!r} is not in the inventory")
            raw = _plain(hostvars[name].get(args["baseline_var"]))
            try:
                validate_baseline(raw, name=f"{args['baseline_var']} (host {name})")
            except BaselineError as exc:
                raise AnsibleActionFail(str(exc)) from None
            baselines[name] = raw

        if args["preflight"]:
            result.update(
                changed=False,
                report_dir=report_dir,
                hosts=sorted(names),
                msg=f"report directory {report_dir} is writable; baselines of {len(names)} host(s) valid",
            )
            return result

        records = [
            record_from_result(name, _plain(hostvars[name].get(args["result_var"])), baselines[name])
            for name in names
        ]
        now = time.time()
        generated_at = args["generated_at"] or datetime.datetime.fromtimestamp(
            now, tz=datetime.timezone.utc
        ).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            report = build_report(records, generated_at=generated_at)
        except BaselineError as exc:
            raise AnsibleActionFail(str(exc)) from None

        paths = {}
        if not self._task.check_mode:
            try:
                paths = write_reports(report, report_dir, args["formats"], timestamp=now)
            except OSError as exc:
                raise AnsibleActionFail(
                    f"gpufleet_audit_report_dir: cannot write the reports in {report_dir}: {exc}"
                ) from None
        summary = summary_lines(report)
        if args["print_summary"]:
            display.display(
                "\n".join(
                    ["", "gpufleet audit", *summary]
                    + ([f"HTML report: {paths['html']}"] if "html" in paths else [])
                )
            )
        drift = drift_lines(report)
        s = report["summary"]
        result.update(
            changed=bool(paths),
            paths=paths,
            summary=summary,
            drift=drift,
            totals=_plain({k: v for k, v in s.items() if k != "distributions"}),
        )
        problems = []
        if args["fail_on_drift"] and drift:
            problems.append(
                f"drift from the baseline on {s['hosts_with_drift']} host(s): " + "; ".join(drift)
            )
        down = [h["name"] for h in report["hosts"] if h["status"] != "ok"]
        if args["fail_on_unreachable"] and down:
            problems.append(f"{len(down)} host(s) not audited (unreachable or failed): " + ", ".join(down))
        if problems:
            result["failed"] = True
            result["msg"] = " | ".join(problems)
        else:
            result["msg"] = (
                f"fleet report for {s['hosts']} host(s) written to {report_dir}"
                if paths
                else ("check mode: reports not written")
            )
        return result
