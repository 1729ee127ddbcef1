"""scripts/test_stages.sh (make test): stages in order, background stages, the time table, failures."""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

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
novm:
\t@echo "SKIPPED: molecule driver-vm: no QEMU"
pytestskip:
\t@echo "SKIPPED [1] tests/test_x.py:3: a test's own skip"
forever:
\t@sleep 60
"""


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "test_stages.sh", tmp_path / "scripts")
    (tmp_path / "Makefile").write_text(MAKEFILE)
    return tmp_path


def _run(tree, *stages, budget=None, keep_going=False):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE") and not k.startswith("TEST_")}
    if budget is not None:
        env["TEST_BUDGET"] = str(budget)
    if keep_going:
        env["TEST_KEEP_GOING"] = "1"
    argv = ["bash", str(tree / "scripts" / "test_stages.sh"), *stages]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


def _rows(out):
    table = out.split("make test: stage times", 1)[1]
    return [m.group(1) for m in re.finditer(r"^  (\S+)\s+\d+\s+\d+%", table, re.M)]


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
    seconds = dict(re.findall(r"^  (\S+)\s+(\d+)\s+\d+%", res.stdout, re.M))
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


def test_keep_going_runs_every_stage_and_fails_at_the_end_naming_each_failure(tree):
    """Issue 37: make test-all's airgap failure stopped the VM guests an hour into their run; with
    TEST_KEEP_GOING=1 (make test-all) every stage runs to its end, the background ones too, and the run fails
    at the end naming every stage that failed."""
    res = _run(tree, "bg:sleeper", "bad", "good", "bg:bad", "wait:bad", "wait:sleeper", keep_going=True)
    assert res.returncode == 2
    assert "good-ran" in res.stdout
    assert (tree / "sleeper.done").exists()  # not stopped
    assert "stopped background stage" not in res.stdout
    assert "failed in bad, bad (background)" in res.stdout
    assert _rows(res.stdout) == ["bad", "good", "bg:bad", "bg:sleeper"]


def test_make_test_all_keeps_going_and_make_test_stops_at_the_first_failure():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(
        r"^test-all: .*\n\tTEST_BUDGET=0 TEST_KEEP_GOING=1 scripts/test_stages\.sh ", makefile, re.M
    )
    assert "TEST_KEEP_GOING" not in re.search(r"^test: .*\n\t(.*)$", makefile, re.M).group(1)


def test_a_wait_stage_waits_for_its_background_stage_there(tree):
    res = _run(tree, "bg:slow", "wait:slow", "good")
    assert res.returncode == 0, res.stdout + res.stderr
    assert _rows(res.stdout) == ["bg:slow", "good"]
    assert res.stdout.index("slow (background) ended") < res.stdout.index("good-ran")


def test_a_wait_stage_without_its_background_stage_is_an_error(tree):
    res = _run(tree, "good", "wait:lab")
    assert res.returncode == 2
    assert "wait:lab: no background stage lab before it" in res.stderr


def test_a_skipped_stage_is_shown_as_skipped_not_passed(tree):
    res = _run(tree, "novm", "good")
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"^  novm\s+\d+\s+\d+% SKIPPED \(1\)$", res.stdout, re.M), res.stdout
    summary = res.stdout.split("make test: stage times", 1)[1]
    assert "1 SKIPPED (not run, so not passed):\n  SKIPPED: molecule driver-vm: no QEMU" in summary


def test_a_test_skipped_inside_a_stage_is_not_a_skipped_stage(tree):
    """pytest's summary lines (SKIPPED [1] path: reason) are the stage's own business."""
    res = _run(tree, "pytestskip")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SKIPPED (" not in res.stdout.split("make test: stage times", 1)[1]


def test_a_stage_past_the_budget_is_cut_and_fails_the_run(tree):
    t0 = time.monotonic()
    res = _run(tree, "good", "forever", "slow", budget=2)
    assert time.monotonic() - t0 < 20
    assert res.returncode == 124
    assert "forever was CUT after" in res.stderr
    assert "budget of 2 s (TEST_BUDGET)" in res.stderr
    assert "failed in forever (cut at the budget)" in res.stdout
    assert "slow-ran" not in res.stdout


def test_a_background_stage_past_the_budget_is_cut_too(tree):
    res = _run(tree, "bg:forever", "good", budget=2)
    assert res.returncode == 124
    assert "bg:forever was CUT after" in res.stderr


def test_the_output_of_a_foreground_stage_is_shown_and_kept(tree):
    res = _run(tree, "good")
    assert "good-ran" in res.stdout
    assert (tree / ".cache/test-stages/good.log").read_text() == "good-ran\n"


def _makefile_var(makefile, name):
    found = re.search(rf"^{name} \?= (.+)$", makefile, re.MULTILINE)
    assert found, f"Makefile: {name} ?= ..."
    return found.group(1).split()


def test_make_test_is_the_fast_gate_and_test_all_runs_everything():
    """Issue 34: make test is the fast gate, held to a budget; the VM guests, every platform and the version
    matrix run in make test-all (and make test-vm), which CONTRIBUTING.md says when to run."""
    makefile = (ROOT / "Makefile").read_text()
    stages = _makefile_var(makefile, "TEST_STAGES")
    assert {"lint", "sanity", "unit", "integration", "molecule"} <= set(stages), stages
    # the lab builds beside the first stages, and is waited for before the unit tests (its lab tests need it)
    assert stages[0] == "bg:lab" and stages.index("wait:lab") < stages.index("unit"), stages
    assert not {"vm", "bg:vm", "matrix", "matrix-lowest", "test-vm"} & set(stages), stages
    assert int(_makefile_var(makefile, "TEST_BUDGET")[0]) <= 1800
    assert re.search(
        r"^test: .*\n\tTEST_BUDGET=\$\(TEST_BUDGET\) scripts/test_stages\.sh \$\(TEST_STAGES\)$",
        makefile,
        re.M,
    )
    every = _makefile_var(makefile, "TEST_ALL_STAGES")
    assert {"molecule-all", "matrix", "bg:test-vm", "wait:test-vm", "gpu"} <= set(every), every
    # the VM guests start once the lab is up and are waited for before the table
    assert every.index("wait:lab") < every.index("bg:test-vm") and every[-1] == "wait:test-vm", every
    # every molecule scenario of make test is one of make test-all's
    fast = {s.split(":")[0] for s in _makefile_var(makefile, "MOLECULE_SCENARIOS")}
    assert fast <= set(_makefile_var(makefile, "MOLECULE_ALL_SCENARIOS")), fast
    for scenario in _makefile_var(makefile, "MOLECULE_ALL_SCENARIOS"):
        assert (ROOT / "molecule" / scenario / "molecule.yml").is_file(), scenario
    # make vm runs the one-guest check, make test-vm every other VM scenario
    assert re.search(r"^vm: .*\n\tscripts/molecule_vm_or_skip\.sh \$\(VM_TEST_SCENARIOS\)$", makefile, re.M)
    vm = _makefile_var(makefile, "VM_SCENARIOS")
    # driver-vm is make vm's; make test-vm runs it inside driver-vm-kernel (the same guest, playbooks, tests)
    assert _makefile_var(makefile, "VM_TEST_SCENARIOS") == ["driver-vm"]
    kernel = yaml.safe_load((ROOT / "molecule/driver-vm-kernel/molecule.yml").read_text())
    assert kernel["provisioner"]["playbooks"]["converge"] == "../driver-vm/converge.yml"
    assert kernel["provisioner"]["playbooks"]["prepare"] == "../driver-vm/prepare.yml"
    assert "../../driver-vm/tests/test_driver_vm.py" in kernel["verifier"]["additional_files_or_dirs"]
    assert "../driver-vm/side_effect.yml" in (ROOT / "molecule/driver-vm-kernel/side_effect.yml").read_text()
    assert {
        "driver-vm-kernel",
        "driver-vm-sb",
        "driver-vm-debian13",
        "driver-vm-upgrade",
    } == set(vm)
    for scenario in [*vm, "driver-vm"]:
        assert (ROOT / "molecule" / scenario / "molecule.yml").is_file(), scenario
