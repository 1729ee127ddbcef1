"""The nvidia_driver role's later steps on the controller (plan/roles.py ``driver_phase``): the after-install
reboot decision, the kernels, the initramfs images, the missing holds and versionlocks, and verify, from the
preflight's plan and facts read after the step."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles

from tests.data.roles import driver_request, variables

FACTS = {
    "host": {"os": {"distribution": "Ubuntu", "version": "24.04", "key": "ubuntu2404"}, "container": "none"},
    "driver": {"module_for_running_kernel": {"version": "580.95.05", "kernel_module": "open"}},
}
HOST = {"is_controller": False}


def phase(name, planned, facts, context=None, **given):
    """driver_phase of the role's defaults updated with ``given`` (its variables by their names)."""
    return roles.driver_phase(name, variables("nvidia_driver", **given), planned, facts, context or HOST)


def test_the_reboot_phase_is_reboot_after():
    plan = dp.decide(driver_request({"branch": "580"}), FACTS)
    decided = phase(
        "reboot", plan, FACTS, {"is_controller": False, "changed": True}, nvidia_driver_reboot="auto"
    )
    assert decided == {
        "reboot": dp.reboot_after(plan, FACTS, changed=True, policy="auto", is_controller=False)
    }
    assert decided["reboot"]["reboot"] is True  # the module for the running kernel is not loaded
    never = phase(
        "reboot", plan, FACTS, {"is_controller": False, "changed": False}, nvidia_driver_reboot="never"
    )
    assert never["reboot"]["reboot"] is False


def test_the_reboot_phase_refuses_a_bad_policy_naming_the_variable():
    with pytest.raises(
        dp.DriverPlanError, match=r"^nvidia_driver_reboot=sometimes \(allowed: auto, never, always\)$"
    ) as raised:
        phase("reboot", {}, FACTS, nvidia_driver_reboot="sometimes")
    assert isinstance(raised.value, ValueError)  # what the nvidia_plan action turns into its failure


def test_the_installed_phase_gives_the_missing_versionlocks():
    plan = {"versionlock_names": ["nvidia-open", "kmod-nvidia-open-dkms"]}
    facts = {"driver": {"packages": [{"name": "nvidia-open", "version": "580", "held": True}]}}
    assert phase("installed", plan, facts)["unlocked"] == ["kmod-nvidia-open-dkms"]
    assert dp.versionlock_missing(plan, facts) == ["kmod-nvidia-open-dkms"]


def test_the_installed_phase_gives_the_missing_holds():
    plan = {"hold_names": ["nvidia-smi", "libcuda1"]}
    facts = {"driver": {"packages": [{"name": "libcuda1", "version": "535", "held": True}]}}
    assert phase("installed", plan, facts)["unheld"] == ["nvidia-smi"]
    assert dp.hold_missing(plan, facts) == ["nvidia-smi"]


RUNNING = "6.8.0-45-generic"


def image(release, stale):
    return {
        "release": release,
        "running": release == RUNNING,
        "module": {"kind": "dkms" if release == RUNNING else "none"},
        "headers": True,
        "initramfs": {
            "path": f"/boot/initrd.img-{release}",
            "stale": stale,
            "older_than": "/etc/modprobe.d/blacklist-nouveau-gpufleet.conf" if stale else None,
        },
    }


def after(loaded="580.95.05", packages=(), **driver):
    """Facts read after a step: FACTS, two kernels (the next boot's without a module), ``loaded`` loaded."""
    kernels = [image(RUNNING, False), image("6.8.0-51-generic", True)]
    found = {
        "loaded_version": loaded,
        "loaded_kernel_module": "open" if loaded else None,
        "kernels": kernels,
        "next_boot": {"kernel": "6.8.0-51-generic", "has_module": False, "running": False},
        "packages": [{"name": name, "version": "580.95.05-0ubuntu1", "held": False} for name in packages],
        **driver,
    }
    return {
        **FACTS,
        "host": {**FACTS["host"], "kernel_release": RUNNING},
        "driver": {**FACTS["driver"], **found},
    }


def test_the_installed_phase_gives_the_kernel_guard():
    plan = dp.decide(driver_request({"branch": "580"}), FACTS)
    facts = after()
    kernels = phase("installed", plan, facts)["kernels"]
    assert kernels == dp.kernel_guard(plan, facts)
    assert (kernels["build"], kernels["next_boot_ok"]) == (["6.8.0-51-generic"], False)


def test_the_initramfs_phase_takes_check_mode_from_its_context():
    plan = dp.decide(driver_request({"branch": "580"}), FACTS)
    facts = after()
    run = phase("initramfs", plan, facts)
    assert run == {"initramfs": dp.initramfs_rebuild(plan, facts)}
    assert run["initramfs"]["kernels"] == ["6.8.0-51-generic"]
    check = phase("initramfs", plan, facts, {"is_controller": False, "check_mode": True})
    assert check == {"initramfs": dp.initramfs_rebuild(plan, facts, check_mode=True)}
    assert check["initramfs"]["kernels"] == [RUNNING, "6.8.0-51-generic"]  # check mode lists every image


def test_the_verify_phase_checks_the_reboot_the_kernels_and_the_packages():
    plan = dp.decide(driver_request({"branch": "580"}), FACTS)
    wanted = plan["verify"]["packages"]
    facts = after(packages=wanted[1:])
    verify = phase("verify", plan, facts, {"is_controller": False, "changed": True})
    assert verify == {
        "verified": dp.reboot_after(plan, facts, changed=True, policy="auto", is_controller=False),
        "kernels": dp.kernel_guard(plan, facts),
        "missing": wanted[:1],
        "off_branch": [],
    }
    assert verify["verified"]["failure"] == ""  # not rebooted: no health check
    assert phase("verify", plan, after(packages=wanted))["missing"] == []


def test_the_verify_phase_names_nvidias_packages_left_at_another_branch():
    """Issue 38: a branch change whose packages stayed at the old branch fails verify (names alone passed)."""
    plan = dp.decide(driver_request({"branch": "580"}), FACTS)
    wanted = plan["verify"]["packages"]
    facts = after(packages=wanted)
    facts["driver"]["packages"][0]["version"] = "3:570.172.08-1.el9"
    assert phase("verify", plan, facts)["off_branch"] == [f"{wanted[0]} 3:570.172.08-1.el9"]
    assert phase("verify", plan, after(packages=wanted))["off_branch"] == []


def test_the_verify_phase_after_the_roles_reboot_is_the_health_check():
    plan = dp.decide(driver_request({"branch": "580"}), FACTS)
    facts = after(loaded=None)  # the installed module is still not the loaded one
    context = {"is_controller": False, "changed": True, "rebooted": True}
    # after the reboot nothing more is decided: the policy is never, whatever the role's variable says
    verify = phase("verify", plan, facts, context, nvidia_driver_reboot="sometimes")
    assert verify["verified"] == dp.reboot_after(plan, facts, changed=True, policy="never", rebooted=True)
    assert verify["verified"]["reboot"] is False
    assert verify["verified"]["failure"] == (
        "health check: after the reboot the installed module 580.95.05 is not loaded (loaded: none)"
    )
    with pytest.raises(dp.DriverPlanError, match=r"^nvidia_driver_reboot=sometimes "):
        phase("verify", plan, facts, {"is_controller": False}, nvidia_driver_reboot="sometimes")


def test_an_unknown_phase_is_refused():
    with pytest.raises(
        roles.PlanError, match=r"^phase=preflight \(allowed: installed, initramfs, reboot, verify\)$"
    ):
        phase("preflight", {}, FACTS)
