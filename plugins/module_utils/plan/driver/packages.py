# Copyright: gpufleet contributors
# Apache-2.0
"""The package plan: packages, pin packages, dnf module stream, locks, fabric manager, DCGM and kernel
headers per OS x source x branch x kernel module flavor (:func:`build_plan`).

What each source packages, and how, is kb/driver_packages.py's. Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver as kb_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver_packages as kb_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.request import (
    SOURCES,
    DriverPlanError,
    available_branches,
    family_of,
    os_label,
    parse_branch_value,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad


def native_cuda_major(branch):
    """The CUDA major a branch runs natively (kb/driver.py), or None when the knowledge base has none."""
    row = kb_driver.DRIVER_BRANCHES.get(int(branch))
    if not row or not row[2]:
        return None
    return int(row[2].split(".")[0])


# Ubuntu kernel releases look like 6.8.0-45-generic; linux-restricted-modules builds
# linux-modules-nvidia-<branch>[-server][-open]-<release> for each (packages.ubuntu.com, medium).
_UBUNTU_RELEASE_RE = re.compile(r"^\d+\.\d+\.\d+-\d+-[a-z][a-z0-9-]*$")


def ubuntu_precompiled_available(kernel_release):
    return bool(kernel_release) and bool(_UBUNTU_RELEASE_RE.match(kernel_release))


def header_packages(os_name, kernel_release):
    """Headers for the running kernel (DKMS builds against them)."""
    family = family_of(os_name)
    if not kernel_release:
        return []
    if family in ("ubuntu", "debian"):
        return [f"linux-headers-{kernel_release}"]
    return [f"kernel-devel-{kernel_release}", f"kernel-headers-{kernel_release}"]


# Headers DKMS builds another installed kernel's module against: linux-headers-<release> (Debian, Ubuntu),
# kernel-devel-<release> (RHEL; kernel-headers are the userspace headers, one version installed at a time,
# so only the running kernel's are planned, by header_packages), high: the distributions' package names.
def kernel_header_packages(family, release):
    """The header packages of one installed kernel that DKMS builds for."""
    if family in ("ubuntu", "debian"):
        return [f"linux-headers-{release}"]
    return [f"kernel-devel-{release}"]


def _apt_versioned(name, version):
    return f"{name}={version}*" if version else name


def _dnf_versioned(name, version):
    return f"{name}-{version}" if version else name


def dnf_bare(name):
    """A dnf spec without its version or branch glob ('nvidia-open-580.*' -> 'nvidia-open')."""
    return re.sub(r"-[0-9][0-9.*]*$", "", name)


def _check_plan_input(os_name, source, branch, flavor):
    if os_name not in kb_hosts.OS_TABLE:
        raise DriverPlanError(
            f"operating system: {os_name!r} is not supported; supported: {', '.join(kb_hosts.OS_TABLE)}"
        )
    if source not in SOURCES:
        raise DriverPlanError(bad("nvidia_driver_source", source, ", ".join(SOURCES)))
    if flavor not in ("open", "proprietary"):
        raise DriverPlanError(f"kernel module flavor: {flavor!r} must be resolved to open or proprietary")
    b = parse_branch_value(branch)
    avail = available_branches(os_name, source)
    if b not in avail:
        raise DriverPlanError(
            f"nvidia_driver_branch: {str(branch)!r} is not packaged by {source} "
            f"for {os_label(os_name)}; "
            f"available: {', '.join(str(x) for x in avail) or 'none'}"
        )
    if flavor == "open" and b < kb_driver.OPEN_MODULES_FIRST_BRANCH:
        raise DriverPlanError(
            f"nvidia_driver_kernel_module: 'open' needs branch >= {kb_driver.OPEN_MODULES_FIRST_BRANCH}, "
            f"got {b}"
        )
    return b


def _empty_plan(os_name, source, b, flavor, *, version, build_kernel_module):
    info = kb_hosts.OS_TABLE[os_name]
    family = info["family"]
    return {
        "os": os_name,
        "family": family,
        "pkg_mgr": info["pkg_mgr"],
        "source": source,
        "branch": str(b),
        "flavor": flavor,
        "version": version,
        "use_nvidia_repo": source == "nvidia_repo",
        "debian_components": [],
        "pin_packages": [],
        "packages": [],
        "kernel_packages": [],
        "kernel_build": "none",
        "header_packages": [],
        "dnf_module": None,
        "dnf_module_reset": None,
        "dnf_module_enable": [],
        "fabricmanager_packages": [],
        "fabricmanager_service": kb_packages.FABRICMANAGER_SERVICE,
        "dcgm_packages": [],
        "dcgm_service": kb_packages.DCGM_SERVICE,
        "hold_packages": [],
        "versionlock": False,
        "versionlock_patterns": [],
        "flavor_switch": {"apt_packages": [], "argv": []},
        # RHEL 8/9: `dnf module switch-to nvidia-driver:<stream> --allowerasing`, a branch change's or flavor
        # switch's move of the installed streams' packages to the planned stream (plan/driver/existing.py)
        "stream_switch": [],
        "other_flavor_packages": [],
        "persistenced_packages": [],
        "persistenced_service": kb_packages.PERSISTENCED_SERVICE,
        "initramfs_command": list(kb_packages.INITRAMFS_COMMANDS[family]),
        "module_signing_needed_with_secure_boot": False,
        "build_kernel_module": bool(build_kernel_module),
        "warnings": [],
    }


def build_plan(
    os_name,
    source,
    branch,
    flavor,
    *,
    version=None,
    kernel_release=None,
    ubuntu_server=True,
    fabricmanager=False,
    dcgm=False,
    build_kernel_module=True,
):
    """The package plan for one host (a dict; :func:`decide` adds what the tasks need around it).

    ``flavor`` must already be resolved (open or proprietary). ``build_kernel_module`` false (containers,
    where no module can be loaded) keeps only the userspace packages.
    """
    b = _check_plan_input(os_name, source, branch, flavor)
    version = str(version) if version not in (None, "") else None
    plan = _empty_plan(os_name, source, b, flavor, version=version, build_kernel_module=build_kernel_module)
    family = plan["family"]
    removed_from = kb_driver.PROPRIETARY_REMOVED_FROM[0]
    if flavor == "proprietary" and b >= removed_from:
        # the same rule as plan/compat (which refuses it too): here also when the compat check is skipped
        raise DriverPlanError(
            f"nvidia_driver_kernel_module: proprietary is not possible on branch {b}: NVIDIA's "
            f"R{removed_from} driver guide lists the proprietary kernel modules as removed; use open (or a "
            f"branch before R{removed_from})"
        )
    if source == "nvidia_repo" and family in ("ubuntu", "debian"):
        _plan_nvidia_apt(plan, b, flavor, version)
    elif source == "nvidia_repo":
        _plan_nvidia_dnf(plan, os_name, b, flavor, version)
    elif family == "ubuntu":
        _plan_ubuntu_archive(plan, b, flavor, version, kernel_release=kernel_release, server=ubuntu_server)
    elif family == "debian":
        _plan_debian_archive(plan, flavor)
    else:  # pragma: no cover - _check_plan_input/available_branches refuse distro on RHEL first
        raise DriverPlanError(
            "nvidia_driver_source: 'distro' has no driver packages on RHEL; use nvidia_repo"
        )
    _plan_kernel_side(plan, os_name, kernel_release)
    if fabricmanager:
        _plan_fabricmanager(plan, os_name, b)
    if dcgm:
        # DCGM 4 packages per CUDA major: the branch's native CUDA major (kb/driver.py), 12 at least.
        major = max(12, native_cuda_major(b) or 12)
        plan["dcgm_packages"] = ["datacenter-gpu-manager-4-core", f"datacenter-gpu-manager-4-cuda{major}"]
    if plan["pkg_mgr"] == "apt":
        plan["hold_packages"] = bare_names(
            plan["pin_packages"] + plan["packages"] + plan["kernel_packages"] + plan["fabricmanager_packages"]
        )
    return plan


def _plan_kernel_side(plan, os_name, kernel_release):
    if plan["kernel_build"] == "dkms":
        plan["module_signing_needed_with_secure_boot"] = True
        plan["header_packages"] = header_packages(os_name, kernel_release)
    if not plan["build_kernel_module"]:
        plan["kernel_packages"] = []
        plan["header_packages"] = []
        plan["module_signing_needed_with_secure_boot"] = False


def bare_names(names):
    """Package names without an apt version ('=580.95.05*'), each once, in order."""
    out = []
    for n in names:
        bare = n.split("=", 1)[0]
        if bare not in out:
            out.append(bare)
    return out


def _plan_nvidia_apt(plan, b, flavor, version):
    # NVIDIA repository, Ubuntu and Debian: before R590 branch-named metapackages nvidia-open-<b> (open)
    # and cuda-drivers-<b> (proprietary); from R590 the pin package nvidia-driver-pinning-<b> installed first,
    # then the unversioned nvidia-open / cuda-drivers (PINNING_FROM's sources: the R590/R615/R620 guides'
    # "Ubuntu 590 and later packages", high). The metapackages pull the DKMS module packages
    # (nvidia-kernel-open-dkms / nvidia-kernel-dkms: medium, compat-facts open_kernel_modules).
    if b >= kb_packages.PINNING_FROM:
        plan["pin_packages"] = [_apt_versioned(kb_packages.PIN_PACKAGE.format(branch=b), version)]
        open_pkg, prop_pkg = "nvidia-open", "cuda-drivers"
        switch = kb_packages.APT_FLAVOR_SWITCH[plan["family"]][flavor]  # the guide's command (high)
    else:
        open_pkg, prop_pkg = f"nvidia-open-{b}", f"cuda-drivers-{b}"
        switch = (open_pkg if flavor == "open" else prop_pkg,)  # same command, branch-named (medium)
    main, other = (open_pkg, prop_pkg) if flavor == "open" else (prop_pkg, open_pkg)
    plan["packages"] = [_apt_versioned(main, version)]
    plan["other_flavor_packages"] = [other]
    plan["kernel_packages"] = ["nvidia-kernel-open-dkms" if flavor == "open" else "nvidia-kernel-dkms"]
    plan["kernel_build"] = "dkms"
    plan["persistenced_packages"] = ["nvidia-persistenced"]
    # apt install --autoremove --purge <switch> (the guide's flavor switch; see APT_FLAVOR_SWITCH)
    plan["flavor_switch"] = {"apt_packages": [_apt_versioned(p, version) for p in switch], "argv": []}
    if not plan["build_kernel_module"]:
        # Userspace only (containers): NVIDIA's Debian-style compute packages, no metapackage that pulls
        # DKMS, at the branch (or version) asked: apt would take the repository's newest branch otherwise
        # (no branch-named package exists for them, no pin package before R590; their dependencies on
        # NVIDIA's libraries are exact versions, so the branch holds for all of them)
        at = version or f"{b}."
        userspace = ("nvidia-driver-cuda", "nvidia-persistenced")
        plan["packages"] = [_apt_versioned(name, at) for name in userspace]
        plan["flavor_switch"] = {"apt_packages": [], "argv": []}
        if b < kb_packages.PINNING_FROM:
            plan["pin_packages"] = []


def _plan_nvidia_dnf(plan, os_name, b, flavor, version):
    lock = kb_packages.VERSIONLOCK_PATTERN.format(branch=version or b)
    if os_name in ("rhel8", "rhel9"):
        _plan_dnf_streams(plan, b, flavor, version, lock)
    else:
        _plan_dnf_el10(plan, b, flavor, version, lock)
    plan["persistenced_packages"] = ["nvidia-persistenced"]


def _plan_dnf_streams(plan, b, flavor, version, lock):
    # dnf module streams nvidia-driver:<b>-open (open, DKMS), <b>-dkms (proprietary, DKMS); profile 'fm'
    # adds fabric manager + NSCQ (_plan_fabricmanager).
    # Source: R620 guide kernel-modules.html, RHEL 8/9 "dnf module enable nvidia-driver:580-open" (high);
    # NVIDIA/yum-packaging-dkms-nvidia README ("XXX-dkms" and "XXX-open" streams: the XXX streams lock
    # driver updates to the branch, high). The stream is installed with its default profile
    # (@nvidia-driver:<stream>/default = enable + install of the profile's packages).
    stream = f"{b}-open" if flavor == "open" else f"{b}-dkms"
    plan["dnf_module"] = f"@nvidia-driver:{stream}/default"
    plan["dnf_module_reset"] = "nvidia-driver"
    # enabled explicitly before the profile's install (DNF_MODULE_ENABLE, high)
    plan["dnf_module_enable"] = [
        a.format(module=f"nvidia-driver:{stream}") for a in kb_packages.DNF_MODULE_ENABLE
    ]
    plan["packages"] = []
    plan["kernel_packages"] = []
    plan["kernel_build"] = "dkms"
    plan["other_flavor_packages"] = (
        ["kmod-nvidia-latest-dkms"] if flavor == "open" else ["kmod-nvidia-open-dkms"]
    )
    # "dnf -y module switch-to nvidia-driver:<stream> --allowerasing" (DNF_MODULE_SWITCH, high)
    argv = [a.format(module=f"nvidia-driver:{stream}") for a in kb_packages.DNF_MODULE_SWITCH]
    plan["flavor_switch"] = {"apt_packages": [], "argv": argv}
    plan["stream_switch"] = argv
    if version:
        plan["packages"] = [_dnf_versioned("nvidia-driver", version)]
    if not plan["build_kernel_module"]:
        # no profile installed, but the stream stays enabled: the packages are the streams' artifacts, and
        # dnf filters them out by name while no stream of the module is ("All matches were filtered out by
        # modular filtering"; an EL 9-shaped host with NVIDIA's modules.yaml: issue 38)
        plan["dnf_module"] = None
        plan["flavor_switch"] = {"apt_packages": [], "argv": []}
        plan["packages"] = [_dnf_versioned("nvidia-driver-cuda", version), "nvidia-persistenced"]
        plan["warnings"].append(
            "userspace-only install on RHEL 8/9: the branch's module stream is enabled, no profile "
            "installed; the packages are installed by name and locked with versionlock"
        )
        plan["versionlock"] = True
        plan["versionlock_patterns"] = [lock]  # DNF 4 versionlock (version-locking.html, high)


def _plan_dnf_el10(plan, b, flavor, version, lock):
    # RHEL 10 has no modularity: "dnf versionlock \*nvidia\*<b>\*" then "dnf install nvidia-open" (R620
    # kernel-modules.html, high; VERSIONLOCK_PATTERN). The package names keep the branch glob too
    # (nvidia-open-<b>.*), so that the branch holds even with nvidia_driver_hold: false. Open:
    # kmod-nvidia-open-dkms, proprietary: kmod-nvidia-latest-dkms (version-locking.html's lock list and
    # NVIDIA/yum-packaging-dkms-nvidia, high).
    main = "nvidia-open" if flavor == "open" else "cuda-drivers"
    other = "cuda-drivers" if flavor == "open" else "nvidia-open"
    pattern = version if version else f"{b}.*"
    plan["packages"] = [f"{main}-{pattern}"]
    plan["other_flavor_packages"] = [other]
    plan["kernel_packages"] = ["kmod-nvidia-open-dkms" if flavor == "open" else "kmod-nvidia-latest-dkms"]
    plan["kernel_build"] = "dkms"
    plan["versionlock"] = True
    plan["versionlock_patterns"] = [lock]
    # "dnf install --allowerasing nvidia-open" / "... cuda-drivers" (DNF_INSTALL_SWITCH, high)
    argv = [a.format(package=plan["packages"][0]) for a in kb_packages.DNF_INSTALL_SWITCH]
    plan["flavor_switch"] = {"apt_packages": [], "argv": argv}
    if not plan["build_kernel_module"]:
        # persistenced with the branch too: a branch change moves it (no dependency pulls it along)
        plan["packages"] = [f"nvidia-driver-cuda-{pattern}", f"nvidia-persistenced-{pattern}"]
        plan["flavor_switch"] = {"apt_packages": [], "argv": []}


def _plan_ubuntu_archive(plan, b, flavor, version, *, kernel_release, server):
    # Ubuntu archive: nvidia-headless-no-dkms-<b>[-server][-open] + nvidia-utils-<b>[-server] userspace;
    # kernel side precompiled linux-modules-nvidia-<b>[-server][-open]-<kernel release> (signed by Canonical,
    # no MOK needed) when the kernel is an Ubuntu one, else nvidia-dkms-<b>[-server][-open].
    # Source: packages.ubuntu.com (nvidia-graphics-drivers-580-server binary list; linux-restricted-modules
    # linux-modules-nvidia-*-server-open-* packages), read 2026-11-30 (medium).
    srv = "-server" if server else ""
    opn = "-open" if flavor == "open" else ""
    other_opn = "" if flavor == "open" else "-open"
    plan["packages"] = [
        _apt_versioned(f"nvidia-headless-no-dkms-{b}{srv}{opn}", version),
        _apt_versioned(f"nvidia-utils-{b}{srv}", version),
    ]
    plan["other_flavor_packages"] = [
        f"nvidia-headless-no-dkms-{b}{srv}{other_opn}",
        f"nvidia-dkms-{b}{srv}{other_opn}",
    ]
    if ubuntu_precompiled_available(kernel_release):
        plan["kernel_packages"] = [f"linux-modules-nvidia-{b}{srv}{opn}-{kernel_release}"]
        plan["kernel_build"] = "precompiled"
        plan["other_flavor_packages"].append(f"linux-modules-nvidia-{b}{srv}{other_opn}-{kernel_release}")
    else:
        plan["kernel_packages"] = [_apt_versioned(f"nvidia-dkms-{b}{srv}{opn}", version)]
        plan["kernel_build"] = "dkms"
        if kernel_release:
            plan["warnings"].append(
                f"kernel {kernel_release} is not an Ubuntu kernel: no precompiled modules, building with DKMS"
            )
    plan["persistenced_packages"] = [f"nvidia-compute-utils-{b}{srv}"]


def _plan_debian_archive(plan, flavor):
    # Debian non-free: the headless compute set and the module as DKMS (kb/driver_packages.py
    # DEBIAN_ARCHIVE_PACKAGES, DEBIAN_COMPONENTS and their source).
    plan["debian_components"] = list(kb_packages.DEBIAN_COMPONENTS)
    plan["packages"] = list(kb_packages.DEBIAN_ARCHIVE_PACKAGES)
    plan["persistenced_packages"] = ["nvidia-persistenced"]
    if flavor == "open":
        plan["kernel_packages"] = ["nvidia-open-kernel-dkms"]
        plan["other_flavor_packages"] = ["nvidia-kernel-dkms"]
    else:
        plan["kernel_packages"] = ["nvidia-kernel-dkms"]
        plan["other_flavor_packages"] = ["nvidia-open-kernel-dkms"]
    plan["kernel_build"] = "dkms"


def _plan_fabricmanager(plan, os_name, b):
    # Fabric manager (NVSwitch systems) must match the driver branch ("the version of fabricmanager must match
    # the NVIDIA driver installed").
    # RHEL 8/9: the module's NvSwitch profile: "The NvSwitch modularity profile (fm) installs all of the
    # NVIDIA driver packages, as well as Fabric Manager and NSCQ: dnf module install
    # nvidia-driver:${stream}/fm" (RHEL8, RHEL9 streams XXX, XXX-dkms, latest, latest-dkms), high: NVIDIA's
    # own packaging READMEs, https://github.com/NVIDIA/yum-packaging-fabric-manager,
    # https://github.com/NVIDIA/yum-packaging-libnvidia-nscq
    # (decide() asks for it when the facts count NVSwitches and nvidia_driver_fabricmanager is auto).
    # apt before R590: nvidia-fabricmanager-<b> + libnvidia-nscq-<b> ("apt-get install libnvidia-nscq-XXX",
    # https://github.com/NVIDIA/apt-packaging-libnvidia-nscq, high); from R590 libnvidia-nscq keeps its name
    # ("no change" in the guides' Ubuntu 590 renames, high) and nvidia-fabricmanager drops the branch (the
    # rename rule; its row was not read: medium). RHEL 10 (no modules): the fabric manager RPM by name with
    # the branch glob, held by the branch's versionlock pattern (medium).
    family = plan["family"]
    if family == "debian" and plan["source"] == "distro":
        plan["warnings"].append(
            "Debian does not package NVIDIA fabric manager: "
            "use nvidia_driver_source: nvidia_repo on NVSwitch systems"
        )
        return
    if plan["pkg_mgr"] == "apt":
        if plan["source"] == "nvidia_repo" and b >= kb_packages.PINNING_FROM:
            plan["fabricmanager_packages"] = ["nvidia-fabricmanager", "libnvidia-nscq"]
        else:
            plan["fabricmanager_packages"] = [f"nvidia-fabricmanager-{b}", f"libnvidia-nscq-{b}"]
        return
    if plan["dnf_module"]:
        plan["dnf_module"] = plan["dnf_module"].rsplit("/", 1)[0] + "/fm"
        return
    plan["fabricmanager_packages"] = [f"nvidia-fabric-manager-{b}.*", f"libnvidia-nscq-{b}.*"]
