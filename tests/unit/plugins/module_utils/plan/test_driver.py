"""Unit tests of the driver plan: every OS x source x branch x flavor, refusals, reboot, host-managed."""

import itertools

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver as kb_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import driver as probe_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import host as probe_host

OSES = sorted(kb_hosts.OS_TABLE)
UBUNTU_KERNEL = "6.8.0-45-generic"
CUSTOM_KERNEL = "6.18.44-fc-v595"
H200_PROC_VERSION = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n"
    "GCC version:  gcc version 15.3.0 (GCC) \n"
)
PROPRIETARY_PROC_VERSION = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)


def all_combinations():
    for os_name, source in itertools.product(OSES, dp.SOURCES):
        for branch in dp.available_branches(os_name, source):
            for flavor in ("open", "proprietary"):
                if flavor == "open" and branch < kb_driver.OPEN_MODULES_FIRST_BRANCH:
                    continue
                if flavor == "proprietary" and branch >= kb_driver.PROPRIETARY_REMOVED_FROM[0]:
                    continue  # refused (test_proprietary_from_r620_is_refused_even_without_the_compat_check)
                yield os_name, source, branch, flavor


COMBOS = list(all_combinations())


def test_every_os_has_nvidia_repo_branches_and_the_matrix_is_large():
    for os_name in OSES:
        assert 580 in dp.available_branches(os_name, "nvidia_repo")
    assert dp.available_branches("rhel9", "distro") == []
    assert len(COMBOS) > 150


@pytest.mark.parametrize(("os_name", "source", "branch", "flavor"), COMBOS)
@pytest.mark.parametrize("kernel", [UBUNTU_KERNEL, CUSTOM_KERNEL])
def test_plan_invariants(os_name, source, branch, flavor, kernel):
    plan = dp.build_plan(os_name, source, str(branch), flavor, kernel_release=kernel)
    assert plan["branch"] == str(branch)
    assert plan["flavor"] == flavor
    assert plan["pkg_mgr"] == ("dnf" if os_name.startswith("rhel") else "apt")
    installs_something = plan["packages"] or plan["dnf_module"]
    assert installs_something
    assert plan["kernel_build"] in ("dkms", "precompiled")
    names = " ".join(
        plan["packages"] + plan["kernel_packages"] + plan["pin_packages"] + [plan["dnf_module"] or ""]
    )
    # the branch is named somewhere (package, pin or stream), except Debian's one-branch archive
    if not (source == "distro" and os_name.startswith("debian")) and not (
        branch >= 590 and os_name == "rhel10"
    ):
        assert str(branch) in names
    # the other flavor is never installed
    for other in plan["other_flavor_packages"]:
        assert other not in plan["packages"] + plan["kernel_packages"]
    if plan["kernel_build"] == "dkms":
        assert plan["header_packages"]
        assert plan["module_signing_needed_with_secure_boot"] is True
    else:
        assert plan["header_packages"] == []
    if plan["pkg_mgr"] == "apt":
        assert plan["hold_packages"]
        assert all("=" not in p for p in plan["hold_packages"])
    assert plan["initramfs_command"][0] == ("dracut" if os_name.startswith("rhel") else "update-initramfs")


@pytest.mark.parametrize(("os_name", "source", "branch", "flavor"), COMBOS)
def test_userspace_only_plan_builds_no_module(os_name, source, branch, flavor):
    plan = dp.build_plan(
        os_name, source, branch, flavor, kernel_release=CUSTOM_KERNEL, build_kernel_module=False
    )
    assert plan["kernel_packages"] == []
    assert plan["header_packages"] == []
    assert plan["dnf_module"] is None
    assert plan["packages"]
    assert plan["module_signing_needed_with_secure_boot"] is False
    assert not any(
        p.endswith("-dkms") or p.startswith(("nvidia-dkms", "linux-modules")) for p in plan["packages"]
    )


APT_CASES = [
    # os, branch, flavor, pin packages, (packages, kernel packages)
    ("ubuntu2404", 580, "open", [], (["nvidia-open-580"], ["nvidia-kernel-open-dkms"])),
    ("ubuntu2404", 580, "proprietary", [], (["cuda-drivers-580"], ["nvidia-kernel-dkms"])),
    ("ubuntu2204", 535, "proprietary", [], (["cuda-drivers-535"], ["nvidia-kernel-dkms"])),
    ("debian12", 570, "open", [], (["nvidia-open-570"], ["nvidia-kernel-open-dkms"])),
    (
        "ubuntu2404",
        590,
        "open",
        ["nvidia-driver-pinning-590"],
        (["nvidia-open"], ["nvidia-kernel-open-dkms"]),
    ),
    (
        "debian13",
        595,
        "proprietary",
        ["nvidia-driver-pinning-595"],
        (["cuda-drivers"], ["nvidia-kernel-dkms"]),
    ),
    (
        "ubuntu2204",
        620,
        "open",
        ["nvidia-driver-pinning-620"],
        (["nvidia-open"], ["nvidia-kernel-open-dkms"]),
    ),
]


@pytest.mark.parametrize(("os_name", "branch", "flavor", "pins", "expected"), APT_CASES)
def test_nvidia_apt_names(os_name, branch, flavor, pins, expected):
    packages, kernel = expected
    plan = dp.build_plan(os_name, "nvidia_repo", branch, flavor, kernel_release=UBUNTU_KERNEL)
    assert plan["pin_packages"] == pins
    assert plan["packages"] == packages
    assert plan["kernel_packages"] == kernel
    assert plan["hold_packages"] == pins + packages + kernel


