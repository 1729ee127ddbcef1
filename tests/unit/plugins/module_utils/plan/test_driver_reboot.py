"""The reboot (plan/driver/reboot.py): the decision before the install and the one after it."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.reboot import (
    reboot_after,
    reboot_decision,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.request import DriverPlanError

from tests.data.roles import driver_request as req


def decide(policy="auto", loaded="580.95.05", lflav="open", inst="580.95.05", iflav="open", **kw):
    return reboot_decision(policy, loaded, lflav, inst, iflav, **kw)


@pytest.mark.parametrize(
    ("kw", "reboot", "needed", "needle"),
    [
        ({}, False, False, "is the installed one"),
        ({"inst": "580.105.08"}, True, True, "differs from installed 580.105.08"),
        ({"loaded": "570.172.08", "inst": "580.95.05"}, True, True, "differs"),  # branch upgrade
        ({"lflav": "proprietary"}, True, True, "proprietary module differs"),  # flavor switch
        ({"loaded": None, "lflav": None}, True, True, "no NVIDIA module is loaded"),
        ({"inst": None, "iflav": None, "loaded": None, "is_container": True}, False, False, "container"),
        ({"inst": "580.105.08", "is_controller": True}, False, True, "controller"),
        ({"inst": "580.105.08", "is_container": True}, False, True, "container is never rebooted"),
        ({"inst": "580.105.08", "policy": "never"}, False, True, "reboot it yourself"),
        ({"policy": "always", "changed": True}, True, False, "policy always"),
        ({"policy": "always", "changed": False}, False, False, "installed one"),
        ({"policy": "always", "changed": True, "is_controller": True}, False, False, "controller"),
        ({"inst": "580.105.08", "host_managed_driver": True}, False, False, "host-managed"),
    ],
)
def test_reboot_decision(kw, reboot, needed, needle):
    d = decide(**kw)
    assert d["reboot"] is reboot
    assert d["needed"] is needed
    assert needle in d["reason"]


def test_reboot_decision_refuses_typo():
    with pytest.raises(
        DriverPlanError, match=r"^nvidia_driver_reboot=alwasy \(allowed: auto, never, always\)$"
    ):
        decide(policy="alwasy")


def facts(os_key="ubuntu2404", **driver):
    dist, ver = {
        "ubuntu2404": ("Ubuntu", "24.04"),
        "rhel9": ("RedHat", "9.4"),
        "rhel10": ("RedHat", "10.0"),
    }.get(os_key, ("Debian", os_key[-2:]))
    base = {"loaded_version": None, "module_for_running_kernel": {}, "packages": [], "runfile_markers": []}
    base.update(driver)
    return {
        "host": {
            "os": {"distribution": dist, "version": ver, "key": os_key},
            "kernel_release": "6.8.0-45-generic",
            "container": "none",
        },
        "driver": base,
        "nvswitch_count": 0,
    }


def test_reboot_after_reads_the_fresh_facts():
    plan = dp.decide(req({"branch": "580"}), facts())
    installed = facts(module_for_running_kernel={"version": "580.95.05", "kernel_module": "open"})
    after = reboot_after(plan, installed, changed=True, policy="auto")
    assert after["reboot"] is True
    assert after["needed"] is True
    assert after["check_running"] is False
    assert "A reboot is needed" in after["note"]
    loaded = facts(
        loaded_version="580.95.05",
        loaded_kernel_module="open",
        module_for_running_kernel={"version": "580.95.05", "kernel_module": "open"},
    )
    final = reboot_after(plan, loaded, policy="never")
    assert final["reboot"] is False
    assert final["check_running"] is True
    assert final["loaded_in_branch"] is True
    assert final["installed_version"] == "580.95.05"
    assert final["note"] == ""
    assert reboot_after(plan, installed, policy="auto", is_controller=True)["reboot"] is False
    container = facts()
    container["host"]["container"] = "docker"
    boxed = reboot_after(plan, container, changed=True, policy="always")
    assert boxed["reboot"] is False
    assert "impossible in a container" in boxed["note"]
    with pytest.raises(
        DriverPlanError, match=r"^nvidia_driver_reboot=alwasy \(allowed: auto, never, always\)$"
    ):
        reboot_after(plan, installed, policy="alwasy")
