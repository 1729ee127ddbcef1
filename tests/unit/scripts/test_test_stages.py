"""scripts/test_stages.sh (make test): stages in order, background stages, the time table, failures."""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MAKEFILE = """\
good:
\t@echo good-ran
slow:
\t@sleep 1; echo slow-ran; touch slow.done
sleeper:
\t@sleep 2; touch sleeper.done
longer:
\t@sleep 5
bad:
\t@false
lab:
\t@echo lab-ran >> lab.count
after: lab
\t@echo after-ran
group:
\t@cat /proc/self/autogroup > group.txt
"""


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "test_stages.sh", tmp_path / "scripts")
    (tmp_path / "Makefile").write_text(MAKEFILE)
    return tmp_path


def _run(tree, *stages):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    argv = ["bash", str(tree / "scripts" / "test_stages.sh"), *stages]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


def _rows(out):
    table = out.split("make test: stage times", 1)[1]
    return [m.group(1) for m in re.finditer(r"^  (\S+)\s+\d+\s+\d+%$", table, re.M)]


def test_stages_run_in_order_and_the_table_names_each(tree):
    res = _run(tree, "good", "lab", "after")
    assert res.returncode == 0, res.stdout + res.stderr
    assert _rows(res.stdout) == ["good", "lab", "after"]
    # lab is built by its own stage only, not again as the next stage's prerequisite
    assert (tree / "lab.count").read_text() == "lab-ran\n"
    assert re.search(r"^  total\s+\d+ \(\d+ min \d+ s\)$", res.stdout, re.M)


def test_a_background_stage_runs_beside_the_rest_and_is_waited_for(tree):
    res = _run(tree, "bg:slow", "good")
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tree / "slow.done").exists()
    assert _rows(res.stdout) == ["good", "bg:slow"]
    assert "slow (background) ended with exit 0" in res.stdout
    assert "slow-ran" in (tree / ".cache/test-stages/slow.log").read_text()


def test_a_background_stage_row_is_its_own_time_not_the_wait(tree):
    """bg:vm ended 11 min before the foreground in a make test, and its row said 3292 s: the time until it
    was waited for. The row is the stage's own run."""
    res = _run(tree, "bg:sleeper", "longer")
    assert res.returncode == 0, res.stdout + res.stderr
    seconds = dict(re.findall(r"^  (\S+)\s+(\d+)\s+\d+%$", res.stdout, re.M))
    assert int(seconds["longer"]) >= 5
    assert int(seconds["bg:sleeper"]) <= 3, res.stdout


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="this kernel has no autogroups")
def test_a_background_stage_is_niced_as_a_session(tree):
    """setsid makes the stage a session; its autogroup gets nice 10 (lab/vm.py's NICE says why)."""
    res = _run(tree, "bg:group", "good")
    assert res.returncode == 0, res.stdout + res.stderr
    group = (tree / "group.txt").read_text().split()
    assert group[-2:] == ["nice", "10"], group
    # a group of its own: not the runner's session (nor the kernel's default group, where the runner's session
    # never called setsid: that one shows nothing)
    own = Path("/proc/self/autogroup").read_text().split()
    assert group[0].startswith("/autogroup-") and (not own or group[0] != own[0]), (group, own)


def test_a_failing_background_stage_fails_the_run(tree):
    res = _run(tree, "bg:bad", "good")
    assert res.returncode != 0
    assert "failed in bad (background)" in res.stdout


def test_a_failing_stage_stops_the_run_and_the_background_stages(tree):
    res = _run(tree, "bg:sleeper", "bad", "good")
    assert res.returncode != 0
    assert _rows(res.stdout) == ["bad"]
    assert "failed in bad" in res.stdout
    assert "stopped background stage sleeper" in res.stdout
    assert "good-ran" not in res.stdout
    time.sleep(3)  # it would have finished by now had it not been stopped
    assert not (tree / "sleeper.done").exists()


def test_make_test_boots_a_vm_guest_beside_its_stages():
    """Issue 18: make test runs the driver role on a VM guest (boot, install, reboot, verify), started first
    so that it runs beside every other stage; make test-vm runs the longer scenarios."""
    makefile = (ROOT / "Makefile").read_text()

    def var(name):
        found = re.search(rf"^{name} \?= (.+)$", makefile, re.MULTILINE)
        assert found, f"Makefile: {name} ?= ..."
        return found.group(1).split()

    stages = var("TEST_STAGES")
    assert stages[0] == "bg:vm", stages
    # the other background stage is the matrix's lowest minor, beside molecule: after the lab it needs
    assert [s for s in stages if s.startswith("bg:")] == ["bg:vm", "bg:matrix-lowest"], stages
    assert stages.index("lab") < stages.index("bg:matrix-lowest") < stages.index("molecule"), stages
    assert re.search(r"^vm: .*\n\tscripts/molecule_vm_or_skip\.sh \$\(VM_TEST_SCENARIOS\)$", makefile, re.M)
    assert var("VM_TEST_SCENARIOS") == ["driver-vm"]
    longer = {"driver-vm-kernel", "driver-vm-sb", "driver-vm-debian13", "driver-vm-upgrade"}
    assert longer <= set(var("VM_SCENARIOS"))
    for scenario in var("VM_TEST_SCENARIOS") + var("VM_SCENARIOS"):
        assert (ROOT / "molecule" / scenario / "molecule.yml").is_file(), scenario
