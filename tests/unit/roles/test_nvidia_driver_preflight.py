"""roles/nvidia_driver: bad input is refused in preflight, before any change.

Runs the role's preflight (tags nvidia_driver_preflight) against this machine in check mode through
ansible-playbook; the preflight only reads (nvidia_plan, which runs nvidia_facts).
"""

import json

import pytest

from tests.playbook import ROOT, run

PLAYBOOK = """
- name: nvidia_driver preflight
  hosts: localhost
  gather_facts: true
  roles:
    - role: gpufleet.nvidia.nvidia_driver
      vars: {vars}
"""


def run_preflight(tmp_path, role_vars, callback=False):
    """The role's preflight on this machine, which has no GPU: the driver is planned anyway (a host without
    one gets no plan to refuse, test_driver_tags.py)."""
    playbook = tmp_path / "preflight.yml"
    role_vars = dict({"nvidia_driver_install_without_gpu": True}, **role_vars)
    playbook.write_text(PLAYBOOK.format(vars=json.dumps(role_vars)))
    return run(
        tmp_path,
        playbook,
        tags="nvidia_driver_preflight",
        check=True,
        callback=callback,
        json_results=True,
        timeout=300,
    )


def test_good_input_passes_preflight(tmp_path):
    result = run_preflight(
        tmp_path, {"nvidia_driver_branch": "580", "nvidia_driver_gpus": [{"name": "NVIDIA H200"}]}
    )
    assert result.rc == 0, result.text
    assert "driver branch 580 (open module) from nvidia_repo" in result.text


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
        (  # NVIDIA/ansible-role-nvidia-driver's variable (issue 37)
            {"nvidia_driver_ubuntu_branch": "535"},
            [
                "nvidia_driver_ubuntu_branch='535' (allowed: unset: ",
                "set nvidia_driver_branch: '535' instead",
            ],
        ),
    ],
)
def test_bad_input_is_refused_in_preflight(tmp_path, role_vars, needles):
    result = run_preflight(tmp_path, role_vars)
    rc, out = result.rc, result.text
    assert rc != 0, out
    for needle in needles:
        assert needle in out, (needle, out[-3000:])
    # refused in the preflight: no later phase ran
    assert "Sources |" not in out
    assert "Install |" not in out


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
    result = run_preflight(tmp_path, role_vars, callback=True)
    assert result.rc != 0, result.text[-2000:]
    messages = [msg for _task, msg in result.failures()]
    assert len(messages) == 1, messages
    assert variable in messages[0], messages
    named = [name for name in VARIABLES if name != variable and name in messages[0]]
    # the version error says which branch it is not in (the value the user set), nothing else
    assert named == (["nvidia_driver_branch"] if variable == "nvidia_driver_version" else []), messages
