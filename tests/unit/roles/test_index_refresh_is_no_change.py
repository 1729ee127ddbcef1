"""A package index refresh alone is not a change of the host: every apt task of the roles that only refreshes
the index (update_cache, no package named) reports unchanged, so that a second run after cache_valid_time
still changes nothing. make test-all's driver-vm-upgrade failed its idempotence run on the nvidia_driver
role's refresh when its converge of two guests took over an hour (issue 37)."""

import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
NESTED = ("block", "rescue", "always")


def _tasks(items):
    for task in items or []:
        if isinstance(task, dict):
            yield task
            for key in NESTED:
                yield from _tasks(task.get(key))


def refresh_only_tasks():
    out = subprocess.run(["git", "ls-files", "roles"], cwd=ROOT, capture_output=True, text=True, check=True)
    found = []
    for name in out.stdout.splitlines():
        if "/tasks/" not in name or not name.endswith(".yml"):
            continue
        for task in _tasks(yaml.safe_load((ROOT / name).read_text())):
            apt = task.get("ansible.builtin.apt")
            if isinstance(apt, dict) and apt.get("update_cache") and not apt.get("name"):
                found.append((name, task))
    return found


def test_an_index_refresh_alone_reports_no_change():
    found = refresh_only_tasks()
    assert found, "the nvidia_driver role's index refresh (roles/nvidia_driver/tasks/sources.yml) is gone?"
    for name, task in found:
        assert task.get("changed_when") is False, (
            f"{name}: {task['name']!r} reports a refreshed index as a change"
        )
