"""The wrappers of the VM scenarios in make test: SKIPPED is said and counted, never a pass; the background
runner hands back the scenario's log and status."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SKIP = ROOT / "scripts" / "molecule_vm_or_skip.sh"
BG = ROOT / "scripts" / "vm_tests_bg.sh"


def _run(cmd, **env):
    env = {**os.environ, **env}
    argv = [str(c) for c in cmd]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)


def test_gpufleet_vm_0_prints_skipped_for_each_scenario_and_exits_0():
    res = _run([SKIP, "driver-vm", "other-vm"], GPUFLEET_VM="0", GPUFLEET_VM_WHY="no time")
    assert res.returncode == 0
    assert res.stdout.splitlines() == [
        "SKIPPED: molecule driver-vm: GPUFLEET_VM=0 (no time)",
        "SKIPPED: molecule other-vm: GPUFLEET_VM=0 (no time)",
    ]


def test_without_a_scenario_it_is_a_usage_error():
    assert _run([SKIP]).returncode == 2
    assert _run([BG, "start"]).returncode == 2
    assert _run([BG, "bogus"]).returncode == 2


def test_background_run_gives_back_the_log_and_the_status(tmp_path):
    """start + wait around the skip wrapper (GPUFLEET_VM=0, so nothing boots): wait prints the log and
    exits with the run's status; a second wait without a start is an error."""
    work = tmp_path / "checkout"
    (work / "scripts").mkdir(parents=True)
    for script in (SKIP, BG):
        (work / "scripts" / script.name).write_bytes(script.read_bytes())
        (work / "scripts" / script.name).chmod(0o755)
    start = _run([work / "scripts" / BG.name, "start", "driver-vm"], GPUFLEET_VM="0")
    assert start.returncode == 0 and "started in the background" in start.stdout
    done = _run([work / "scripts" / BG.name, "wait"])
    assert done.returncode == 0
    assert "SKIPPED: molecule driver-vm: GPUFLEET_VM=0" in done.stdout
    assert "vm tests: driver-vm exit 0 after" in done.stdout
    assert _run([work / "scripts" / BG.name, "wait"]).returncode == 2
