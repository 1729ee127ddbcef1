"""The playbooks' own gpufleet_* variables are checked on the controller before any host is contacted
(issue 35).

Each playbook's first play runs gpufleet.nvidia.nvidia_inputs; site.yml's second play (the gate) plans every
role of every host, failing a refused host before the driver play. The inventory holds one host, gpu01, at an
address of TEST-NET-1 (192.0.2.0/24, never routed): a task that contacted it would come back unreachable, so
"no task ran on gpu01 but the checks" also shows that no host was contacted or changed.

Run: .venv/bin/pytest tests/integration/test_playbook_inputs.py
"""

import pytest

from tests.playbook import ROOT, run

INPUTS = {
    "driver_upgrade": (
        "Check the host pattern, the batch size and the drain/undrain hooks (names each wrong one)"
    ),
    "driver": "Check the host pattern gpufleet_driver_hosts (names each wrong one)",
    "preflight": "Check the host patterns and the root (names each wrong one)",
    "site": "Check the host patterns of the three plays (names each wrong one)",
}
GATE = "Plan the roles this host is in and the tags let run (their own plans; fails a refused host)"


@pytest.fixture
def inventory(tmp_path):
    path = tmp_path / "inventory.yml"
    path.write_text(
        "all:\n  hosts:\n    gpu01:\n      ansible_host: 192.0.2.10\n"
        "      ansible_ssh_common_args: -o ConnectTimeout=2 -o BatchMode=yes\n"
    )
    return path


def playbook(tmp_path, inventory, name, extra_vars, **kwargs):
    return run(
        tmp_path, ROOT / "playbooks" / f"{name}.yml", extra_vars, inventory=inventory, timeout=120, **kwargs
    )


def unreachable(result):
    """The hosts some task found unreachable (a host was contacted)."""
    return {
        host
        for play in result.plays
        for task in play.get("tasks", [])
        for host, res in task.get("hosts", {}).items()
        if res.get("unreachable")
    }


def assert_refused_first(result, name, sentence):
    """Failed in the first play with the sentence, no traceback, and no other task ran on gpu01."""
    assert result.rc == 2, result.text[-3000:]
    assert "Traceback" not in result.text
    assert result.tasks("gpu01") == [INPUTS[name]], result.tasks("gpu01")
    ((task, msg),) = result.failures()
    assert task == INPUTS[name]
    assert sentence in msg, msg
    assert not unreachable(result)
    return msg


def test_a_serial_that_is_no_batch_size_is_refused_before_any_host(tmp_path, inventory):
    """The bug: serial "ten percent" ended in a Python traceback from the rolling play's serial keyword."""
    result = playbook(
        tmp_path, inventory, "driver_upgrade", {"gpufleet_driver_upgrade_serial": "ten percent"}
    )
    assert_refused_first(
        result,
        "driver_upgrade",
        "gpufleet_driver_upgrade_serial=ten percent (allowed: what the play's serial takes: "
        "a whole number >= 1",
    )


def test_a_missing_undrain_hook_is_refused_before_the_first_drain(tmp_path, inventory):
    """The bug: a wrong undrain path was found after the host was drained, upgraded and rebooted."""
    drain = tmp_path / "drain.yml"
    drain.write_text("---\n- name: Drain\n  ansible.builtin.debug:\n    msg: drain\n")
    undrain = tmp_path / "no-such-undrain.yml"
    result = playbook(
        tmp_path,
        inventory,
        "driver_upgrade",
        {
            "gpufleet_driver_upgrade_drain_tasks": str(drain),
            "gpufleet_driver_upgrade_undrain_tasks": str(undrain),
        },
    )
    msg = assert_refused_first(
        result, "driver_upgrade", f"gpufleet_driver_upgrade_undrain_tasks={undrain} (allowed: empty (no hook)"
    )
    assert msg.endswith(": no such file on the controller"), msg
    assert "gpufleet_driver_upgrade_drain_tasks=" not in msg


def test_a_hook_the_inventory_gives_one_host_is_checked_before_the_first_host(tmp_path):
    """A group or host variable: the value the later host sees is checked too, before gpu01 is drained."""
    inventory = tmp_path / "inventory.yml"
    missing = tmp_path / "rack2-undrain.yml"
    inventory.write_text(
        "all:\n  vars:\n    ansible_ssh_common_args: -o ConnectTimeout=2 -o BatchMode=yes\n"
        "  hosts:\n    gpu01:\n      ansible_host: 192.0.2.10\n"
        "    gpu02:\n      ansible_host: 192.0.2.11\n"
        f"      gpufleet_driver_upgrade_undrain_tasks: {missing}\n"
    )
    result = playbook(tmp_path, inventory, "driver_upgrade", {})
    assert result.rc == 2, result.text[-3000:]
    ((task, msg),) = result.failures()
    assert task == INPUTS["driver_upgrade"]
    assert msg.endswith(": no such file on the controller (host gpu02)"), msg
    assert f"gpufleet_driver_upgrade_undrain_tasks={missing} (allowed: " in msg, msg
    assert not unreachable(result)