def test_nvidia_apt_exact_version_pins_apt_wildcards():
    plan = dp.build_plan("ubuntu2404", "nvidia_repo", "580", "open", version="580.95.05")
    assert plan["packages"] == ["nvidia-open-580=580.95.05*"]
    assert plan["hold_packages"][0] == "nvidia-open-580"
    plan = dp.build_plan("ubuntu2404", "nvidia_repo", "595", "open", version="595.45.04")
    assert plan["pin_packages"] == ["nvidia-driver-pinning-595=595.45.04*"]


@pytest.mark.parametrize(
    ("os_name", "flavor", "module"),
    [
        ("rhel8", "open", "@nvidia-driver:580-open/default"),
        ("rhel8", "proprietary", "@nvidia-driver:580-dkms/default"),
        ("rhel9", "open", "@nvidia-driver:580-open/default"),
        ("rhel9", "proprietary", "@nvidia-driver:580-dkms/default"),
    ],
)
def test_rhel_module_streams(os_name, flavor, module):
    plan = dp.build_plan(os_name, "nvidia_repo", "580", flavor, kernel_release="5.14.0-427.13.1.el9_4.x86_64")
    assert plan["dnf_module"] == module
    assert plan["dnf_module_reset"] == "nvidia-driver"
    assert plan["versionlock"] is False
    assert plan["header_packages"] == [
        "kernel-devel-5.14.0-427.13.1.el9_4.x86_64",
        "kernel-headers-5.14.0-427.13.1.el9_4.x86_64",
    ]
    fm = dp.build_plan(os_name, "nvidia_repo", "580", flavor, fabricmanager=True)
    assert fm["dnf_module"].endswith("/fm")


@pytest.mark.parametrize(
    ("flavor", "packages", "kernel"),
    [
        ("open", ["nvidia-open-580.*"], ["kmod-nvidia-open-dkms"]),
        ("proprietary", ["cuda-drivers-580.*"], ["kmod-nvidia-latest-dkms"]),
    ],
)
def test_rhel10_plain_packages_and_versionlock(flavor, packages, kernel):
    plan = dp.build_plan("rhel10", "nvidia_repo", "580", flavor)
    assert plan["dnf_module"] is None
    assert plan["packages"] == packages
    assert plan["kernel_packages"] == kernel
    assert plan["versionlock"] is True
    exact = dp.build_plan("rhel10", "nvidia_repo", "580", flavor, version="580.95.05")
    assert exact["packages"] == [packages[0].replace("580.*", "580.95.05")]


UBUNTU_CASES = [
    # server, flavor, kernel release, (packages, kernel packages, kernel build)
    (
        True,
        "open",
        UBUNTU_KERNEL,
        (
            ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server"],
            ["linux-modules-nvidia-580-server-open-6.8.0-45-generic"],
            "precompiled",
        ),
    ),
    (
        False,
        "proprietary",
        UBUNTU_KERNEL,
        (
            ["nvidia-headless-no-dkms-580", "nvidia-utils-580"],
            ["linux-modules-nvidia-580-6.8.0-45-generic"],
            "precompiled",
        ),
    ),
    (
        True,
        "open",
        CUSTOM_KERNEL,
        (
            ["nvidia-headless-no-dkms-580-server-open", "nvidia-utils-580-server"],
            ["nvidia-dkms-580-server-open"],
            "dkms",
        ),
    ),
    (
        False,
        "open",
        "5.15.0-1050-aws",
        (
            ["nvidia-headless-no-dkms-580-open", "nvidia-utils-580"],
            ["linux-modules-nvidia-580-open-5.15.0-1050-aws"],
            "precompiled",
        ),
    ),
]


@pytest.mark.parametrize(("server", "flavor", "kernel", "expected"), UBUNTU_CASES)
def test_ubuntu_archive(server, flavor, kernel, expected):
    packages, kernel_packages, build = expected
    plan = dp.build_plan("ubuntu2404", "distro", "580", flavor, kernel_release=kernel, ubuntu_server=server)
    assert plan["packages"] == packages
    assert plan["kernel_packages"] == kernel_packages
    assert plan["kernel_build"] == build
    assert plan["module_signing_needed_with_secure_boot"] is (build == "dkms")
    if build == "dkms":
        assert plan["header_packages"] == [f"linux-headers-{kernel}"]
        assert any("not an Ubuntu kernel" in w for w in plan["warnings"])


@pytest.mark.parametrize(("os_name", "branch"), [("debian12", "535"), ("debian13", "550")])
@pytest.mark.parametrize(
    ("flavor", "module_pkg"), [("open", "nvidia-open-kernel-dkms"), ("proprietary", "nvidia-kernel-dkms")]
)
def test_debian_archive(os_name, branch, flavor, module_pkg):
    plan = dp.build_plan(os_name, "distro", branch, flavor, kernel_release="6.1.0-37-amd64")
    assert plan["debian_components"] == ["main", "contrib", "non-free", "non-free-firmware"]
    assert "nvidia-smi" in plan["packages"]
    assert "nvidia-persistenced" in plan["packages"]
    assert "firmware-nvidia-gsp" in plan["packages"]
    assert plan["kernel_packages"] == [module_pkg]
    assert plan["header_packages"] == ["linux-headers-6.1.0-37-amd64"]
    assert module_pkg in plan["hold_packages"]
    fm = dp.build_plan(os_name, "distro", branch, flavor, fabricmanager=True)
    assert fm["fabricmanager_packages"] == []
    assert any("fabric manager" in w for w in fm["warnings"])


