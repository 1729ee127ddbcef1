"""The nvidia_driver role's plan on hosts with a driver gpufleet did not install (issue 12, Driver).

Each host is a fixture root (Ubuntu 24.04 or Debian 12 bare metal with one H200): the facts the plan wants
are gathered from it (probe/driver.py: runfile, DKMS trees and their owners, the repository of each package)
and the plan is made on the controller (plan/roles.py ``plan("nvidia_driver", ...)``, then plan/driver/). A
runfile driver, packages of another repository and a DKMS tree no package owns are refused by default, naming
the owner and the way out; the real H200 (host-managed) stays as it is. Check mode gives the same answer.
"""

from pathlib import Path

import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.request import (
    EXISTING_POLICIES,
    SOURCES,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import failure_message
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather

from tests.data.facts import fakeroot
from tests.data.roles import variables

ROOT = Path(__file__).resolve().parents[5]
LOG = """nvidia-installer log file '/var/log/nvidia-installer.log'
creation time: Mon Dec  1 08:00:00 2026
installer version: 570.86.10

nvidia-installer command line:
    ./nvidia-installer
    --silent
    --dkms

-> Installing NVIDIA driver version 570.86.10.
-> Installation of the kernel module for the NVIDIA Accelerated Graphics Driver for Linux-x86_64 (version:
   570.86.10) is now complete.
"""
# The Ubuntu archive's driver (noble-updates: the -0ubuntu0.24.04.N revisions of nvidia-graphics-drivers-580)
UBUNTU_ARCHIVE = [
    ("nvidia-driver-580", "580.95.05-0ubuntu0.24.04.2", "hold ok installed"),
    ("libnvidia-compute-580", "580.95.05-0ubuntu0.24.04.2", "install ok installed"),
    ("nvidia-dkms-580", "580.95.05-0ubuntu0.24.04.2", "install ok installed"),
    ("nvidia-kernel-source-580", "580.95.05-0ubuntu0.24.04.2", "install ok installed"),
    ("nvidia-kernel-common-580", "580.95.05-0ubuntu0.24.04.2", "install ok installed"),
    # DCGM from NVIDIA's repository next to it is fine (not the driver itself)
    ("datacenter-gpu-manager-4-core", "1:4.4.1-1", "install ok installed"),
]
# NVIDIA's CUDA repository for Ubuntu (-0ubuntu1, as the H200's cuda-compat-13-0 580.95.05-0ubuntu1)
NVIDIA_REPO = [
    ("nvidia-open-580", "580.95.05-0ubuntu1", "hold ok installed"),
    ("nvidia-kernel-open-dkms", "580.95.05-0ubuntu1", "hold ok installed"),
    ("libnvidia-compute-580", "580.95.05-0ubuntu1", "install ok installed"),
]
PPA = [
    ("nvidia-driver-580", "580.95.05-0ubuntu0~gpu24.04.1", "install ok installed"),
    ("nvidia-dkms-580", "580.95.05-0ubuntu0~gpu24.04.1", "install ok installed"),
]
OWNED_SOURCES = ["/usr/src/nvidia-580.95.05", "/usr/src/nvidia-580.95.05/dkms.conf"]


def host(tmp_path, packages=(), owner=None, os_release='ID=ubuntu\nVERSION_ID="24.04"\nNAME="Ubuntu"\n'):
    """A bare-metal host with one H200, the given dpkg packages; ``owner`` ships /usr/src/nvidia-580.95.05."""
    fakeroot.write(tmp_path, "/etc/os-release", os_release)
    fakeroot.write(tmp_path, "/proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    fakeroot.write(tmp_path, "/proc/1/cgroup", "0::/init.scope\n")
    fakeroot.write(tmp_path, "/proc/modules", "")
    dev = "/sys/bus/pci/devices/0000:00:06.0"
    for key, value in (("vendor", "0x10de"), ("device", "0x2335"), ("class", "0x030200")):
        fakeroot.write(tmp_path, f"{dev}/{key}", value + "\n")
    fakeroot.dpkg_db(
        tmp_path,
        [(name, version, status, "amd64") for name, version, status in packages],
        {owner: OWNED_SOURCES} if owner else None,
    )
    if owner:
        dkms(tmp_path, "580.95.05")
    return tmp_path


def dkms(root, version, module="nvidia"):
    fakeroot.write(root, f"/usr/src/{module}-{version}/dkms.conf", f'PACKAGE_NAME="{module}"\n')
    fakeroot.link(root, f"/var/lib/dkms/{module}/{version}/source", f"/usr/src/{module}-{version}")


def runfile(root, version="570.86.10"):
    fakeroot.write(root, "/usr/bin/nvidia-uninstall", "#!/bin/sh\n", mode=0o755)
    fakeroot.write(root, "/var/log/nvidia-installer.log", LOG.replace("570.86.10", version))


def role_plan(root, context=None, **given):
    """(plan, compat) of the nvidia_driver role on the host at ``root``: the role's defaults with branch 580,
    updated with ``given`` (the role's variables by their names); the facts gathered as the nvidia_plan action
    has nvidia_facts gather them (the subsets and MOK paths the plan wants)."""
    values = variables("nvidia_driver", **{"nvidia_driver_branch": "580", **given})
    wanted = roles.facts_wanted("nvidia_driver", values)
    facts = gather(str(root), wanted["gather_subset"], mok_paths=wanted["mok_paths"])
    return roles.plan("nvidia_driver", values, facts, context or {"is_controller": False})


def plan_of(root, **given):
    plan, compat = role_plan(root, **given)
    assert compat["errors"] == plan["errors"]  # the compat answer mirrors the plan's refusals
    return plan


# --------------------------------------------------------------------------- NVIDIA's runfile
def test_a_runfile_driver_is_refused_naming_its_version_and_the_way_out(tmp_path):
    root = host(tmp_path)
    runfile(root)
    dkms(root, "570.86.10")  # its --dkms registration: the runfile's, not a second refusal
    plan = plan_of(root)
    (error,) = plan["errors"]
    assert "NVIDIA's runfile" in error
    assert "driver 570.86.10" in error
    assert (
        "/usr/bin/nvidia-uninstall, /var/log/nvidia-installer.log, DKMS tree /usr/src/nvidia-570.86.10"
        in error
    )
    assert "nvidia_driver_replace_runfile: true" in error
    assert plan["existing"]["dkms"] == []
    replaced = plan_of(root, nvidia_driver_replace_runfile=True)
    assert replaced["errors"] == []
    assert replaced["runfile"]["remove"] is True
    assert any("will be removed with nvidia-uninstall" in w for w in replaced["warnings"])


def test_a_dkms_tree_of_another_runfile_version_is_refused_on_its_own(tmp_path):
    root = host(tmp_path)
    runfile(root, "575.57.08")
    dkms(root, "570.86.10")
    plan = plan_of(root, nvidia_driver_replace_runfile=True)
    (error,) = plan["errors"]
    assert error.startswith("DKMS tree /usr/src/nvidia-570.86.10 (module nvidia 570.86.10")
    assert "dkms remove -m nvidia -v 570.86.10 --all" in error


# --------------------------------------------------------------------------- DKMS trees
def test_an_unowned_dkms_tree_is_refused_an_owned_one_is_not(tmp_path):
    root = host(tmp_path, NVIDIA_REPO, owner="nvidia-kernel-open-dkms")
    assert plan_of(root)["errors"] == []
    dkms(root, "570.86.10")  # no package owns it (a runfile --dkms install whose uninstaller is gone)
    plan = plan_of(root)
    (error,) = plan["errors"]
    assert error == (
        "DKMS tree /usr/src/nvidia-570.86.10 (module nvidia 570.86.10, registered in "
        "/var/lib/dkms/nvidia/570.86.10) that no package owns (a runfile --dkms install, or one added by "
        "hand?): DKMS would keep building it for every kernel next to the packaged module. Remove it "
        "yourself first: dkms remove -m nvidia -v 570.86.10 --all, then move /usr/src/nvidia-570.86.10 away "
        "(gpufleet never deletes a tree it does not own)"
    )
    assert [t["source_dir"] for t in plan["existing"]["dkms"]] == ["/usr/src/nvidia-570.86.10"]
    assert "nvidia_driver_existing" not in error  # replace does not delete it: the way out is by hand
    assert plan_of(root, nvidia_driver_existing="replace")["errors"] == [error]
    # a userspace-only run builds no module: said, not refused
    userspace = plan_of(root, nvidia_driver_build_kernel_module="false")
    assert userspace["errors"] == []
    assert error in userspace["warnings"]


# --------------------------------------------------------------------------- another repository
def test_packages_from_the_ubuntu_archive_are_refused_for_nvidia_repo(tmp_path):
    root = host(tmp_path, UBUNTU_ARCHIVE, owner="nvidia-kernel-source-580")
    plan = plan_of(root)
    (error,) = plan["errors"]
    assert error.startswith(
        "nvidia_driver_existing=refuse: packages libnvidia-compute-580 580.95.05-0ubuntu0"
    )
    assert "and 2 more (the installed driver) come from the Ubuntu archive" in error
    assert "not from NVIDIA's CUDA repository (nvidia_driver_source: nvidia_repo)" in error
    assert "nvidia_driver_source: distro to keep managing this driver" in error
    assert "nvidia_driver_existing: replace to remove these packages first" in error
    assert "datacenter-gpu-manager" not in error
    foreign = {p["name"] for p in plan["existing"]["foreign"]}
    assert foreign == {
        "libnvidia-compute-580",
        "nvidia-dkms-580",
        "nvidia-driver-580",
        "nvidia-kernel-common-580",
        "nvidia-kernel-source-580",
    }
    assert {p["repository"] for p in plan["existing"]["foreign"]} == {"ubuntu_archive"}


def test_the_ubuntu_archive_driver_is_fine_for_the_distro_source(tmp_path):
    root = host(tmp_path, UBUNTU_ARCHIVE, owner="nvidia-kernel-source-580")
    plan = plan_of(root, nvidia_driver_source="distro")
    assert plan["errors"] == []
    assert plan["existing"]["foreign"] == []
    assert plan["existing"]["dkms"] == []  # the package's own DKMS tree


def test_replace_removes_the_other_repositorys_packages_first(tmp_path):
    root = host(tmp_path, UBUNTU_ARCHIVE, owner="nvidia-kernel-source-580")
    plan = plan_of(root, nvidia_driver_existing="replace")
    assert plan["errors"] == []
    assert plan["transition"]["kind"] == "source_change"
    assert set(plan["existing"]["replace"]) <= set(plan["transition"]["remove"])
    assert "nvidia-driver-580" in plan["transition"]["remove"]
    assert "datacenter-gpu-manager-4-core" not in plan["transition"]["remove"]
    assert plan["transition"]["unhold"] == ["nvidia-driver-580"]
    assert plan["touches_host"] is True
    assert any(w.startswith("nvidia_driver_existing=replace: packages ") for w in plan["warnings"])


def test_nvidia_repository_packages_are_refused_for_the_distro_source(tmp_path):
    root = host(tmp_path, NVIDIA_REPO, owner="nvidia-kernel-open-dkms")
    assert plan_of(root)["errors"] == []
    (error,) = plan_of(root, nvidia_driver_source="distro")["errors"]
    assert "come from NVIDIA's CUDA repository" in error
    assert "nvidia_driver_source: nvidia_repo to keep managing this driver" in error


def test_the_graphics_drivers_ppa_is_refused_for_both_sources(tmp_path):
    root = host(tmp_path, PPA)
    for source in SOURCES:
        (error,) = plan_of(root, nvidia_driver_source=source)["errors"]
        assert "come from the graphics-drivers PPA" in error
        assert "to keep managing" not in error  # gpufleet manages no PPA
        assert "remove them yourself through the package manager" in error


def test_debian_packages_whose_repository_cannot_be_told_are_a_warning(tmp_path):
    debian = 'ID=debian\nVERSION_ID="12"\nNAME="Debian GNU/Linux"\n'
    packages = [("nvidia-kernel-dkms", "535.261.03-1", "install ok installed")]
    root = host(tmp_path, packages, os_release=debian)
    plan = plan_of(
        root,
        nvidia_driver_source="distro",
        nvidia_driver_branch="535",
        nvidia_driver_kernel_module="proprietary",
    )
    assert plan["errors"] == []
    assert plan["existing"]["undecided"] == ["nvidia-kernel-dkms"]
    assert any("could not be told" in w and "nvidia-kernel-dkms 535.261.03-1" in w for w in plan["warnings"])
    # the list of NVIDIA's Debian repository carries this very version: from there, refused for distro
    fakeroot.write(
        root,
        "/var/lib/apt/lists/developer.download.nvidia.com_compute_cuda_repos_debian12_x86%5f64_Packages",
        "Package: nvidia-kernel-dkms\nVersion: 535.261.03-1\nArchitecture: amd64\n",
    )
    (error,) = plan_of(
        root,
        nvidia_driver_source="distro",
        nvidia_driver_branch="535",
        nvidia_driver_kernel_module="proprietary",
    )["errors"]
    assert "come from NVIDIA's CUDA repository (listed with this version in /var/lib/apt/lists/" in error


def test_a_typo_in_the_policy_names_the_variable(tmp_path):
    plan = plan_of(host(tmp_path), nvidia_driver_existing="adopt")
    assert plan["errors"] == ["nvidia_driver_existing=adopt (allowed: refuse, replace)"]


# --------------------------------------------------------------------------- the real H200 (host-managed)
def test_the_h200_stays_host_managed_with_no_refusal(tmp_path):
    fakeroot.h200(tmp_path)
    for existing in EXISTING_POLICIES:
        plan = plan_of(tmp_path, nvidia_driver_existing=existing)
        assert plan["errors"] == [], plan["errors"]
        assert plan["warnings"] == []
        assert (plan["host_managed"], plan["install"], plan["touches_host"]) == (True, False, False)
        assert plan["transition"] == {
            "kind": "none",
            "unhold": [],
            "remove": [],
            "from_branches": [],
            "switch_packages": [],
            "switch_argv": [],
        }
        assert plan["existing"] == {
            "policy": existing,
            "foreign": [],
            "undecided": [],
            "dkms": [],
            "replace": [],
        }
        assert "host-managed NVIDIA driver 580.159.04 (open kernel module)" in plan["host_managed_report"]


# --------------------------------------------------------------------------- check mode: the same answer
def plans_with_and_without_check_mode(root):
    """The plan as the nvidia_plan action makes it in a run and in a --check run (its context)."""
    return [role_plan(root, {"is_controller": False, "check_mode": check}) for check in (False, True)]


def test_check_mode_gives_the_same_refusal_and_the_same_plan(tmp_path):
    root = host(tmp_path / "root", UBUNTU_ARCHIVE, owner="nvidia-kernel-source-580")
    dkms(root, "570.86.10")
    results = plans_with_and_without_check_mode(root)
    messages = []
    for _plan, compat in results:
        assert compat["compatible"] is False
        messages.append(failure_message("nvidia_driver", compat["errors"]))  # what the action fails with
        assert "nvidia_driver_existing=refuse: packages " in messages[-1]
        assert "DKMS tree /usr/src/nvidia-570.86.10 " in messages[-1]
    assert messages[0] == messages[1]
    assert results[0][0]["existing"] == results[1][0]["existing"]


def test_check_mode_on_the_h200_plans_the_same(tmp_path):
    fakeroot.h200(tmp_path / "root")
    results = plans_with_and_without_check_mode(tmp_path / "root")
    for plan, compat in results:
        assert compat["errors"] == [], compat["errors"]
        assert plan["host_managed"] is True
    assert results[0] == results[1]


def test_the_policies_are_the_role_option_and_its_default():
    assert EXISTING_POLICIES == ("refuse", "replace")
    specs = yaml.safe_load((ROOT / "roles/nvidia_driver/meta/argument_specs.yml").read_text())
    option = specs["argument_specs"]["main"]["options"]["nvidia_driver_existing"]
    assert (option["type"], tuple(option["choices"])) == ("str", EXISTING_POLICIES)
    assert variables("nvidia_driver")["nvidia_driver_existing"] == "refuse"
