"""The one plan of a run (plan/driver decide): what the tasks need, per OS; the holds not in place yet."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.compat_input import (
    user_words,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.kernels import (
    hold_missing,
    versionlock_missing,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import compat_inputs

from tests.data.roles import driver_request as req


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


def test_decide_gives_names_without_version_patterns_for_tasks():
    plan = dp.decide(req({"branch": "580", "version": "580.95.05", "dcgm": True}), facts())
    assert plan["errors"] == []
    assert plan["install_packages"] == [
        "nvidia-open-580=580.95.05*",
        "nvidia-kernel-open-dkms",
        "datacenter-gpu-manager-4-core",
        "datacenter-gpu-manager-4-cuda13",
    ]
    assert plan["hold_names"] == ["nvidia-open-580", "nvidia-kernel-open-dkms"]
    assert plan["verify"] == {
        "packages": [
            "nvidia-open-580",
            "nvidia-kernel-open-dkms",
            "datacenter-gpu-manager-4-core",
            "datacenter-gpu-manager-4-cuda13",
        ],
        "check_packages": True,
        "branch": "580",
    }
    assert [s["name"] for s in plan["services"]] == ["nvidia-persistenced", "nvidia-dcgm"]
    assert all(s["state"] is None for s in plan["services"])  # nothing loaded: enabled, not started
    assert plan["versionlock_names"] == []
    assert plan["debian_source"]["needed"] is False
    assert plan["summary"].startswith(
        "driver branch 580 (open module) from nvidia_repo; loaded none, change: install"
    )


def test_hold_and_persistenced_switches():
    plan = dp.decide(req({"branch": "580", "hold": False, "persistenced": False}), facts())
    assert plan["hold_names"] == []
    assert plan["services"] == []
    loaded = dp.decide(req({"branch": "580"}), facts(loaded_version="580.95.05", loaded_kernel_module="open"))
    assert loaded["services"] == [{"name": "nvidia-persistenced", "enabled": True, "state": "started"}]


def test_rhel_versionlock_names_are_bare_and_module_reset_only_on_change():
    plan = dp.decide(req({"branch": "580", "fabricmanager": "true"}), facts("rhel10"))
    assert plan["versionlock_names"] == [
        "nvidia-open",
        "kmod-nvidia-open-dkms",
        "nvidia-fabric-manager",
        "libnvidia-nscq",
    ]
    assert plan["hold_names"] == []
    assert plan["verify"]["check_packages"] is True  # dnf too (issue 38: it could not fail there)
    stream = dp.decide(req({"branch": "580", "fabricmanager": True}), facts("rhel9"))
    assert stream["dnf_module"] == "@nvidia-driver:580-open/fm"
    assert "nvidia-fabricmanager" in [s["name"] for s in stream["services"]]
    assert stream["dnf_module_reset_needed"] is False
    installed = [{"name": "kmod-nvidia-open-dkms", "version": "570.172.08-1.el9", "held": True}]
    installed.append({"name": "nvidia-driver", "version": "3:570.172.08-1.el9", "held": True})
    change = dp.decide(req({"branch": "580"}), facts("rhel9", packages=installed))
    assert change["transition"]["kind"] == "branch_change"
    # issue 38: the streams' packages move with `dnf module switch-to`, not a reset and an install by name
    # (the names are installed: they stayed at 570 on an EL 9-shaped host)
    assert change["transition"]["switch_argv"] == [
        "dnf", "-y", "module", "switch-to", "nvidia-driver:580-open", "--allowerasing"
    ]  # fmt: skip
    assert change["dnf_module_reset_needed"] is False
    assert change["versionlock_delete"] == ["kmod-nvidia-open-dkms", "nvidia-driver"]


def test_hold_missing_leaves_out_what_dpkg_already_holds():
    plan = dp.decide(
        req({"source": "distro", "branch": "535", "kernel_module": "proprietary"}), facts("debian12")
    )
    assert "nvidia-kernel-dkms" in plan["hold_names"] and "libcuda1" in plan["hold_names"]
    assert hold_missing(plan, facts("debian12")) == plan["hold_names"]
    held = [{"name": n, "version": "535.309.01-1", "held": True} for n in plan["hold_names"]]
    assert hold_missing(plan, facts("debian12", packages=held)) == []
    held[1]["held"] = False  # installed, not held (an admin's apt-mark unhold)
    assert hold_missing(plan, facts("debian12", packages=held)) == [plan["hold_names"][1]]
    assert hold_missing({}, facts("debian12", packages=held)) == []


def test_versionlock_missing_uses_the_held_flags_of_the_facts():
    plan = dp.decide(req({"branch": "580"}), facts("rhel10"))
    after = facts("rhel10", packages=[{"name": "nvidia-open", "version": "580.95.05-1.el10", "held": True}])
    assert versionlock_missing(plan, after) == ["kmod-nvidia-open-dkms"]
    assert versionlock_missing({}, after) == []


@pytest.mark.parametrize(
    ("request_mirror", "facts_mirror", "uri"),
    [
        ("", None, "http://deb.debian.org/debian"),
        ("", "http://mirror.example/debian", "http://mirror.example/debian"),
        ("http://site.example/debian", "http://mirror.example/debian", "http://site.example/debian"),
    ],
)
def test_debian_source_mirror(request_mirror, facts_mirror, uri):
    host = facts("debian13")
    host["host"]["os"]["debian_mirror"] = facts_mirror
    plan = dp.decide(req({"branch": "550", "source": "distro", "debian_mirror": request_mirror}), host)
    assert plan["debian_source"]["uri"] == uri
    assert plan["debian_source"]["suites"] == "trixie trixie-updates"


def test_compat_inputs_from_the_facts():
    gpus = [
        {"pci_device_id": "0x2335", "subsystem_device_id": "0x18bf", "name": "NVIDIA H200"},
        {"device_id": "unknown", "compute_capability": "9.0", "name": "x"},
        {"name": "Tesla V100-SXM2-32GB", "pci_subsystem_id": "unknown"},
    ]
    assert compat_inputs({"gpus": gpus})["gpus"] == [
        {"pci_device_id": "0x2335", "pci_subsystem_id": "0x18bf"},
        {"compute_capability": "9.0"},
        {"name": "Tesla V100-SXM2-32GB"},
    ]
    assert compat_inputs({"gpus": gpus}, {"gpus": [{"name": "NVIDIA H200"}]})["gpus"] == [
        {"name": "NVIDIA H200"}
    ]
    rubin = {"pci_device_id": "0x3FFF", "pci_ids_name": "GR150 [Future Rubin]", "name": "unknown"}
    assert compat_inputs({"gpus": [rubin]})["gpus"] == [
        {"pci_device_id": "0x3FFF", "pci_ids_name": "GR150 [Future Rubin]"}
    ]
    assert compat_inputs(facts())["os_info"] == {"distribution": "Ubuntu", "version": "24.04"}
    assert compat_inputs({})["os_info"] is None
    assert user_words("cuda_version: '12.99' is unknown; set cuda_version <= 12.9") == (
        "nvidia_driver_cuda_version: '12.99' is unknown; set nvidia_driver_cuda_version <= 12.9"
    )
    assert user_words("gpus[0]: bad", gave_gpus=True) == "nvidia_driver_gpus[0]: bad"
    assert user_words("gpus[0]: bad") == "gpus[0]: bad"
    assert user_words("nvidia_driver_kernel_module: x") == "nvidia_driver_kernel_module: x"


def test_rhel10_branch_lock_runs_once_and_follows_hold():
    fresh = dp.decide(req({"branch": "580"}), facts("rhel10"))
    assert (fresh["versionlock_patterns"], fresh["versionlock_patterns_needed"]) == (["*nvidia*580*"], True)
    locked = [
        {"name": "nvidia-open", "version": "3:580.95.05-1.el10", "held": True},
        {"name": "kmod-nvidia-open-dkms", "version": "3:580.95.05-1.el10", "held": True},
    ]
    again = dp.decide(req({"branch": "580"}), facts("rhel10", packages=locked))
    assert again["transition"]["kind"] == "none"
    assert again["versionlock_patterns_needed"] is False
    assert again["versionlock_delete"] == []
    upgrade = dp.decide(req({"branch": "595"}), facts("rhel10", packages=locked))
    assert upgrade["transition"]["kind"] == "branch_change"
    assert upgrade["versionlock_delete"] == ["kmod-nvidia-open-dkms", "nvidia-open"]  # 580's locks go first
    assert (upgrade["versionlock_patterns"], upgrade["versionlock_patterns_needed"]) == (
        ["*nvidia*595*"],
        True,
    )
    unlocked = dp.decide(req({"branch": "580", "hold": False}), facts("rhel10"))
    assert (unlocked["versionlock_patterns"], unlocked["versionlock_patterns_needed"]) == ([], False)
    assert dp.decide(req({"branch": "580"}), facts("ubuntu2404"))["versionlock_delete"] == []  # apt: unhold


def test_rhel9_flavor_switch_is_module_switch_to_not_a_reset():
    installed = [{"name": "kmod-nvidia-latest-dkms", "version": "3:580.95.05-1.el9", "held": False}]
    installed.append({"name": "nvidia-driver", "version": "3:580.95.05-1.el9", "held": False})
    plan = dp.decide(req({"branch": "580", "kernel_module": "open"}), facts("rhel9", packages=installed))
    assert plan["transition"]["kind"] == "flavor_switch"
    assert plan["transition"]["switch_argv"][3:5] == ["switch-to", "nvidia-driver:580-open"]
    assert plan["dnf_module_reset_needed"] is False


# NVSwitch systems: RHEL 8/9 "dnf module install nvidia-driver:${stream}/fm" (READMEs of
# NVIDIA/yum-packaging-fabric-manager and NVIDIA/yum-packaging-libnvidia-nscq); Ubuntu/Debian from 590
# libnvidia-nscq keeps its name (guides' "Ubuntu 590 package renames": "no change"), before 590
# libnvidia-nscq-<branch> (NVIDIA/apt-packaging-libnvidia-nscq).
@pytest.mark.parametrize(
    ("os_key", "branch", "module", "fm_packages"),
    [
        ("rhel9", "580", "@nvidia-driver:580-open/fm", []),
        ("rhel9", "620", "@nvidia-driver:620-open/fm", []),
        ("rhel10", "580", None, ["nvidia-fabric-manager-580.*", "libnvidia-nscq-580.*"]),
        ("ubuntu2404", "580", None, ["nvidia-fabricmanager-580", "libnvidia-nscq-580"]),
        ("ubuntu2404", "590", None, ["nvidia-fabricmanager", "libnvidia-nscq"]),
    ],
)
def test_nvswitches_in_the_facts_bring_the_fm_profile_or_packages(os_key, branch, module, fm_packages):
    host = facts(os_key)
    host["nvswitch_count"] = 4
    plan = dp.decide(req({"branch": branch}), host)
    assert plan["dnf_module"] == module
    assert plan["fabricmanager_packages"] == fm_packages
    assert "nvidia-fabricmanager" in [s["name"] for s in plan["services"]]
    assert dp.decide(req({"branch": branch}), facts(os_key))["services"][-1]["name"] != "nvidia-fabricmanager"


def test_the_plan_says_what_each_install_task_installs():
    """Issue 37: the install tasks' names say what they download and install, in the plan's words."""
    plan = dp.decide(req({"branch": "580", "version": "580.95.05"}), facts())
    assert plan["progress"] == {
        "headers": "linux-headers-6.8.0-45-generic",
        "pin": "none",
        "module": "none",
        "packages": "nvidia-open-580=580.95.05* nvidia-kernel-open-dkms "
        "(branch 580, version 580.95.05, open module, from nvidia_repo)",
    }
    plan = dp.decide(req({"branch": "580"}), facts("rhel9"))
    assert plan["progress"]["module"] == plan["dnf_module"] == "@nvidia-driver:580-open/default"
    assert plan["progress"]["packages"].endswith(
        "(branch 580, the newest of the branch, open module, from nvidia_repo)"
    )


def test_rhel9_branch_change_left_at_the_old_branch_is_off_branch():
    """Issue 38, as seen on an EL 9-shaped host: 580 -> 590 userspace-only left nvidia-driver-cuda at 580 and
    verify passed; now the move is `dnf module switch-to` and verify names what stayed behind."""
    installed = [
        {"name": name, "version": "3:580.105.08-1.el9", "held": name != "nvidia-driver"}
        for name in ("kmod-nvidia-open-dkms", "nvidia-driver", "nvidia-driver-cuda", "nvidia-persistenced")
    ]
    request = req({"branch": "590", "build_kernel_module": False})
    plan = dp.decide(request, facts("rhel9", packages=installed))
    assert plan["transition"]["kind"] == "branch_change"
    assert plan["transition"]["switch_argv"][3:5] == ["switch-to", "nvidia-driver:590-open"]
    assert plan["verify"]["check_packages"] is True
    assert dp.off_branch(plan, facts("rhel9", packages=installed)) == [
        "nvidia-driver-cuda 3:580.105.08-1.el9",
        "nvidia-persistenced 3:580.105.08-1.el9",
    ]
    moved = [dict(p, version="3:590.48.01-1.el9") for p in installed]
    assert dp.off_branch(plan, facts("rhel9", packages=moved)) == []


def test_rhel10_userspace_packages_carry_the_branch_and_verify_checks_their_names():
    """Issue 38: on RHEL 10 (no streams) nvidia-persistenced carries the branch glob like nvidia-driver-cuda,
    so a branch change moves it too; verify checks both by name (their globs left out) and their branch."""
    plan = dp.decide(req({"branch": "590", "build_kernel_module": False}), facts("rhel10"))
    assert plan["install_packages"] == ["nvidia-driver-cuda-590.*", "nvidia-persistenced-590.*"]
    assert plan["verify"]["packages"] == ["nvidia-driver-cuda", "nvidia-persistenced"]
    left = [{"name": "nvidia-persistenced", "version": "3:580.105.08-1.el10", "held": False}]
    assert dp.off_branch(plan, facts("rhel10", packages=left)) == ["nvidia-persistenced 3:580.105.08-1.el10"]


@pytest.mark.parametrize(
    ("os_key", "branch", "version", "spec"),
    [
        ("ubuntu2404", "580", None, "=580.*"),
        ("ubuntu2404", "590", None, "=590.*"),
        ("debian12", "580", "580.105.08", "=580.105.08*"),
    ],
)
def test_apt_userspace_packages_carry_the_branch(os_key, branch, version, spec):
    """Issue 39 (molecule arm64: an Ubuntu Arm server asked for the default branch 580 got 590's userspace and
    verify refused it): in a container apt gets nvidia-driver-cuda and nvidia-persistenced at the branch (or
    version) asked, since no branch-named package or, before R590, pin package keeps apt off the repository's
    newest branch; verify and the holds name them bare."""
    asked = {"branch": branch, "build_kernel_module": False, **({"version": version} if version else {})}
    plan = dp.decide(req(asked), facts(os_key))
    assert plan["install_packages"] == [f"nvidia-driver-cuda{spec}", f"nvidia-persistenced{spec}"]
    assert {"nvidia-driver-cuda", "nvidia-persistenced"} <= set(plan["verify"]["packages"])
    assert {"nvidia-driver-cuda", "nvidia-persistenced"} <= set(plan["hold_packages"])
    assert not [p for p in plan["verify"]["packages"] + plan["hold_packages"] if "=" in p]
    assert not [w for w in plan["warnings"] if "newest driver userspace" in w]


def test_userspace_only_keeps_the_installed_kernel_module_flavor():
    """Issue 38: in a container NVIDIA's nvidia-driver pulls the open flavor's kmod (it requires nvidia-kmod);
    asked for proprietary there, `dnf module switch-to nvidia-driver:580-dkms` left kmod-nvidia-open-dkms in
    place and every run switched again. Without a module build the installed flavor is kept, with a warning
    naming the variable; where the module is built, the switch is planned as before."""
    installed = [
        {"name": name, "version": "3:580.105.08-1.el9", "held": True}
        for name in ("kmod-nvidia-open-dkms", "nvidia-driver", "nvidia-driver-cuda", "nvidia-persistenced")
    ]
    asked = {"branch": "580", "kernel_module": "proprietary", "build_kernel_module": False}
    plan = dp.decide(req(asked), facts("rhel9", packages=installed))
    assert plan["errors"] == []
    assert plan["flavor"] == "open" and plan["transition"]["kind"] == "none"
    assert plan["transition"]["switch_argv"] == []
    (words,) = [w for w in plan["warnings"] if w.startswith("nvidia_driver_kernel_module=proprietary")]
    assert "installed open flavor (kmod-nvidia-open-dkms) is kept" in words
    built = dp.decide(req(dict(asked, build_kernel_module=True)), facts("rhel9", packages=installed))
    assert built["transition"]["kind"] == "flavor_switch"
    assert built["transition"]["switch_argv"][3:5] == ["switch-to", "nvidia-driver:580-dkms"]