@pytest.mark.parametrize(
    ("os_name", "source", "branch", "expected"),
    [
        ("ubuntu2404", "nvidia_repo", 580, ["nvidia-fabricmanager-580", "libnvidia-nscq-580"]),
        ("ubuntu2404", "nvidia_repo", 595, ["nvidia-fabricmanager", "libnvidia-nscq"]),
        ("ubuntu2204", "distro", 570, ["nvidia-fabricmanager-570", "libnvidia-nscq-570"]),
        ("rhel10", "nvidia_repo", 580, ["nvidia-fabric-manager-580.*", "libnvidia-nscq-580.*"]),
    ],
)
def test_fabricmanager_per_branch(os_name, source, branch, expected):
    plan = dp.build_plan(os_name, source, branch, "open", fabricmanager=True)
    assert plan["fabricmanager_packages"] == expected
    if plan["pkg_mgr"] == "apt":
        assert expected[0] in plan["hold_packages"]


def test_dcgm_follows_cuda_major_of_branch():
    assert dp.build_plan("ubuntu2404", "nvidia_repo", 580, "open", dcgm=True)["dcgm_packages"][1].endswith(
        "cuda13"
    )
    assert dp.build_plan("ubuntu2404", "nvidia_repo", 570, "open", dcgm=True)["dcgm_packages"][1].endswith(
        "cuda12"
    )


@pytest.mark.parametrize(
    ("dist", "ver", "key"),
    [
        ("Ubuntu", "22.04", "ubuntu2204"),
        ("Ubuntu", "24.04", "ubuntu2404"),
        ("Debian", "12", "debian12"),
        ("Debian", "13", "debian13"),
        ("RedHat", "8", "rhel8"),
        ("Rocky", "9", "rhel9"),
        ("AlmaLinux", "10", "rhel10"),
    ],
)
def test_os_key(dist, ver, key):
    assert kb_hosts.os_key(dist, ver) == key


@pytest.mark.parametrize(("dist", "ver"), [("Ubuntu", "20.04"), ("Debian", "11"), ("Fedora", "42"), ("", "")])
def test_os_key_refuses_unsupported(dist, ver):
    assert kb_hosts.os_key(dist, ver) is None
    facts = {"host": {"os": {"distribution": dist, "version": ver, "key": None}}}
    errors = dp.decide({"branch": "580"}, facts)["errors"]
    assert len(errors) == 1
    assert "not supported" in errors[0]


# --------------------------------------------------------------------------- validation (bad input)
def errors_for(**kw):
    args = {"os_name": "ubuntu2404", "source": "nvidia_repo", "branch": "580"}
    args.update(kw)
    return dp.validate_request(**args)


def test_valid_request_has_no_errors():
    assert errors_for() == []
    assert errors_for(branch="R580", version="580.95.05", kernel_module="open", reboot="never") == []


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"branch": "58O"}, "nvidia_driver_branch: '58O' is not a valid version"),
        ({"branch": "581"}, "nvidia_driver_branch: '581' is not a driver branch nvidia_repo packages"),
        ({"branch": "580.95"}, "nvidia_driver_branch"),
        ({"branch": ""}, "nvidia_driver_branch"),
        (
            {"reboot": "sometimes"},
            "nvidia_driver_reboot: 'sometimes' is not allowed; allowed: auto, never, always",
        ),
        ({"kernel_module": "opne"}, "nvidia_driver_kernel_module: 'opne' is not allowed"),
        ({"source": "runfile"}, "nvidia_driver_source: 'runfile' is not allowed"),
        ({"version": "575.57.08"}, "nvidia_driver_version: '575.57.08' is not in nvidia_driver_branch '580'"),
        ({"version": "latest"}, "nvidia_driver_version: 'latest' is not a valid version"),
        (
            {
                "mok_key": "/nope/MOK.priv",
                "mok_cert": "/etc/MOK.der",
                "mok_paths_exist": {"/etc/MOK.der": True},
            },
            "nvidia_driver_mok_key: '/nope/MOK.priv' does not exist",
        ),
        ({"mok_key": "/etc/MOK.priv", "mok_paths_exist": {"/etc/MOK.priv": True}}, "give both"),
        ({"os_name": "debian12", "source": "distro", "branch": "580"}, "Debian ships one branch per release"),
        ({"os_name": "rhel9", "source": "distro", "branch": "580"}, "RHEL has no distribution driver"),
        ({"os_name": "rhel8", "branch": "470", "kernel_module": "open"}, "'open' needs branch >= 515"),
    ],
)
def test_bad_input_is_refused_with_the_variable_named(kw, needle):
    errors = errors_for(**kw)
    assert errors, kw
    assert any(needle in e for e in errors), errors
    assert all("\n" not in e for e in errors)


def test_build_plan_refuses_what_validation_refuses():
    with pytest.raises(dp.DriverPlanError, match="not a valid version"):
        dp.build_plan("ubuntu2404", "nvidia_repo", "58O", "open")
    with pytest.raises(dp.DriverPlanError, match="available"):
        dp.build_plan("ubuntu2404", "nvidia_repo", "581", "open")
    with pytest.raises(dp.DriverPlanError, match="resolved"):
        dp.build_plan("ubuntu2404", "nvidia_repo", "580", "auto")
    with pytest.raises(dp.DriverPlanError):
        dp.build_plan("rhel9", "distro", "580", "open")


