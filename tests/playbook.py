"""Run ansible-playbook as a user does and say which tasks really ran: the one playbook runner of the tests
(tests/integration, tests/unit/roles).

``run(...)`` returns a ``Run`` with the exit code, the whole output (whitespace folded, for message
assertions) and, from the ansible.posix.json callback, the tasks per host that ran (not skipped) and the
failures. ansible-playbook is the one beside the running Python (.venv's, or tox's for the version matrix).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"


@dataclass
class Run:
    rc: int
    text: str
    plays: list = field(default_factory=list)

    def tasks(self, host=None, *, ran=True):
        """Names of the tasks that ran (or, with ran=False, that were skipped) on host (any host)."""
        names = []
        for play in self.plays:
            for task in play.get("tasks", []):
                for name, result in task.get("hosts", {}).items():
                    if host is not None and name != host:
                        continue
                    if bool(result.get("skipped")) != ran:
                        names.append(task["task"]["name"])
                        break
        return names

    def failures(self):
        """(task name, msg) of every failed task result, in order."""
        return [
            (task["task"]["name"], result.get("msg", ""))
            for play in self.plays
            for task in play.get("tasks", [])
            for result in task.get("hosts", {}).values()
            if result.get("failed")
        ]


def _env(tmp_path, callback, json_results):
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".collections"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "local"),
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "remote"),
        ANSIBLE_FACT_CACHING="memory",
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        LC_ALL="C.UTF-8",
    )
    if callback:
        env["ANSIBLE_STDOUT_CALLBACK"] = "ansible.posix.json"
    if callback or json_results:
        env["ANSIBLE_CALLBACK_RESULT_FORMAT"] = "json"
    return env


def run(
    tmp_path,
    playbook,
    extra_vars=None,
    *,
    tags=None,
    skip_tags=None,
    check=False,
    inventory=None,
    callback=True,
    json_results=False,
    timeout=600,
):
    """ansible-playbook PLAYBOOK against inventory (default: this machine), optionally with --tags.

    callback=False keeps ansible.cfg's default callback, whose results are YAML unless json_results."""
    cmd = [str(ANSIBLE_PLAYBOOK), "-i", str(inventory or ROOT / "inventory/localhost.yml"), str(playbook)]
    if extra_vars is not None:
        cmd += ["-e", json.dumps(extra_vars)]
    if tags:
        cmd += ["--tags", ",".join([tags] if isinstance(tags, str) else tags)]
    if skip_tags:
        cmd += ["--skip-tags", ",".join([skip_tags] if isinstance(skip_tags, str) else skip_tags)]
    if check:
        cmd.append("--check")
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=_env(tmp_path, callback, json_results),
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
    plays = []
    if callback:
        start = proc.stdout.find("{")
        try:
            plays = json.loads(proc.stdout[start:]).get("plays", []) if start >= 0 else []
        except ValueError:
            plays = []
    return Run(proc.returncode, " ".join((proc.stdout + proc.stderr).split()), plays)
