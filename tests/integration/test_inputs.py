"""Issue 35 as a user meets it: a bad role variable given with -e to the role's own playbook, in check mode on
this machine, fails the role's first task naming the variable, with no traceback, nothing changed and, for
a URL with credentials, the credentials nowhere in the output.

Run: .venv/bin/pytest tests/integration/test_inputs.py
"""

import pytest

from tests.playbook import ROOT, run

CASES = [
    # a newline that would add `Trusted: yes` to the deb822 source
    ("driver.yml", "nvidia_driver_debian_mirror", "http://deb.debian.org/debian\nTrusted: yes"),
    # a newline that would add an `install nvidia` line to modprobe.d, run as root at the next modprobe
    (
        "driver.yml",
        "nvidia_driver_modprobe_options",
        ["NVreg_EnableGpuFirmware=0\ninstall nvidia /bin/sh -c id"],
    ),
    # a list where the release table belongs: the plan crashed with a ValueError
    ("cuda.yml", "cuda_toolkit_redist_releases", {"13.0": ["13.0.2"]}),
    # credentials: refused and never shown
    ("cudnn.yml", "cudnn_redist_base_url", "https://fleet:s3cret@mirror.example/compute"),
]


@pytest.mark.parametrize(("playbook", "name", "value"), CASES, ids=[c[1] for c in CASES])
def test_a_bad_variable_fails_the_first_task_naming_it_and_changes_nothing(tmp_path, playbook, name, value):
    result = run(tmp_path, ROOT / "playbooks" / playbook, {name: value}, check=True, timeout=300)
    assert result.rc != 0, result.text
    failures = result.failures()
    assert failures and name in failures[0][1], (failures, result.text)
    assert "Traceback" not in result.text
    assert "s3cret" not in result.text
    changed = [
        task["task"]["name"]
        for play in result.plays
        for task in play.get("tasks", [])
        for host in task.get("hosts", {}).values()
        if host.get("changed")
    ]
    assert changed == [], changed