# --------------------------------------------------------------------------- flavor
@pytest.mark.parametrize(
    ("requested", "branch", "recommended", "expected"),
    [
        ("auto", 580, None, "open"),
        ("auto", 560, None, "open"),
        ("auto", 550, None, "proprietary"),
        ("auto", 580, "proprietary", "proprietary"),  # Pascal host: nvidia_compat recommends proprietary
        ("auto", 535, "open", "open"),
        ("open", 580, "proprietary", "open"),  # explicit choice kept; nvidia_compat refuses it for Pascal
        ("proprietary", 580, None, "proprietary"),
    ],
)
def test_resolve_flavor(requested, branch, recommended, expected):
    assert dp.resolve_flavor(requested, branch, recommended) == expected


# --------------------------------------------------------------------------- kernel strings
# The kernel's strings have one reader, probe/driver.py (these assertions moved with the readers).
def test_parse_proc_version_open_h200():
    assert probe_driver.parse_proc_version(H200_PROC_VERSION) == {
        "version": "580.159.04",
        "kernel_module": "open",
    }


def test_parse_proc_version_proprietary_and_garbage():
    assert probe_driver.parse_proc_version(PROPRIETARY_PROC_VERSION) == {
        "version": "535.104.05",
        "kernel_module": "proprietary",
    }
    assert probe_driver.parse_proc_version("") is None
    assert probe_driver.parse_proc_version(None) is None


@pytest.mark.parametrize(
    ("lic", "flavor"), [("Dual MIT/GPL", "open"), ("NVIDIA", "proprietary"), ("", None), ("weird", None)]
)
def test_flavor_from_license(lic, flavor):
    assert probe_driver.flavor_from_license(lic) == flavor


def test_branch_of():
    assert dp.branch_of("580.159.04") == "580"
    assert dp.branch_of(None) is None
    assert dp.branch_of("x") is None


# --------------------------------------------------------------------------- host-managed
# THE definition is probe/host.py's driver_managed_externally (the plan reads it from the facts); the
# assertions of the installer's former definition, on the one left.
def test_h200_is_host_managed():
    managed, reason = probe_host.driver_managed_externally(
        "docker",
        "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
        "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
        None,
        readonly=True,
    )
    assert managed is True
    assert "container" in reason
    assert "/usr/local/nvidia" in reason


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (("none", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "libnvidia-compute-580", False), False),
        (("docker", None, None, False), False),  # empty container: installable userspace
        (("none", "/usr/lib/libnvidia-ml.so.1", None, False), False),  # runfile on bare metal
        (("none", "/usr/local/nvidia/lib64/libnvidia-ml.so.1", None, True), True),
        (("docker", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", None, False), True),  # toolkit-injected
        (("docker", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "libnvidia-compute-580", False), False),
    ],
)
def test_host_managed_matrix(case, expected):
    container, path, owner, readonly = case
    managed, _ = probe_host.driver_managed_externally(container, path, path, owner, readonly=readonly)
    assert bool(managed) is expected


def test_host_managed_mismatch_570_on_h200_is_refused_clearly():
    errors = dp.host_managed_mismatch("570", "auto", None, "580.159.04", "open")
    assert len(errors) == 1
    assert "nvidia_driver_branch: '570'" in errors[0]
    assert "580.159.04" in errors[0]
    assert "host-managed" in errors[0]
    assert dp.host_managed_mismatch("580", "auto", None, "580.159.04", "open") == []
    assert dp.host_managed_mismatch("R580", "open", "580.159.04", "580.159.04", "open") == []
    assert "proprietary" in dp.host_managed_mismatch("580", "proprietary", None, "580.159.04", "open")[0]
    assert (
        "nvidia_driver_version"
        in dp.host_managed_mismatch("580", "auto", "580.95.05", "580.159.04", "open")[0]
    )
    assert "no driver is loaded" in dp.host_managed_mismatch("580", "auto", None, None, None)[0]


# --------------------------------------------------------------------------- runfile
def test_runfile_conflict():
    markers = ["/usr/bin/nvidia-uninstall"]
    conflict, msg = dp.runfile_conflict(markers, nvml_owned_by_package=False, replace_runfile=False)
    assert conflict is True
    assert "nvidia_driver_replace_runfile: true" in msg
    conflict, msg = dp.runfile_conflict(markers, nvml_owned_by_package=False, replace_runfile=True)
    assert conflict is False
    assert "nvidia-uninstall" in msg
    assert dp.runfile_conflict([], False, False) == (False, "")
    assert dp.runfile_conflict(markers, True, False) == (False, "")


# --------------------------------------------------------------------------- reboot
def decide(policy="auto", loaded="580.95.05", lflav="open", inst="580.95.05", iflav="open", **kw):
    return dp.reboot_decision(policy, loaded, lflav, inst, iflav, **kw)


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
    with pytest.raises(dp.DriverPlanError, match="nvidia_driver_reboot: 'alwasy'"):
        decide(policy="alwasy")


# --------------------------------------------------------------------------- transitions
def test_transition_fresh_install():
    plan = dp.build_plan("ubuntu2404", "nvidia_repo", "580", "open")
    assert dp.transition(plan, {}, [], [])["kind"] == "install"