def test_a_relative_hook_is_refused_saying_why(tmp_path, inventory):
    result = playbook(
        tmp_path, inventory, "driver_upgrade", {"gpufleet_driver_upgrade_drain_tasks": "hooks/drain.yml"}
    )
    msg = assert_refused_first(
        result, "driver_upgrade", "gpufleet_driver_upgrade_drain_tasks=hooks/drain.yml"
    )
    assert "resolves against the playbook's directory" in msg


def test_good_values_pass_the_check_and_reach_the_rolling_play(tmp_path, inventory):
    """Checked values go on: the rolling play starts (and finds gpu01 unreachable, as it must here)."""
    drain = tmp_path / "drain.yml"
    drain.write_text("---\n- name: Drain\n  ansible.builtin.debug:\n    msg: drain\n")
    result = playbook(
        tmp_path,
        inventory,
        "driver_upgrade",
        {"gpufleet_driver_upgrade_serial": [1, "50%"], "gpufleet_driver_upgrade_drain_tasks": str(drain)},
    )
    assert INPUTS["driver_upgrade"] in result.tasks("gpu01")
    assert "Rolling NVIDIA driver upgrade" in result.text, result.text[-3000:]
    assert "Traceback" not in result.text


def test_a_host_pattern_list_is_refused_naming_the_variable(tmp_path, inventory):
    result = playbook(tmp_path, inventory, "driver", {"gpufleet_driver_hosts": ["gpu01", "gpu02"]})
    msg = assert_refused_first(
        result, "driver", 'gpufleet_driver_hosts=["gpu01", "gpu02"] (allowed: a host pattern'
    )
    assert msg.endswith(": a list, not a string"), msg


def test_a_relative_preflight_root_is_refused(tmp_path, inventory):
    result = playbook(tmp_path, inventory, "preflight", {"gpufleet_preflight_root": "srv/image"})
    assert_refused_first(result, "preflight", "gpufleet_preflight_root=srv/image (allowed: an absolute")


@pytest.mark.parametrize("tags", [None, "cudnn"], ids=["all", "tags-cudnn"])
def test_site_refuses_a_bad_cudnn_version_before_the_driver_play(tmp_path, inventory, tags):
    """The bug: site.yml refused cudnn_version only in its third play, after the driver and CUDA plays."""
    result = playbook(tmp_path, inventory, "site", {"cudnn_version": "9.x"}, check=True, tags=tags)
    assert result.rc == 2, result.text[-3000:]
    assert "Traceback" not in result.text
    # the checks and the gate only: no fact gathering, no task of the driver (or any later) play
    assert result.tasks("gpu01") == [INPUTS["site"], GATE], result.tasks("gpu01")
    ((task, msg),) = result.failures()
    assert task == GATE
    assert msg.startswith("cudnn: cudnn_version=9.x (allowed: "), msg
    assert not unreachable(result)


def test_site_gate_refuses_nothing_of_a_role_disabled_for_the_host(tmp_path, inventory):
    """Issue 37: cudnn_enabled false (a login node): the gate plans nothing for cudnn there, gathers nothing
    (no host contacted) and does not refuse its cudnn_version; the cudnn play then reaches for the host."""
    extra = {"cudnn_version": "9.x", "cudnn_enabled": False}
    result = playbook(tmp_path, inventory, "site", extra, check=True, tags="cudnn")
    assert "Traceback" not in result.text
    assert result.failures() == [], result.failures()
    assert result.tasks("gpu01")[:2] == [INPUTS["site"], GATE], result.tasks("gpu01")
    gate = [
        res
        for play in result.plays
        for task in play.get("tasks", [])
        if task["task"]["name"] == GATE
        for res in task.get("hosts", {}).values()
    ]
    assert gate and not gate[0].get("unreachable"), gate
    assert gate[0]["lines"][1].startswith("cudnn: disabled by cudnn_enabled: false"), gate


def test_site_gate_refuses_a_variable_of_nvidias_role_naming_ours(tmp_path, inventory):
    """Issue 37: a migrating admin's group_vars of NVIDIA/ansible-role-nvidia-driver were ignored without a
    word; the gate refuses each, before any host is contacted, with the gpufleet variable to set instead."""
    extra = {"nvidia_driver_skip_reboot": True, "nvidia_driver_module_params": "options nvidia NVreg_A=1"}
    result = playbook(tmp_path, inventory, "site", extra, check=True)
    assert result.rc == 2, result.text[-3000:]
    assert "Traceback" not in result.text
    assert result.tasks("gpu01") == [INPUTS["site"], GATE], result.tasks("gpu01")
    ((task, msg),) = result.failures()
    assert task == GATE
    assert msg.startswith("nvidia_driver: nvidia_driver_skip_reboot=True (allowed: unset: a variable of "), (
        msg
    )
    assert "set nvidia_driver_reboot: never instead" in msg, msg
    assert """nvidia_driver_module_params='options nvidia NVreg_A=1' (allowed: unset: """ in msg, msg
    assert 'set nvidia_driver_modprobe_options: ["NVreg_A=1"] instead' in msg, msg
    assert not unreachable(result)
