"""Issue 38: on dnf, cuda_toolkit and cudnn move a pinned version up or down like apt does.

Tried on an EL-shaped host, cudnn installed and locked 9.14.0 and then failed to move to 9.19.0 with "All
matches were filtered out by exclude filtering" (its own versionlock), and cuda_toolkit's dnf task without
allow_downgrade left a lower pin a silent no-op. Each role installs with allow_downgrade and, where its plan
moves a locked version, with the versionlock plugin off for that transaction; then it releases the old locks
and locks again. The locks go after the install, not before: a refused install (a package whose signature does
not verify, found on the lab's tampered repositories) must leave the installed version locked as it was.
"""

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
CASES = {
    "cuda_toolkit": ("__cuda_toolkit_plan.plan.versionlock_release", "Install | Toolkit packages (dnf)"),
    "cudnn": ("__cudnn_pkgs.unhold", "Install | cuDNN packages pinned to the version (dnf)"),
}


def _tasks(role):
    return yaml.safe_load((ROLES / role / "tasks" / "install_nvidia_repo.yml").read_text())


@pytest.mark.parametrize("role", sorted(CASES))
def test_a_dnf_install_that_moves_a_locked_version_runs_without_the_lock_and_releases_it_after(role):
    released, install_name = CASES[role]
    tasks = _tasks(role)
    names = [t["name"] for t in tasks]
    install = next(i for i, n in enumerate(names) if n.startswith(install_name))
    dnf = tasks[install]["ansible.builtin.dnf"]
    assert dnf["allow_downgrade"] is True
    assert dnf["disable_plugin"] == f"{{{{ ['versionlock'] if {released} | length > 0 else [] }}}}"
    release = [
        i
        for i, t in enumerate(tasks)
        if "versionlock', 'delete'" in str((t.get("ansible.builtin.command") or {}).get("argv"))
    ]
    assert len(release) == 1 and release[0] > install, names  # a refused install leaves the locks
    task = tasks[release[0]]
    assert released in task["ansible.builtin.command"]["argv"]
    assert f"{released} | length > 0" in task["when"]
    assert any("manager == 'dnf'" in w for w in task["when"])
    lock = [i for i, t in enumerate(tasks) if "(dnf versionlock" in t["name"]]
    assert lock and min(lock) > release[0], names  # locked again after the release