def test_transition_same_driver_is_none():
    plan = dp.build_plan("ubuntu2404", "nvidia_repo", "580", "open")
    t = dp.transition(plan, {"nvidia-open-580": "580.95.05-1"}, ["580"], ["nvidia-open-580"])
    assert t == {
        "kind": "none",
        "unhold": [],
        "remove": [],
        "from_branches": ["580"],
        "switch_packages": [],
        "switch_argv": [],
    }


def test_transition_branch_upgrade_570_to_580_releases_holds():
    plan = dp.build_plan("ubuntu2404", "nvidia_repo", "580", "open")
    t = dp.transition(plan, {"nvidia-open-570": "570.172.08-1"}, ["570"], ["nvidia-open-570"])
    assert t["kind"] == "branch_change"
    assert t["unhold"] == ["nvidia-open-570"]


def test_transition_flavor_switch_proprietary_to_open_is_the_in_place_switch():
    plan = dp.build_plan("ubuntu2404", "nvidia_repo", "580", "open")
    t = dp.transition(plan, {"cuda-drivers-580": "580.95.05-1"}, ["580"], ["cuda-drivers-580"])
    assert t["kind"] == "flavor_switch"
    assert t["remove"] == []  # apt install --autoremove --purge replaces it
    assert t["switch_packages"] == ["nvidia-open-580"]
    assert t["unhold"] == ["cuda-drivers-580"]


# --------------------------------------------------------------------------- decide: what the tasks need
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
    plan = dp.decide({"branch": "580", "version": "580.95.05", "dcgm": True}, facts())
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
    plan = dp.decide({"branch": "580", "hold": False, "persistenced": False}, facts())
    assert plan["hold_names"] == []
    assert plan["services"] == []
    loaded = dp.decide({"branch": "580"}, facts(loaded_version="580.95.05", loaded_kernel_module="open"))
    assert loaded["services"] == [{"name": "nvidia-persistenced", "enabled": True, "state": "started"}]


def test_rhel_versionlock_names_are_bare_and_module_reset_only_on_change():
    plan = dp.decide({"branch": "580", "fabricmanager": "true"}, facts("rhel10"))
    assert plan["versionlock_names"] == [
        "nvidia-open",
        "kmod-nvidia-open-dkms",
        "nvidia-fabric-manager",
        "libnvidia-nscq",
    ]
    assert plan["hold_names"] == []
    assert plan["verify"]["check_packages"] is False
    stream = dp.decide({"branch": "580", "fabricmanager": True}, facts("rhel9"))
    assert stream["dnf_module"] == "@nvidia-driver:580-open/fm"
    assert "nvidia-fabricmanager" in [s["name"] for s in stream["services"]]
    assert stream["dnf_module_reset_needed"] is False
    installed = [{"name": "kmod-nvidia-open-dkms", "version": "570.172.08-1.el9", "held": True}]
    installed.append({"name": "nvidia-driver", "version": "3:570.172.08-1.el9", "held": True})
    change = dp.decide({"branch": "580"}, facts("rhel9", packages=installed))
    assert change["transition"]["kind"] == "branch_change"
    assert change["dnf_module_reset_needed"] is True
    assert change["versionlock_delete"] == ["kmod-nvidia-open-dkms", "nvidia-driver"]


def test_hold_missing_leaves_out_what_dpkg_already_holds():
    plan = dp.decide({"source": "distro", "branch": "535", "kernel_module": "proprietary"}, facts("debian12"))
    assert "nvidia-kernel-dkms" in plan["hold_names"] and "libcuda1" in plan["hold_names"]
    assert dp.hold_missing(plan, facts("debian12")) == plan["hold_names"]
    held = [{"name": n, "version": "535.309.01-1", "held": True} for n in plan["hold_names"]]
    assert dp.hold_missing(plan, facts("debian12", packages=held)) == []
    held[1]["held"] = False  # installed, not held (an admin's apt-mark unhold)
    assert dp.hold_missing(plan, facts("debian12", packages=held)) == [plan["hold_names"][1]]
    assert dp.hold_missing({}, facts("debian12", packages=held)) == []


def test_versionlock_missing_uses_the_held_flags_of_the_facts():
    plan = dp.decide({"branch": "580"}, facts("rhel10"))
    after = facts("rhel10", packages=[{"name": "nvidia-open", "version": "580.95.05-1.el10", "held": True}])
    assert dp.versionlock_missing(plan, after) == ["kmod-nvidia-open-dkms"]
    assert dp.versionlock_missing({}, after) == []


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
    plan = dp.decide({"branch": "550", "source": "distro", "debian_mirror": request_mirror}, host)
    assert plan["debian_source"]["uri"] == uri
    assert plan["debian_source"]["suites"] == "trixie trixie-updates"


def test_reboot_after_reads_the_fresh_facts():
    plan = dp.decide({"branch": "580"}, facts())
    installed = facts(module_for_running_kernel={"version": "580.95.05", "kernel_module": "open"})
    after = dp.reboot_after(plan, installed, changed=True, policy="auto")
    assert after["reboot"] is True
    assert after["needed"] is True
    assert after["check_running"] is False
    assert "A reboot is needed" in after["note"]
    loaded = facts(
        loaded_version="580.95.05",
        loaded_kernel_module="open",
        module_for_running_kernel={"version": "580.95.05", "kernel_module": "open"},
    )
    final = dp.reboot_after(plan, loaded, policy="never")
    assert final["reboot"] is False
    assert final["check_running"] is True
    assert final["loaded_in_branch"] is True
    assert final["installed_version"] == "580.95.05"
    assert final["note"] == ""
    assert dp.reboot_after(plan, installed, policy="auto", is_controller=True)["reboot"] is False
    container = facts()
    container["host"]["container"] = "docker"
    boxed = dp.reboot_after(plan, container, changed=True, policy="always")
    assert boxed["reboot"] is False
    assert "impossible in a container" in boxed["note"]
    with pytest.raises(dp.DriverPlanError, match="nvidia_driver_reboot: 'alwasy'"):
        dp.reboot_after(plan, installed, policy="alwasy")


