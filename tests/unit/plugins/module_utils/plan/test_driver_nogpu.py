"""A host without an NVIDIA GPU (plan/driver/nogpu.py, issue 37): a login node of a GPU cluster gets no driver
unless nvidia_driver_install_without_gpu asks for it, and a driver already there is left as it is."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles

from tests.data.roles import driver_request as req
from tests.data.roles import variables

H200 = {"pci_device_id": "0x2335", "device_id": "0x2335", "compute_capability": "9.0", "name": "NVIDIA H200"}
NOTHING = (
    "no NVIDIA GPU on this host: the driver is not installed (set nvidia_driver_install_without_gpu: true to "
    "install it anyway, for image builds or a GPU not visible yet)"
)


def facts(gpus=(), probe="ok", **driver):
    """A bare-metal Ubuntu 24.04 host (a login node) whose gpu probe ran and found ``gpus``."""
    base = {"loaded_version": None, "module_for_running_kernel": {}, "packages": [], "runfile_markers": []}
    base.update(driver)
    return {
        "host": {
            "os": {"distribution": "Ubuntu", "version": "24.04", "key": "ubuntu2404"},
            "kernel_release": "6.8.0-45-generic",
            "container": "none",
        },
        "driver": base,
        "gpus": list(gpus),
        "gpu_count": len(gpus),
        "probes": {"gpu": {"state": probe}},
        "nvswitch_count": 0,
    }


def test_a_host_without_a_gpu_gets_no_driver_by_default():
    """The bug: the defaults planned nvidia-open-580 and nvidia-kernel-open-dkms on a login node."""
    plan = dp.decide(req(), facts())
    assert plan["install"] is False
    assert plan["host_managed"] is False
    assert plan["no_gpu"] is True
    assert plan["touches_host"] is False
    assert plan["errors"] == [] and plan["warnings"] == []
    assert plan["summary"] == NOTHING
    assert "install_packages" not in plan and "transition" not in plan


def test_install_without_gpu_plans_the_driver_as_on_a_gpu_host():
    plan = dp.decide(req(install_without_gpu=True), facts())
    assert plan["install"] is True
    assert plan.get("no_gpu") is None
    assert plan["install_packages"] == ["nvidia-open-580", "nvidia-kernel-open-dkms"]
    assert plan["summary"].startswith("driver branch 580 (open module) from nvidia_repo; loaded none")


def test_a_gpu_host_is_planned_whatever_install_without_gpu_says():
    for anyway in (False, True):
        plan = dp.decide(req(install_without_gpu=anyway), facts(gpus=[H200]))
        assert plan["install"] is True
        assert plan["install_packages"][0] == "nvidia-open-580"


@pytest.mark.parametrize("probe", ["skipped", "unknown"])
def test_facts_that_cannot_tell_count_as_a_gpu(probe):
    """A gpu probe that was skipped or failed says nothing about the GPUs: planned as on a GPU host."""
    assert dp.decide(req(), facts(probe=probe))["install"] is True
    no_list = facts()
    del no_list["gpus"]
    assert dp.decide(req(), no_list)["install"] is True


def test_a_driver_already_there_is_left_as_it_is_and_said_so():
    installed = facts(
        packages=[
            {"name": "nvidia-open-580", "version": "580.95.05-1ubuntu1", "held": True},
            {"name": "nvidia-kernel-open-dkms", "version": "580.95.05-1ubuntu1", "held": True},
        ],
        module_for_running_kernel={"version": "580.95.05", "kernel_module": "open"},
    )
    plan = dp.decide(req(), installed)
    assert plan["install"] is False
    assert plan["errors"] == []
    assert plan["summary"] == (
        "no NVIDIA GPU on this host: the NVIDIA driver installed here (branch 580 packages nvidia-open-580 "
        "580.95.05-1ubuntu1, nvidia-kernel-open-dkms 580.95.05-1ubuntu1; module 580.95.05 for the running "
        "kernel) is left as it is, nothing installed, changed or removed (set "
        "nvidia_driver_install_without_gpu: true to manage it anyway, for image builds or a GPU not "
        "visible yet)"
    )


def test_nothing_about_the_host_is_refused_where_nothing_is_planned():
    """An OS the driver role does not support, a branch its source lacks, auto reboot on the controller: a
    GPU-less host is left alone, so none of them stops it (they are refused where the plan installs)."""
    fedora = facts()
    fedora["host"]["os"] = {"distribution": "Fedora", "version": "41", "key": None}
    assert dp.decide(req(), fedora)["errors"] == []
    assert dp.decide(req(branch="575", is_controller=True), facts())["errors"] == []
    assert dp.decide(req(install_without_gpu=True), fedora)["errors"]


def test_a_host_managed_driver_is_verified_with_or_without_a_gpu_list():
    managed = facts(loaded_version="580.159.04", loaded_kernel_module="open")
    managed["host"].update(container="docker", driver_managed_externally=True)
    plan = dp.decide(req(), managed)
    assert plan["host_managed"] is True
    assert plan.get("no_gpu") is None
    assert dp.decide(req(branch="570"), managed)["errors"]


def test_the_roles_plan_on_a_login_node_checks_nothing_and_says_why():
    """nvidia_plan's plan of the role (plan/roles.py): no compat check, no repository, the report line."""
    variables_ = variables("nvidia_driver")
    plan, compat = roles.plan("nvidia_driver", variables_, facts(), {"is_controller": True})
    assert plan["install"] is False
    assert compat["checked"] == [] and compat["errors"] == []
    assert plan["repo"] == {}
    assert roles.driver_target(plan) is None  # CUDA and cuDNN are checked against the driver loaded now
    lines = roles.report_lines(["nvidia_driver"], {"nvidia_driver": plan}, {"nvidia_driver": compat}, {})
    assert lines == ["OK: GPUs none; 0 error(s), 0 warning(s)", f"nvidia_driver: {NOTHING}"]
    anyway = dict(variables_, nvidia_driver_install_without_gpu=True, nvidia_driver_reboot="never")
    plan, compat = roles.plan("nvidia_driver", anyway, facts(), {"is_controller": True})
    assert plan["install"] is True and compat["checked"] == ["driver"]
