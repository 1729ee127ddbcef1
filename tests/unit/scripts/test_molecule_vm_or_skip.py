"""The wrapper of the VM scenarios (make test-vm): SKIPPED is said and counted, never a pass."""

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SKIP = ROOT / "scripts" / "molecule_vm_or_skip.sh"


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