def test_compat_inputs_from_the_facts():
    gpus = [
        {"pci_device_id": "0x2335", "subsystem_device_id": "0x18bf", "name": "NVIDIA H200"},
        {"device_id": "unknown", "compute_capability": "9.0", "name": "x"},
        {"name": "Tesla V100-SXM2-32GB", "pci_subsystem_id": "unknown"},
    ]
    assert dp.compat_gpus([], {"gpus": gpus}) == [
        {"pci_device_id": "0x2335", "pci_subsystem_id": "0x18bf"},
        {"compute_capability": "9.0"},
        {"name": "Tesla V100-SXM2-32GB"},
    ]
    assert dp.compat_gpus([{"name": "NVIDIA H200"}], {"gpus": gpus}) == [{"name": "NVIDIA H200"}]
    rubin = {"pci_device_id": "0x3FFF", "pci_ids_name": "GR150 [Future Rubin]", "name": "unknown"}
    assert dp.compat_gpus([], {"gpus": [rubin]}) == [
        {"pci_device_id": "0x3FFF", "pci_ids_name": "GR150 [Future Rubin]"}
    ]
    assert dp.compat_os(facts()) == {"distribution": "ubuntu", "version": "24.04"}
    assert dp.compat_os({}) is None
    assert dp.user_words("cuda_version: '12.99' is unknown; set cuda_version <= 12.9") == (
        "nvidia_driver_cuda_version: '12.99' is unknown; set nvidia_driver_cuda_version <= 12.9"
    )
    assert dp.user_words("gpus[0]: bad", gave_gpus=True) == "nvidia_driver_gpus[0]: bad"
    assert dp.user_words("gpus[0]: bad") == "gpus[0]: bad"
    assert dp.user_words("nvidia_driver_kernel_module: x") == "nvidia_driver_kernel_module: x"


def test_branches_come_from_the_knowledge_base():
    assert set(dp.available_branches("rhel8", "nvidia_repo")) <= set(kb_driver.DRIVER_BRANCHES)
    assert dp.available_branches("ubuntu2404", "nvidia_repo")[-1] == kb_driver.NEWEST_KNOWN_BRANCH


# ------------------------------------------------------------------------- a driver gpufleet did not install
def test_transition_source_change_removes_the_replaced_packages_and_releases_every_hold():
    plan = dp.build_plan("ubuntu2404", "nvidia_repo", "580", "open")
    installed = ["nvidia-driver-580", "libnvidia-compute-580"]
    t = dp.transition(plan, installed, ["580"], ["nvidia-driver-580"], replaced=installed)
    assert t == {
        "kind": "source_change",
        "unhold": ["nvidia-driver-580"],
        "remove": installed,
        "from_branches": ["580"],
        "switch_packages": [],
        "switch_argv": [],
    }
    assert dp.transition(plan, installed, ["580"], [])["kind"] == "none"


def test_accepted_origins_per_source_and_family():
    assert dp.accepted_origins("nvidia_repo", "debian") == ("nvidia_repo",)
    assert dp.accepted_origins("distro", "ubuntu") == ("ubuntu_archive",)
    assert dp.accepted_origins("distro", "debian") == ("debian_archive",)
    assert dp.accepted_origins("distro", "rhel") == ()


def origin(repository, candidates=None):
    return {"repository": repository, "candidates": candidates or [repository], "evidence": "test"}


def test_only_the_driver_itself_is_judged():
    packages = [
        {
            "name": "nvidia-driver-580",
            "version": "580.95.05-0ubuntu0.24.04.2",
            "origin": origin("ubuntu_archive"),
        },
        {"name": "nvidia-container-toolkit", "version": "1.17.8-1", "origin": origin("nvidia_repo")},
        {"name": "datacenter-gpu-manager-4-core", "version": "1:4.4.1-1", "origin": origin("nvidia_repo")},
        {"name": "nvidia-fabricmanager-580", "version": "580.95.05-1", "origin": origin("nvidia_repo")},
        {
            "name": "libcuda1",
            "version": "535.261.03-1",
            "origin": origin(None, ["nvidia_repo", "debian_archive"]),
        },
    ]
    foreign, undecided = dp.driver_origins(packages, "distro", "ubuntu")
    assert (foreign, [p["name"] for p in undecided]) == ({}, ["libcuda1"])
    foreign, undecided = dp.driver_origins(packages, "nvidia_repo", "ubuntu")
    assert [p["name"] for p in foreign["ubuntu_archive"]] == ["nvidia-driver-580"]
    assert undecided == [packages[-1]]
    # facts without origins (older facts, synthetic tests) judge nothing
    assert dp.driver_origins([{"name": "nvidia-open-580", "version": "580.95.05-1"}], "distro", "ubuntu") == (
        {},
        [],
    )


