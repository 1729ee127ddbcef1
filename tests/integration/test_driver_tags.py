"""Every documented tag of nvidia_driver runs its phase's tasks (and the preflight, whose plan they need).

playbooks/driver.yml in check mode against this machine with a synthetic facts input
(__nvidia_driver_facts_input: a Debian 12 container without a driver, distro source), so nothing is read
from or written to the host's driver and no GPU is needed. In check mode a package source the run adds
cannot be resolved and units of packages not yet installed do not exist: the internal flags saying so
(__nvidia_driver_sources_changed, __nvidia_driver_changed) are set as the earlier phases set them in a
whole run, so each phase runs alone as it runs inside the whole role.

Run: .venv/bin/pytest tests/integration/test_driver_tags.py
"""

import pytest

from tests import playbook

ROOT = playbook.ROOT
DRIVER = ROOT / "playbooks/driver.yml"
DEBIAN_CONTAINER = {
    "schema_version": 1,
    "root": "/",
    "host": {
        "os": {"distribution": "Debian", "version": "12", "key": "debian12"},
        "kernel_release": "6.1.0-37-amd64",
        "container": "docker",
        "driver_managed_externally": None,
        "driver_managed_externally_reason": "",
    },
    "driver": {
        "loaded_version": None,
        "loaded_kernel_module": None,
        "module_for_running_kernel": {"version": None, "kernel_module": None},
        "packages": [],
        "runfile_markers": [],
        "secure_boot": "unknown",
        "install_method": "none",
    },
    "gpus": [],
    "gpu_count": 0,
    "nvswitch_count": 0,
}
EXTRA_VARS = {
    "gpufleet_driver_hosts": "localhost",
    "ansible_become": False,
    "nvidia_driver_source": "distro",
    "nvidia_driver_branch": "535",
    # this machine is the controller: auto (the default) is refused there before any change
    "nvidia_driver_reboot": "never",
    # the container has no GPU: the driver is installed anyway (as in molecule driver); else nothing is
    # planned
    "nvidia_driver_install_without_gpu": True,
    "__nvidia_driver_facts_input": DEBIAN_CONTAINER,
    "__nvidia_driver_sources_changed": True,
    "__nvidia_driver_changed": True,
}
PREFLIGHT = [
    "Preflight | Plan the driver (variables, the host's facts with its MOK files, compatibility; no network)",
    "Preflight | Load OS data",
]
PHASES = {
    "nvidia_driver_preflight": ("Preflight", ["Preflight | Report the plan"]),
    "nvidia_driver_sources": (
        "Sources",
        [
            "Sources | Debian contrib, non-free and non-free-firmware (deb822)",
            "Sources | Remember whether a package source was added",
        ],
    ),
    "nvidia_driver_install": (
        "Install",
        [
            "Install | Check mode cannot resolve packages from a source it has not really added",
            "Install | Remember whether the driver changed",
            "Install | What the installed driver needs (kernels to build for, holds and locks missing)",
        ],
    ),
    "nvidia_driver_configure": (
        "Configure",
        ["Configure | Blacklist nouveau", "Configure | nvidia module options"],
    ),
    "nvidia_driver_reboot": (
        "Reboot",
        [
            "Reboot | Decide from the host's facts now",
            "Reboot | Report the decision",
        ],
    ),
    "nvidia_driver_verify": (
        "Verify",
        [
            "Verify | What the facts now say of the plan (after the role's reboot, the health check)",
            "Verify | Report a module that cannot be loaded here",
        ],
    ),
}


def tasks_that_ran(run):
    """Task names without the role prefix ("gpufleet.nvidia.nvidia_driver : ")."""
    return [name.rpartition(" : ")[2] for name in run.tasks("localhost")]


def phases_that_ran(run):
    return {name.split(" | ")[0] for name in tasks_that_ran(run) if " | " in name}


@pytest.mark.parametrize("tag", sorted(PHASES))
def test_a_tag_runs_its_phase_and_the_preflight(tmp_path, tag):
    phase, tasks = PHASES[tag]
    run = playbook.run(tmp_path, DRIVER, EXTRA_VARS, tags=tag, check=True, timeout=120)
    assert run.rc == 0, run.text[-3000:]
    ran = tasks_that_ran(run)
    for name in PREFLIGHT + tasks:
        assert name in ran, (name, ran)
    assert phases_that_ran(run) == {"Preflight", phase}, ran


def test_the_role_tag_runs_every_phase(tmp_path):
    run = playbook.run(tmp_path, DRIVER, EXTRA_VARS, tags="nvidia_driver", check=True, timeout=120)
    assert run.rc == 0, run.text[-3000:]
    assert phases_that_ran(run) == {"Preflight", "Sources", "Install", "Configure", "Reboot", "Verify"}
    assert "driver branch 535 (" in run.text
    assert "module) from distro; loaded none, change: install" in run.text


def test_a_host_without_a_gpu_gets_no_driver_and_is_told_why(tmp_path):
    """Issue 37: driver.yml in check mode on a GPU-less host (a login node) planned the driver's packages;
    now the plan installs nothing, the summary says why, and no phase after the preflight runs."""
    extra = {k: v for k, v in EXTRA_VARS.items() if k != "nvidia_driver_install_without_gpu"}
    run = playbook.run(tmp_path, DRIVER, extra, check=True, timeout=120)
    assert run.rc == 0, run.text[-3000:]
    assert "localhost: no NVIDIA GPU on this host: the driver is not installed (set " in run.text, run.text
    assert "nvidia_driver_install_without_gpu: true to install it anyway" in run.text
    assert "change: install" not in run.text
    assert phases_that_ran(run) == {"Preflight"}, tasks_that_ran(run)
    assert "Preflight | Load OS data" not in tasks_that_ran(run)


def test_a_host_the_role_is_disabled_for_is_left_alone(tmp_path):
    """Issue 37: nvidia_driver_enabled false (a login node's group_vars): the plan says so, no facts are
    read, no phase after the preflight runs, whatever the other variables say."""
    extra = dict(EXTRA_VARS, nvidia_driver_enabled=False, nvidia_driver_source="runfile")
    run = playbook.run(tmp_path, DRIVER, extra, check=True, timeout=120)
    assert run.rc != 0, run.text[-3000:]  # a choice the spec refuses: Ansible checks it at the role's entry
    extra = dict(EXTRA_VARS, nvidia_driver_enabled=False, nvidia_driver_branch="58O")
    run = playbook.run(tmp_path, DRIVER, extra, check=True, timeout=120)
    assert run.rc == 0, run.text[-3000:]
    assert "localhost: disabled by nvidia_driver_enabled: false (nothing planned" in run.text, run.text
    assert phases_that_ran(run) == {"Preflight"}, tasks_that_ran(run)
