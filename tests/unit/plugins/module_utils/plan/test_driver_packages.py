"""The package plan (plan/driver/packages.py): every OS x source x branch x flavor; NVIDIA's guides."""

import itertools

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver as kb_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.existing import transition
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.packages import build_plan
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.request import (
    SOURCES,
    DriverPlanError,
    available_branches,
)

OSES = sorted(kb_hosts.OS_TABLE)


UBUNTU_KERNEL = "6.8.0-45-generic"


CUSTOM_KERNEL = "6.18.44-fc-v595"


def all_combinations():
    for os_name, source in itertools.product(OSES, SOURCES):
        for branch in available_branches(os_name, source):
            for flavor in ("open", "proprietary"):
                if flavor == "open" and branch < kb_driver.OPEN_MODULES_FIRST_BRANCH:
                    continue
                if flavor == "proprietary" and branch >= kb_driver.PROPRIETARY_REMOVED_FROM[0]:
                    continue  # refused (test_proprietary_from_r620_is_refused_even_without_the_compat_check)
                yield os_name, source, branch, flavor


COMBOS = list(all_combinations())


def test_every_os_has_nvidia_repo_branches_and_the_matrix_is_large():
    for os_name in OSES:
        assert 580 in available_branches(os_name, "nvidia_repo")
    assert available_branches("rhel9", "distro") == []
    assert len(COMBOS) > 150


