"""roles/nvidia_driver: bad input is refused in preflight, before any change.

Runs the role's preflight (tags nvidia_driver_preflight) against this machine in check mode through
ansible-playbook; the preflight only reads (nvidia_plan, which runs nvidia_facts).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PLAYBOOK = """
- name: nvidia_driver preflight
  hosts: localhost
  gather_facts: true
  roles:
    - role: gpufleet.nvidia.nvidia_driver
      vars: {vars}
"""


def run_preflight(tmp_path, role_vars, callback=None):
    playbook = tmp_path / "preflight.yml"
    playbook.write_text(PLAYBOOK.format(vars=json.dumps(role_vars)))
    env = dict(os.environ)
    env.update(
        {
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".collections"),
            "ANSIBLE_FORCE_COLOR": "false",
            "ANSIBLE_NOCOLOR": "true",
            "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
            "ANSIBLE_STDOUT_CALLBACK": callback or "ansible.builtin.default",
            "ANSIBLE_FACT_CACHING": "memory",
            "LC_ALL": "C.UTF-8",
        }
    )
    bindir = Path(sys.executable).parent
    proc = subprocess.run(
        [
            str(bindir / "ansible-playbook"),
            "-i",
            str(ROOT / "inventory" / "localhost.yml"),
            "--check",
            "--tags",
            "nvidia_driver_preflight",
            str(playbook),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if callback:
        return proc.returncode, proc.stdout
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_good_input_passes_preflight(tmp_path):
    rc, out = run_preflight(
        tmp_path, {"nvidia_driver_branch": "580", "nvidia_driver_gpus": [{"name": "NVIDIA H200"}]}
    )
    assert rc == 0, out
    assert "driver branch 580 (open module) from nvidia_repo" in out


@pytest.mark.parametrize(
    ("role_vars", "needles"),
    [
        ({"nvidia_driver_branch": "58O"}, ["nvidia_driver_branch: '58O'", "accepted forms: 580, R580"]),
        ({"nvidia_driver_branch": "581"}, ["581"]),
        (
            {"nvidia_driver_kernel_module": "open", "nvidia_driver_gpus": [{"pci_device_id": "0x15F8"}]},
            ["open", "Pascal"],
        ),
        ({"nvidia_driver_reboot": "sometimes"}, ["nvidia_driver_reboot", "sometimes", "auto, never, always"]),
        (
            {
                "nvidia_driver_mok_key": "/nonexistent/MOK.priv",
                "nvidia_driver_mok_cert": "/nonexistent/MOK.der",
            },
            ["nvidia_driver_mok_key: '/nonexistent/MOK.priv' does not exist"],
        ),
    ],
)
def test_bad_input_is_refused_in_preflight(tmp_path, role_vars, needles):
    rc, out = run_preflight(tmp_path, role_vars)
    assert rc != 0, out
    for needle in needles:
        assert needle in out, (needle, out[-3000:])
    # refused in the preflight: no later phase ran
    assert "Sources |" not in out
    assert "Install |" not in out


def failure_messages(stdout):
    """The msg of every failed task in an ansible.posix.json run."""
    data = json.loads(stdout[stdout.find("{") :])
    return [
        result.get("msg", "")
        for play in data["plays"]
        for task in play["tasks"]
        for result in task["hosts"].values()
        if result.get("failed")
    ]


VARIABLES = sorted(
    line.split(":")[0].strip()
    for line in (ROOT / "roles/nvidia_driver/defaults/main.yml").read_text().splitlines()
    if line.startswith("nvidia_driver_")
)


@pytest.mark.parametrize(
    ("role_vars", "variable"),
    [
        ({"nvidia_driver_reboot": "sometimes"}, "nvidia_driver_reboot"),
        ({"nvidia_driver_fabricmanager": "perhaps"}, "nvidia_driver_fabricmanager"),
        ({"nvidia_driver_version": "575.57.08"}, "nvidia_driver_version"),
    ],
)
def test_a_bad_variable_is_named_alone(tmp_path, role_vars, variable):
    rc, stdout = run_preflight(tmp_path, role_vars, callback="ansible.posix.json")
    assert rc != 0, stdout[-2000:]
    messages = failure_messages(stdout)
    assert len(messages) == 1, messages
    assert variable in messages[0], messages
    named = [name for name in VARIABLES if name != variable and name in messages[0]]
    # the version error says which branch it is not in (the value the user set), nothing else
    assert named == (["nvidia_driver_branch"] if variable == "nvidia_driver_version" else []), messages