def test_runfile_conflict_names_its_version_and_dkms_tree():
    conflict, msg = dp.runfile_conflict(
        ["/usr/bin/nvidia-uninstall"], False, False, version="570.86.10", trees=["/usr/src/nvidia-570.86.10"]
    )
    assert conflict is True
    assert "(driver 570.86.10; /usr/bin/nvidia-uninstall, DKMS tree /usr/src/nvidia-570.86.10)" in msg


def test_runfile_owns_only_its_own_dkms_tree():
    runfile = {"uninstaller": "/usr/bin/nvidia-uninstall", "version": "570.86.10"}
    tree = {"module": "nvidia", "version": "570.86.10", "source_dir": "/usr/src/nvidia-570.86.10"}
    assert dp.runfile_owns_tree(tree, runfile) is True
    assert dp.runfile_owns_tree(dict(tree, version="575.57.08"), runfile) is False
    assert dp.runfile_owns_tree(dict(tree, module="nvidia-open"), runfile) is False
    assert dp.runfile_owns_tree(tree, dict(runfile, uninstaller=None)) is False
    assert dp.runfile_owns_tree(tree, dict(runfile, version=None)) is True  # log gone: the likely owner


def test_proprietary_from_r620_is_refused_even_without_the_compat_check():
    """NVIDIA's R620 guide: "Proprietary Kernel Modules Removed" (kb/driver.PROPRIETARY_REMOVED_FROM)."""
    with pytest.raises(
        dp.DriverPlanError, match=r"^nvidia_driver_kernel_module: proprietary is not possible"
    ):
        dp.build_plan("ubuntu2404", "nvidia_repo", 620, "proprietary")
    assert dp.build_plan("ubuntu2404", "nvidia_repo", 615, "proprietary")["flavor"] == "proprietary"


# ------------------------------------------------------------ NVIDIA's install guides per OS x branch
# R590/R615/R620 Driver Installation Guide, "Version locking packages for Ubuntu / Debian -> Ubuntu 590 and
# later packages" (https://docs.nvidia.com/datacenter/tesla/pdf/Driver_Installation_Guide.pdf 4.1.1,
# .../driver-installation-guide/620/pdf/Driver_Installation_Guide.pdf 4.2.1): from 590 the branch leaves the
# package names and a pinning package, installed first, locks the branch.
# "Switching between Driver Module Flavors" (.../driver-installation-guide/advanced-options.html, R590):
# Ubuntu "apt install --autoremove --purge nvidia-open nvidia-driver-open" / "cuda-drivers nvidia-driver",
# Debian "apt install --autoremove --purge nvidia-open" / "cuda-drivers".
GUIDE_APT_CASES = [
    # os, branch, flavor, pin packages, packages, flavor-switch packages
    ("ubuntu2404", 580, "open", [], ["nvidia-open-580"], ["nvidia-open-580"]),  # last branch-named
    (
        "ubuntu2404",
        590,
        "open",
        ["nvidia-driver-pinning-590"],
        ["nvidia-open"],
        ["nvidia-open", "nvidia-driver-open"],
    ),
    (
        "ubuntu2204",
        590,
        "proprietary",
        ["nvidia-driver-pinning-590"],
        ["cuda-drivers"],
        ["cuda-drivers", "nvidia-driver"],
    ),
    ("ubuntu2204", 580, "proprietary", [], ["cuda-drivers-580"], ["cuda-drivers-580"]),
    ("debian12", 580, "proprietary", [], ["cuda-drivers-580"], ["cuda-drivers-580"]),
    ("debian12", 590, "open", ["nvidia-driver-pinning-590"], ["nvidia-open"], ["nvidia-open"]),
    ("debian13", 595, "proprietary", ["nvidia-driver-pinning-595"], ["cuda-drivers"], ["cuda-drivers"]),
    ("debian13", 620, "open", ["nvidia-driver-pinning-620"], ["nvidia-open"], ["nvidia-open"]),
]


@pytest.mark.parametrize("case", GUIDE_APT_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}")
def test_guide_apt_rename_pinning_and_flavor_switch(case):
    os_name, branch, flavor, pins, packages, switch = case
    plan = dp.build_plan(os_name, "nvidia_repo", branch, flavor, kernel_release=UBUNTU_KERNEL)
    assert plan["pin_packages"] == pins
    assert plan["packages"] == packages
    assert plan["flavor_switch"] == {"apt_packages": switch, "argv": []}
    assert plan["versionlock_patterns"] == []
    other = plan["other_flavor_packages"][0]
    t = dp.transition(plan, [other], [str(branch)], [other])
    assert (t["kind"], t["switch_packages"], t["switch_argv"], t["remove"]) == (
        "flavor_switch",
        switch,
        [],
        [],
    )


def test_guide_apt_pin_package_with_a_version():
    # the pinning package also locks one version; both names carry the apt wildcard of the version
    plan = dp.build_plan("ubuntu2404", "nvidia_repo", "590", "open", version="590.48.01")
    assert plan["pin_packages"] == ["nvidia-driver-pinning-590=590.48.01*"]
    assert plan["flavor_switch"]["apt_packages"] == [
        "nvidia-open=590.48.01*",
        "nvidia-driver-open=590.48.01*",
    ]