@pytest.mark.parametrize(("os_name", "source", "branch", "flavor"), COMBOS)
@pytest.mark.parametrize("kernel", [UBUNTU_KERNEL, CUSTOM_KERNEL])
def test_plan_invariants(os_name, source, branch, flavor, kernel):
    plan = build_plan(os_name, source, str(branch), flavor, kernel_release=kernel)
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
    plan = build_plan(
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
    plan = build_plan(os_name, "nvidia_repo", branch, flavor, kernel_release=UBUNTU_KERNEL)
    assert plan["pin_packages"] == pins
    assert plan["packages"] == packages
    assert plan["kernel_packages"] == kernel
    assert plan["hold_packages"] == pins + packages + kernel


def test_nvidia_apt_exact_version_pins_apt_wildcards():
    plan = build_plan("ubuntu2404", "nvidia_repo", "580", "open", version="580.95.05")
    assert plan["packages"] == ["nvidia-open-580=580.95.05*"]
    assert plan["hold_packages"][0] == "nvidia-open-580"
    plan = build_plan("ubuntu2404", "nvidia_repo", "595", "open", version="595.45.04")
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
    plan = build_plan(os_name, "nvidia_repo", "580", flavor, kernel_release="5.14.0-427.13.1.el9_4.x86_64")
    assert plan["dnf_module"] == module
    assert plan["dnf_module_reset"] == "nvidia-driver"
    assert plan["versionlock"] is False
    assert plan["header_packages"] == [
        "kernel-devel-5.14.0-427.13.1.el9_4.x86_64",
        "kernel-headers-5.14.0-427.13.1.el9_4.x86_64",
    ]
    fm = build_plan(os_name, "nvidia_repo", "580", flavor, fabricmanager=True)
    assert fm["dnf_module"].endswith("/fm")
    # issue 38: the stream is enabled explicitly before its profile is installed (NVIDIA's "dnf module
    # enable nvidia-driver:580-open"), not left to the dnf module, which switches an enabled other stream
    # silently and leaves a reset stream disabled where its packages stay
    stream = module[1:].split("/")[0]
    assert plan["dnf_module_enable"] == fm["dnf_module_enable"] == ["dnf", "-y", "module", "enable", stream]


def test_no_stream_is_enabled_where_the_os_has_none():
    """RHEL 10 has no streams, Ubuntu no modularity."""
    assert build_plan("rhel10", "nvidia_repo", "580", "open")["dnf_module_enable"] == []
    assert build_plan("ubuntu2404", "nvidia_repo", "580", "open")["dnf_module_enable"] == []


def test_a_userspace_only_install_on_rhel9_enables_the_branch_stream_and_installs_by_name():
    """Issue 38: NVIDIA's driver packages are the streams' artifacts on RHEL 8/9, so dnf filters them out by
    name while no stream is enabled ("All matches were filtered out by modular filtering", seen on an EL
    9-shaped host against NVIDIA's modules layout): the branch's stream is enabled, no profile installed."""
    nobuild = build_plan("rhel9", "nvidia_repo", "580", "open", build_kernel_module=False)
    assert nobuild["dnf_module"] is None
    assert nobuild["dnf_module_enable"] == ["dnf", "-y", "module", "enable", "nvidia-driver:580-open"]
    assert nobuild["packages"][-1] == "nvidia-persistenced"


@pytest.mark.parametrize(
    ("flavor", "packages", "kernel"),
    [
        ("open", ["nvidia-open-580.*"], ["kmod-nvidia-open-dkms"]),
        ("proprietary", ["cuda-drivers-580.*"], ["kmod-nvidia-latest-dkms"]),
    ],
)
def test_rhel10_plain_packages_and_versionlock(flavor, packages, kernel):
    plan = build_plan("rhel10", "nvidia_repo", "580", flavor)
    assert plan["dnf_module"] is None
    assert plan["packages"] == packages
    assert plan["kernel_packages"] == kernel
    assert plan["versionlock"] is True
    exact = build_plan("rhel10", "nvidia_repo", "580", flavor, version="580.95.05")
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
    plan = build_plan("ubuntu2404", "distro", "580", flavor, kernel_release=kernel, ubuntu_server=server)
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
    plan = build_plan(os_name, "distro", branch, flavor, kernel_release="6.1.0-37-amd64")
    assert plan["debian_components"] == ["main", "contrib", "non-free", "non-free-firmware"]
    assert "nvidia-smi" in plan["packages"]
    assert "nvidia-persistenced" in plan["packages"]
    assert "firmware-nvidia-gsp" in plan["packages"]
    assert plan["kernel_packages"] == [module_pkg]
    assert plan["header_packages"] == ["linux-headers-6.1.0-37-amd64"]
    assert module_pkg in plan["hold_packages"]
    fm = build_plan(os_name, "distro", branch, flavor, fabricmanager=True)
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
    plan = build_plan(os_name, source, branch, "open", fabricmanager=True)
    assert plan["fabricmanager_packages"] == expected
    if plan["pkg_mgr"] == "apt":
        assert expected[0] in plan["hold_packages"]


def test_dcgm_follows_cuda_major_of_branch():
    assert build_plan("ubuntu2404", "nvidia_repo", 580, "open", dcgm=True)["dcgm_packages"][1].endswith(
        "cuda13"
    )
    assert build_plan("ubuntu2404", "nvidia_repo", 570, "open", dcgm=True)["dcgm_packages"][1].endswith(
        "cuda12"
    )


def test_build_plan_refuses_what_validation_refuses():
    with pytest.raises(DriverPlanError, match="not a valid version"):
        build_plan("ubuntu2404", "nvidia_repo", "58O", "open")
    with pytest.raises(DriverPlanError, match="available"):
        build_plan("ubuntu2404", "nvidia_repo", "581", "open")
    with pytest.raises(DriverPlanError, match="resolved"):
        build_plan("ubuntu2404", "nvidia_repo", "580", "auto")
    with pytest.raises(DriverPlanError):
        build_plan("rhel9", "distro", "580", "open")
    with pytest.raises(
        DriverPlanError, match=r"^nvidia_driver_source=runfile \(allowed: nvidia_repo, distro\)$"
    ):
        build_plan("ubuntu2404", "runfile", "580", "open")


def test_branches_come_from_the_knowledge_base():
    assert set(available_branches("rhel8", "nvidia_repo")) <= set(kb_driver.DRIVER_BRANCHES)
    assert available_branches("ubuntu2404", "nvidia_repo")[-1] == kb_driver.NEWEST_KNOWN_BRANCH


def test_proprietary_from_r620_is_refused_even_without_the_compat_check():
    """NVIDIA's R620 guide: "Proprietary Kernel Modules Removed" (kb/driver.PROPRIETARY_REMOVED_FROM)."""
    with pytest.raises(DriverPlanError, match=r"^nvidia_driver_kernel_module: proprietary is not possible"):
        build_plan("ubuntu2404", "nvidia_repo", 620, "proprietary")
    assert build_plan("ubuntu2404", "nvidia_repo", 615, "proprietary")["flavor"] == "proprietary"


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
    plan = build_plan(os_name, "nvidia_repo", branch, flavor, kernel_release=UBUNTU_KERNEL)
    assert plan["pin_packages"] == pins
    assert plan["packages"] == packages
    assert plan["flavor_switch"] == {"apt_packages": switch, "argv": []}
    assert plan["versionlock_patterns"] == []
    other = plan["other_flavor_packages"][0]
    t = transition(plan, [other], [str(branch)], [other])
    assert (t["kind"], t["switch_packages"], t["switch_argv"], t["remove"]) == (
        "flavor_switch",
        switch,
        [],
        [],
    )


def test_guide_apt_pin_package_with_a_version():
    # the pinning package also locks one version; both names carry the apt wildcard of the version
    plan = build_plan("ubuntu2404", "nvidia_repo", "590", "open", version="590.48.01")
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
    plan = build_plan(os_name, "nvidia_repo", branch, flavor, version=version)
    assert plan["dnf_module"] == module
    assert plan["versionlock_patterns"] == locks
    assert plan["versionlock"] is (os_name == "rhel10")
    assert plan["flavor_switch"] == {"apt_packages": [], "argv": argv}
    other = plan["other_flavor_packages"][0]
    t = transition(plan, [other], [str(branch)], [])
    assert (t["kind"], t["switch_argv"], t["switch_packages"], t["remove"]) == ("flavor_switch", argv, [], [])


def test_guide_dnf4_versionlock_also_locks_rhel9_userspace_only():
    # version-locking.html "DNF 4" (RHEL 8/9/10): the same \*nvidia\*<branch>\* lock where no stream is on
    plan = build_plan("rhel9", "nvidia_repo", "580", "open", build_kernel_module=False)
    assert (plan["dnf_module"], plan["versionlock_patterns"]) == (None, ["*nvidia*580*"])
    assert plan["flavor_switch"] == {"apt_packages": [], "argv": []}
