"""The driver filters: the after-install reboot decision and the missing versionlocks, as Jinja sees them."""

import pytest
from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.nvidia.plugins.filter import driver as filters
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp

FACTS = {
    "host": {"os": {"distribution": "Ubuntu", "version": "24.04", "key": "ubuntu2404"}, "container": "none"},
    "driver": {"module_for_running_kernel": {"version": "580.95.05", "kernel_module": "open"}},
}


def test_filters_are_registered():
    names = filters.FilterModule().filters()
    assert names["driver_reboot"] is filters.driver_reboot
    assert names["driver_unlocked"] is filters.driver_unlocked
    assert names["driver_unheld"] is filters.driver_unheld


def test_driver_reboot_is_reboot_after():
    plan = dp.decide({"branch": "580"}, FACTS)
    assert filters.driver_reboot(plan, FACTS, True, "auto", False) == dp.reboot_after(
        plan, FACTS, changed=True, policy="auto", is_controller=False
    )
    assert filters.driver_reboot(plan, FACTS, False, "never", False)["reboot"] is False


def test_driver_reboot_refuses_a_bad_policy_naming_the_variable():
    with pytest.raises(
        AnsibleFilterError, match=r"^nvidia_driver_reboot=sometimes \(allowed: auto, never, always\)$"
    ):
        filters.driver_reboot({}, FACTS, False, "sometimes")


def test_driver_unlocked():
    plan = {"versionlock_names": ["nvidia-open", "kmod-nvidia-open-dkms"]}
    facts = {"driver": {"packages": [{"name": "nvidia-open", "version": "580", "held": True}]}}
    assert filters.driver_unlocked(plan, facts) == ["kmod-nvidia-open-dkms"]


def test_driver_unheld():
    plan = {"hold_names": ["nvidia-smi", "libcuda1"]}
    facts = {"driver": {"packages": [{"name": "libcuda1", "version": "535", "held": True}]}}
    assert filters.driver_unheld(plan, facts) == ["nvidia-smi"]