# R620 guide, kernel-modules.html Table "Open GPU kernel module installation"
# (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/kernel-modules.html): RHEL 8/9
# "dnf module enable nvidia-driver:580-open"; RHEL 10 "dnf versionlock \*nvidia\*580\*" then "dnf install
# nvidia-open". Flavor switch (advanced-options.html): RHEL 8/9 "dnf -y module switch-to
# nvidia-driver:<stream> --allowerasing"; RHEL 10 "dnf install --allowerasing nvidia-open" / "cuda-drivers".
GUIDE_DNF_CASES = [
    # os, branch, flavor, version, module, versionlock patterns, flavor-switch argv
    (
        "rhel9",
        580,
        "open",
        None,
        "@nvidia-driver:580-open/default",
        [],
        ["dnf", "-y", "module", "switch-to", "nvidia-driver:580-open", "--allowerasing"],
    ),
    (
        "rhel8",
        595,
        "proprietary",
        None,
        "@nvidia-driver:595-dkms/default",
        [],
        ["dnf", "-y", "module", "switch-to", "nvidia-driver:595-dkms", "--allowerasing"],
    ),
    (
        "rhel9",
        620,
        "open",
        None,
        "@nvidia-driver:620-open/default",
        [],
        ["dnf", "-y", "module", "switch-to", "nvidia-driver:620-open", "--allowerasing"],
    ),
    (
        "rhel10",
        580,
        "open",
        None,
        None,
        ["*nvidia*580*"],
        ["dnf", "-y", "install", "--allowerasing", "nvidia-open-580.*"],
    ),
    (
        "rhel10",
        580,
        "proprietary",
        "580.95.05",
        None,
        ["*nvidia*580.95.05*"],
        ["dnf", "-y", "install", "--allowerasing", "cuda-drivers-580.95.05"],
    ),
    (
        "rhel10",
        620,
        "open",
        None,
        None,
        ["*nvidia*620*"],
        ["dnf", "-y", "install", "--allowerasing", "nvidia-open-620.*"],
    ),
]


@pytest.mark.parametrize("case", GUIDE_DNF_CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}")
def test_guide_dnf_streams_versionlock_and_flavor_switch(case):
    os_name, branch, flavor, version, module, locks, argv = case
    plan = dp.build_plan(os_name, "nvidia_repo", branch, flavor, version=version)
    assert plan["dnf_module"] == module
    assert plan["versionlock_patterns"] == locks
    assert plan["versionlock"] is (os_name == "rhel10")
    assert plan["flavor_switch"] == {"apt_packages": [], "argv": argv}
    other = plan["other_flavor_packages"][0]
    t = dp.transition(plan, [other], [str(branch)], [])
    assert (t["kind"], t["switch_argv"], t["switch_packages"], t["remove"]) == ("flavor_switch", argv, [], [])


def test_guide_dnf4_versionlock_also_locks_rhel9_userspace_only():
    # version-locking.html "DNF 4" (RHEL 8/9/10): the same \*nvidia\*<branch>\* lock where no stream is on
    plan = dp.build_plan("rhel9", "nvidia_repo", "580", "open", build_kernel_module=False)
    assert (plan["dnf_module"], plan["versionlock_patterns"]) == (None, ["*nvidia*580*"])
    assert plan["flavor_switch"] == {"apt_packages": [], "argv": []}


def test_rhel10_branch_lock_runs_once_and_follows_hold():
    fresh = dp.decide({"branch": "580"}, facts("rhel10"))
    assert (fresh["versionlock_patterns"], fresh["versionlock_patterns_needed"]) == (["*nvidia*580*"], True)
    locked = [
        {"name": "nvidia-open", "version": "3:580.95.05-1.el10", "held": True},
        {"name": "kmod-nvidia-open-dkms", "version": "3:580.95.05-1.el10", "held": True},
    ]
    again = dp.decide({"branch": "580"}, facts("rhel10", packages=locked))
    assert again["transition"]["kind"] == "none"
    assert again["versionlock_patterns_needed"] is False
    assert again["versionlock_delete"] == []
    upgrade = dp.decide({"branch": "595"}, facts("rhel10", packages=locked))
    assert upgrade["transition"]["kind"] == "branch_change"
    assert upgrade["versionlock_delete"] == ["kmod-nvidia-open-dkms", "nvidia-open"]  # 580's locks go first
    assert (upgrade["versionlock_patterns"], upgrade["versionlock_patterns_needed"]) == (
        ["*nvidia*595*"],
        True,
    )
    unlocked = dp.decide({"branch": "580", "hold": False}, facts("rhel10"))
    assert (unlocked["versionlock_patterns"], unlocked["versionlock_patterns_needed"]) == ([], False)
    assert dp.decide({"branch": "580"}, facts("ubuntu2404"))["versionlock_delete"] == []  # apt: unhold


def test_rhel9_flavor_switch_is_module_switch_to_not_a_reset():
    installed = [{"name": "kmod-nvidia-latest-dkms", "version": "3:580.95.05-1.el9", "held": False}]
    installed.append({"name": "nvidia-driver", "version": "3:580.95.05-1.el9", "held": False})
    plan = dp.decide({"branch": "580", "kernel_module": "open"}, facts("rhel9", packages=installed))
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
    plan = dp.decide({"branch": branch}, host)
    assert plan["dnf_module"] == module
    assert plan["fabricmanager_packages"] == fm_packages
    assert "nvidia-fabricmanager" in [s["name"] for s in plan["services"]]
    assert dp.decide({"branch": branch}, facts(os_key))["services"][-1]["name"] != "nvidia-fabricmanager"
