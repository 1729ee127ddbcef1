# Copyright: gpufleet contributors
# Apache-2.0
"""The NVIDIA driver plan: which packages, streams, services and kernel steps a host needs.

Pure Python, stdlib only, Python >= 3.9 (runs on targets inside ``nvidia_driver_state`` and in tests).
Decisions about the driver are made here once, from data; the ``nvidia_driver`` role only executes them.

Main entry points:

* :func:`validate_request` -- every refusal about the user's variables, before any change.
* :func:`build_plan` -- packages / dnf module stream / holds / fabric manager / initramfs per
  OS x source x branch x kernel-module flavor.
* :func:`resolve_flavor` -- ``auto`` -> ``open`` or ``proprietary``.
* :func:`reboot_decision` -- the ``auto|never|always`` reboot policy.
* :func:`host_managed` and :func:`runfile_conflict` -- states in which the role must not install.
* :func:`parse_proc_version`, :func:`flavor_from_license` -- reading what the kernel reports.

Every table row carries its source. ``confidence`` follows /work/shared/reference conventions:
high = NVIDIA's / the distribution's own text or index; medium = indirect.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import (
    VersionError,
    parse_version,
)

SOURCES = ("nvidia_repo", "distro")
FLAVORS = ("auto", "open", "proprietary")
REBOOT_POLICIES = ("auto", "never", "always")


class DriverPlanError(ValueError):
    """A request no plan can serve (the message names the variable, the value and what is allowed)."""


# ---------------------------------------------------------------------------------------------------
# Operating systems
# ---------------------------------------------------------------------------------------------------
# os key -> (family, package manager, NVIDIA repository directory, initramfs command)
# Repository directories: NVIDIA Driver Installation Guide (R580 and R610 'introduction' pages),
# Rocky/Alma map to rhelN (high). Initramfs tools: initramfs-tools on Debian/Ubuntu, dracut on RHEL.
OS_TABLE = {
    "ubuntu2204": {"family": "ubuntu", "pkg_mgr": "apt", "label": "Ubuntu 22.04"},
    "ubuntu2404": {"family": "ubuntu", "pkg_mgr": "apt", "label": "Ubuntu 24.04"},
    "debian12": {"family": "debian", "pkg_mgr": "apt", "label": "Debian 12"},
    "debian13": {"family": "debian", "pkg_mgr": "apt", "label": "Debian 13"},
    "rhel8": {"family": "rhel", "pkg_mgr": "dnf", "label": "RHEL 8 (or Rocky/Alma 8)"},
    "rhel9": {"family": "rhel", "pkg_mgr": "dnf", "label": "RHEL 9 (or Rocky/Alma 9)"},
    "rhel10": {"family": "rhel", "pkg_mgr": "dnf", "label": "RHEL 10 (or Rocky/Alma 10)"},
}

_RHEL_LIKE = ("redhat", "rhel", "rocky", "almalinux", "alma", "centos", "oraclelinux", "ol")

INITRAMFS_COMMANDS = {
    "ubuntu": ["update-initramfs", "-u", "-k", "all"],
    "debian": ["update-initramfs", "-u", "-k", "all"],
    "rhel": ["dracut", "--force", "--regenerate-all"],
}


def os_key(distribution, major_version):
    """'Ubuntu', '24.04' -> 'ubuntu2404'; 'Rocky', '9' -> 'rhel9'. Raises DriverPlanError if unsupported."""
    dist = str(distribution or "").strip().lower().replace(" ", "")
    ver = str(major_version or "").strip()
    key = None
    if dist == "ubuntu":
        key = "ubuntu" + ver.replace(".", "")
    elif dist == "debian":
        key = "debian" + ver.split(".")[0]
    elif dist in _RHEL_LIKE:
        key = "rhel" + ver.split(".")[0]
    if key not in OS_TABLE:
        raise DriverPlanError(
            f"operating system: {distribution} {major_version} is not supported by nvidia_driver; "
            f"supported: {', '.join(v['label'] for v in OS_TABLE.values())}"
        )
    return key


# ---------------------------------------------------------------------------------------------------
# Branches each source packages, per OS
# ---------------------------------------------------------------------------------------------------
# NVIDIA network repositories: branches whose driver packages the repository carries.
# Source: NVIDIA data-center driver lifecycle (compat-facts driver_branch_lifecycle, high) intersected
# with the repository's lifetime: ubuntu2204 first CUDA 11.7 (R515), debian12 first CUDA 12.3 (R545),
# ubuntu2404 created 2024-05 (R550), debian13 and rhel10 from 2025 (R575/R580), rhel9 from 2022 (R515)
# (compat-facts os_support.cuda_version_os_facts; the per-branch listing itself was not read: medium).
_NVIDIA_BRANCHES_ALL = (450, 460, 470, 510, 515, 520, 525, 530, 535, 545, 550, 555)
_NVIDIA_BRANCHES_ALL += (560, 565, 570, 575, 580, 590, 595, 610, 615, 620)
NVIDIA_REPO_FIRST_BRANCH = {
    "ubuntu2204": 515,
    "ubuntu2404": 550,
    "debian12": 545,
    "debian13": 580,
    "rhel8": 450,
    "rhel9": 515,
    "rhel10": 575,
}

# Ubuntu archive (restricted/multiverse): nvidia-graphics-drivers-<branch>[-server] source packages.
# Source: packages.ubuntu.com listings for jammy/noble (linux-modules-nvidia-*, nvidia-headless-no-dkms-*,
# nvidia-dkms-*-server(-open)), read 2026-11-30 (medium: not every branch x release pair was read).
UBUNTU_ARCHIVE_BRANCHES = {
    "ubuntu2204": (470, 535, 550, 560, 565, 570, 575, 580, 590, 595),
    "ubuntu2404": (470, 535, 550, 560, 565, 570, 575, 580, 590, 595),
}

# Debian non-free: one branch per release.
# Source: apt-cache show nvidia-driver on the Debian mirror, 2026-11-30 (high):
# bookworm 535.261.03-1, trixie 550.163.01-2; nvidia-open-kernel-dkms is in contrib,
# firmware-nvidia-gsp in non-free-firmware, nvidia-persistenced in contrib.
DEBIAN_ARCHIVE_BRANCH = {"debian12": 535, "debian13": 550}
DEBIAN_COMPONENTS = ("main", "contrib", "non-free", "non-free-firmware")

# Flavors per branch. Open modules exist from R515; open is NVIDIA's default from R560; R620 removes the
# proprietary modules (medium: R620 guide table of contents only -> warning, not refusal).
# Source: compat-facts open_kernel_modules (high except the R620 row, medium).
OPEN_FIRST_BRANCH = 515
OPEN_DEFAULT_FROM = 560
PROPRIETARY_REMOVED_FROM = 620  # medium confidence
# Ubuntu/Debian NVIDIA repositories switched to a pin package + unversioned metapackages at R590.
# Source: compat-facts ubuntu_packaging_590_plus (NVIDIA driver guide 'Ubuntu 590 and later packages',
# medium).
PINNING_FROM = 590


def available_branches(os_name, source):
    """Branches ``source`` packages for ``os_name`` (sorted ints)."""
    if source == "nvidia_repo":
        first = NVIDIA_REPO_FIRST_BRANCH[os_name]
        return [b for b in _NVIDIA_BRANCHES_ALL if b >= first]
    family = OS_TABLE[os_name]["family"]
    if family == "ubuntu":
        return list(UBUNTU_ARCHIVE_BRANCHES[os_name])
    if family == "debian":
        return [DEBIAN_ARCHIVE_BRANCH[os_name]]
    return []


def parse_branch_value(value, param="nvidia_driver_branch"):
    """'580' / 'R580' / 580 -> 580; anything else (e.g. '58O', '580.95') -> DriverPlanError."""
    try:
        return parse_version(value, param, 1, 1).major
    except VersionError as exc:
        raise DriverPlanError(str(exc)) from None


# ---------------------------------------------------------------------------------------------------
# Validation of the request (preflight)
# ---------------------------------------------------------------------------------------------------
def validate_request(
    os_name,
    source,
    branch,
    *,
    kernel_module="auto",
    version=None,
    reboot="auto",
    mok_key=None,
    mok_cert=None,
    mok_paths_exist=None,
):
    """Every refusal about the variables, as a list of one-line messages (empty = fine).

    ``mok_paths_exist`` maps each given MOK path to whether it exists on the target.
    """
    errors = []
    if source not in SOURCES:
        errors.append(f"nvidia_driver_source: {source!r} is not allowed; allowed: {', '.join(SOURCES)}")
    if kernel_module not in FLAVORS:
        errors.append(
            f"nvidia_driver_kernel_module: {kernel_module!r} is not allowed; allowed: {', '.join(FLAVORS)}"
        )
    if reboot not in REBOOT_POLICIES:
        errors.append(
            f"nvidia_driver_reboot: {reboot!r} is not allowed; allowed: {', '.join(REBOOT_POLICIES)}"
        )
    branch_int = None
    try:
        branch_int = parse_branch_value(branch)
    except DriverPlanError as exc:
        errors.append(str(exc))
    if branch_int is not None and source in SOURCES and os_name in OS_TABLE:
        avail = available_branches(os_name, source)
        if branch_int not in avail:
            hint = ""
            if source == "distro" and OS_TABLE[os_name]["family"] == "debian":
                hint = (
                    " (Debian ships one branch per release; use nvidia_driver_source: nvidia_repo for others)"
                )
            elif source == "distro" and OS_TABLE[os_name]["family"] == "rhel":
                hint = " (RHEL has no distribution driver; use nvidia_driver_source: nvidia_repo)"
            errors.append(
                f"nvidia_driver_branch: {branch!r} is not a driver branch {source} packages for "
                f"{OS_TABLE[os_name]['label']}; available: {', '.join(str(b) for b in avail) or 'none'}{hint}"
            )
        if kernel_module == "open" and branch_int < OPEN_FIRST_BRANCH:
            errors.append(
                f"nvidia_driver_kernel_module: 'open' needs branch >= {OPEN_FIRST_BRANCH}, "
                f"nvidia_driver_branch is {branch!r}; use proprietary or a newer branch"
            )
    if version not in (None, ""):
        try:
            parsed = parse_version(version, "nvidia_driver_version", 2, 3)
        except VersionError as exc:
            errors.append(str(exc))
        else:
            if branch_int is not None and parsed.major != branch_int:
                errors.append(
                    f"nvidia_driver_version: {version!r} is not in nvidia_driver_branch {branch!r}; "
                    f"set nvidia_driver_branch: '{parsed.major}' or a {branch_int}.x version"
                )
    for name, path in (("nvidia_driver_mok_key", mok_key), ("nvidia_driver_mok_cert", mok_cert)):
        if path in (None, ""):
            continue
        if mok_paths_exist is not None and not mok_paths_exist.get(path, False):
            errors.append(f"{name}: {path!r} does not exist on the host; give the path of an existing file")
    if bool(mok_key) != bool(mok_cert):
        errors.append(
            "nvidia_driver_mok_key and nvidia_driver_mok_cert: give both "
            "(private key and DER/PEM certificate) or neither"
        )
    return errors


# ---------------------------------------------------------------------------------------------------
# Flavor
# ---------------------------------------------------------------------------------------------------
def resolve_flavor(requested, branch, recommended=None):
    """The kernel module flavor to install.

    ``requested`` open/proprietary is kept (nvidia_compat refuses impossible ones); ``auto`` takes
    ``recommended`` (from nvidia_compat, which knows the GPUs) when given, else NVIDIA's default for the
    branch: open from R560, proprietary before (compat-facts open_kernel_modules, high).
    """
    branch = int(branch)
    if requested in ("open", "proprietary"):
        return requested
    if recommended in ("open", "proprietary"):
        return recommended
    if branch >= OPEN_DEFAULT_FROM:
        return "open"
    return "proprietary"


# ---------------------------------------------------------------------------------------------------
# Kernel release -> Ubuntu precompiled module package
# ---------------------------------------------------------------------------------------------------
# Ubuntu kernel releases look like 6.8.0-45-generic; linux-restricted-modules builds
# linux-modules-nvidia-<branch>[-server][-open]-<release> for each (packages.ubuntu.com, medium).
_UBUNTU_RELEASE_RE = re.compile(r"^\d+\.\d+\.\d+-\d+-[a-z][a-z0-9-]*$")


def ubuntu_precompiled_available(kernel_release):
    return bool(kernel_release) and bool(_UBUNTU_RELEASE_RE.match(kernel_release))


def header_packages(os_name, kernel_release):
    """Headers for the running kernel (DKMS builds against them)."""
    family = OS_TABLE[os_name]["family"]
    if not kernel_release:
        return []
    if family in ("ubuntu", "debian"):
        return [f"linux-headers-{kernel_release}"]
    return [f"kernel-devel-{kernel_release}", f"kernel-headers-{kernel_release}"]


# ---------------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------------
def _apt_versioned(name, version):
    return f"{name}={version}*" if version else name


def _dnf_versioned(name, version):
    return f"{name}-{version}" if version else name


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
    """The driver plan for one host (a dict; see RETURN of nvidia_driver_state for the keys).

    ``flavor`` must already be resolved (open or proprietary). ``build_kernel_module`` false (containers,
    where no module can be loaded) keeps only the userspace packages.
    """
    if os_name not in OS_TABLE:
        raise DriverPlanError(
            f"operating system: {os_name!r} is not supported; supported: {', '.join(OS_TABLE)}"
        )
    if source not in SOURCES:
        raise DriverPlanError(
            f"nvidia_driver_source: {source!r} is not allowed; allowed: {', '.join(SOURCES)}"
        )
    if flavor not in ("open", "proprietary"):
        raise DriverPlanError(f"kernel module flavor: {flavor!r} must be resolved to open or proprietary")
    b = parse_branch_value(branch)
    avail = available_branches(os_name, source)
    if b not in avail:
        raise DriverPlanError(
            f"nvidia_driver_branch: {str(branch)!r} is not packaged by {source} "
            f"for {OS_TABLE[os_name]['label']}; "
            f"available: {', '.join(str(x) for x in avail) or 'none'}"
        )
    if flavor == "open" and b < OPEN_FIRST_BRANCH:
        raise DriverPlanError(
            f"nvidia_driver_kernel_module: 'open' needs branch >= {OPEN_FIRST_BRANCH}, got {b}"
        )
    info = OS_TABLE[os_name]
    family = info["family"]
    version = str(version) if version not in (None, "") else None
    plan = {
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
        "fabricmanager_packages": [],
        "fabricmanager_service": "nvidia-fabricmanager",
        "dcgm_packages": [],
        "dcgm_service": "nvidia-dcgm",
        "hold_packages": [],
        "versionlock": False,
        "other_flavor_packages": [],
        "persistenced_packages": [],
        "persistenced_service": "nvidia-persistenced",
        "initramfs_command": list(INITRAMFS_COMMANDS[family]),
        "module_signing_needed_with_secure_boot": False,
        "build_kernel_module": bool(build_kernel_module),
        "warnings": [],
    }
    if flavor == "proprietary" and b >= PROPRIETARY_REMOVED_FROM:
        plan["warnings"].append(
            f"NVIDIA's R{PROPRIETARY_REMOVED_FROM} guide lists the proprietary kernel modules as removed "
            f"(medium confidence): branch {b} may have no proprietary packages; prefer open"
        )
    if source == "nvidia_repo" and family in ("ubuntu", "debian"):
        _plan_nvidia_apt(plan, b, flavor, version)
    elif source == "nvidia_repo":
        _plan_nvidia_dnf(plan, os_name, b, flavor, version)
    elif family == "ubuntu":
        _plan_ubuntu_archive(plan, b, flavor, version, kernel_release=kernel_release, server=ubuntu_server)
    elif family == "debian":
        _plan_debian_archive(plan, flavor)
    else:  # pragma: no cover - validate_request/available_branches refuse distro on RHEL first
        raise DriverPlanError(
            "nvidia_driver_source: 'distro' has no driver packages on RHEL; use nvidia_repo"
        )

    if plan["kernel_build"] == "dkms":
        plan["module_signing_needed_with_secure_boot"] = True
        plan["header_packages"] = header_packages(os_name, kernel_release)
    if not build_kernel_module:
        plan["kernel_packages"] = []
        plan["header_packages"] = []
        plan["module_signing_needed_with_secure_boot"] = False
    if fabricmanager:
        _plan_fabricmanager(plan, os_name, b)
    if dcgm:
        # DCGM 4 packages per CUDA major; R580+ drivers run CUDA 13
        # (compat-facts driver_branch_native_cuda_version).
        major = 13 if b >= 580 else 12
        plan["dcgm_packages"] = ["datacenter-gpu-manager-4-core", f"datacenter-gpu-manager-4-cuda{major}"]
    if plan["pkg_mgr"] == "apt":
        plan["hold_packages"] = _bare_names(
            plan["pin_packages"] + plan["packages"] + plan["kernel_packages"] + plan["fabricmanager_packages"]
        )
    return plan


def _bare_names(names):
    out = []
    for n in names:
        bare = n.split("=", 1)[0]
        if bare not in out:
            out.append(bare)
    return out


def _plan_nvidia_apt(plan, b, flavor, version):
    # NVIDIA repository, Ubuntu and Debian: before R590 branch-named metapackages nvidia-open-<b> (open)
    # and cuda-drivers-<b> (proprietary); from R590 a pin package nvidia-driver-pinning-<b> installed first,
    # then unversioned nvidia-open / cuda-drivers. Source: compat-facts ubuntu_packaging_590_plus (medium),
    # open_kernel_modules 'Packages: nvidia-open vs cuda-drivers' (medium).
    # The metapackages pull DKMS module packages (nvidia-kernel-open-dkms / nvidia-kernel-dkms).
    if b >= PINNING_FROM:
        plan["pin_packages"] = [_apt_versioned(f"nvidia-driver-pinning-{b}", version)]
        open_pkg, prop_pkg = "nvidia-open", "cuda-drivers"
    else:
        open_pkg, prop_pkg = f"nvidia-open-{b}", f"cuda-drivers-{b}"
    main, other = (open_pkg, prop_pkg) if flavor == "open" else (prop_pkg, open_pkg)
    plan["packages"] = [_apt_versioned(main, version)]
    plan["other_flavor_packages"] = [other]
    plan["kernel_packages"] = ["nvidia-kernel-open-dkms" if flavor == "open" else "nvidia-kernel-dkms"]
    plan["kernel_build"] = "dkms"
    plan["persistenced_packages"] = ["nvidia-persistenced"]
    if not plan["build_kernel_module"]:
        # Userspace only (containers): NVIDIA's Debian-style compute packages, no metapackage that pulls DKMS.
        plan["packages"] = ["nvidia-driver-cuda", "nvidia-persistenced"]
        if b < PINNING_FROM:
            plan["pin_packages"] = []
            plan["warnings"].append(
                "userspace-only install from the NVIDIA repository is not branch-locked before R590 "
                "(no pin package): the newest driver userspace in the repository is installed"
            )


def _plan_nvidia_dnf(plan, os_name, b, flavor, version):
    if os_name in ("rhel8", "rhel9"):
        # dnf module streams nvidia-driver:<b>-open (open, DKMS), <b>-dkms (proprietary, DKMS),
        # <b> (precompiled proprietary kmods for the RHEL kernel); profile 'fm' adds fabric manager + NSCQ.
        # Source: NVIDIA/yum-packaging-fabric-manager README (streams XXX, XXX-dkms, latest, latest-dkms; /fm
        # profile, high); compat-facts ubuntu_packaging_590_plus second row (<b>-open / <b>-dkms, high).
        stream = f"{b}-open" if flavor == "open" else f"{b}-dkms"
        plan["dnf_module"] = f"@nvidia-driver:{stream}/default"
        plan["dnf_module_reset"] = "nvidia-driver"
        plan["packages"] = []
        plan["kernel_packages"] = []
        plan["kernel_build"] = "dkms"
        plan["other_flavor_packages"] = (
            ["kmod-nvidia-latest-dkms"] if flavor == "open" else ["kmod-nvidia-open-dkms"]
        )
        if version:
            plan["packages"] = [_dnf_versioned("nvidia-driver", version)]
        if not plan["build_kernel_module"]:
            plan["dnf_module"] = None
            plan["packages"] = [_dnf_versioned("nvidia-driver-cuda", version), "nvidia-persistenced"]
            plan["warnings"].append(
                "userspace-only install on RHEL 8/9 does not enable the module stream: packages are "
                "installed by name and locked with versionlock"
            )
            plan["versionlock"] = True
    else:
        # RHEL 10 has no modularity: plain nvidia-open / cuda-drivers (open: kmod-nvidia-open-dkms,
        # proprietary: kmod-nvidia-latest-dkms) locked to the branch with dnf versionlock.
        # Source: compat-facts ubuntu_packaging_590_plus second row and open_kernel_modules (high/medium).
        main = "nvidia-open" if flavor == "open" else "cuda-drivers"
        other = "cuda-drivers" if flavor == "open" else "nvidia-open"
        pattern = version if version else f"{b}.*"
        plan["packages"] = [f"{main}-{pattern}"]
        plan["other_flavor_packages"] = [other]
        plan["kernel_packages"] = ["kmod-nvidia-open-dkms" if flavor == "open" else "kmod-nvidia-latest-dkms"]
        plan["kernel_build"] = "dkms"
        plan["versionlock"] = True
        if not plan["build_kernel_module"]:
            plan["packages"] = [f"nvidia-driver-cuda-{pattern}", "nvidia-persistenced"]
    plan["persistenced_packages"] = ["nvidia-persistenced"]


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
    # Debian non-free: headless compute set (nvidia-driver itself pulls the X server), the module as DKMS:
    # nvidia-kernel-dkms (non-free, proprietary) or nvidia-open-kernel-dkms (contrib, open); GSP firmware in
    # non-free-firmware.
    # Source: apt-cache show on the Debian mirror for bookworm and trixie, 2026-11-30 (high).
    plan["debian_components"] = list(DEBIAN_COMPONENTS)
    plan["packages"] = [
        "nvidia-smi",
        "libcuda1",
        "libnvidia-ml1",
        "nvidia-kernel-support",
        "firmware-nvidia-gsp",
        "nvidia-persistenced",
    ]
    plan["persistenced_packages"] = ["nvidia-persistenced"]
    if flavor == "open":
        plan["kernel_packages"] = ["nvidia-open-kernel-dkms"]
        plan["other_flavor_packages"] = ["nvidia-kernel-dkms"]
    else:
        plan["kernel_packages"] = ["nvidia-kernel-dkms"]
        plan["other_flavor_packages"] = ["nvidia-open-kernel-dkms"]
    plan["kernel_build"] = "dkms"


def _plan_fabricmanager(plan, os_name, b):
    # Fabric manager (NVSwitch systems) must match the driver branch.
    # Source: NVIDIA/yum-packaging-fabric-manager README (RPM names, /fm profile: high); Ubuntu archive and
    # NVIDIA apt repos nvidia-fabricmanager-<b> + libnvidia-nscq-<b> before R590 (Azure/azhpc-images
    # nvidia-fabricmanager-460 deb, high); unversioned names under the R590 pin package (medium).
    family = plan["family"]
    if family == "debian" and plan["source"] == "distro":
        plan["warnings"].append(
            "Debian does not package NVIDIA fabric manager: "
            "use nvidia_driver_source: nvidia_repo on NVSwitch systems"
        )
        return
    if plan["pkg_mgr"] == "apt":
        if plan["source"] == "nvidia_repo" and b >= PINNING_FROM:
            plan["fabricmanager_packages"] = ["nvidia-fabricmanager", "libnvidia-nscq"]
        else:
            plan["fabricmanager_packages"] = [f"nvidia-fabricmanager-{b}", f"libnvidia-nscq-{b}"]
        return
    if plan["dnf_module"]:
        plan["dnf_module"] = plan["dnf_module"].rsplit("/", 1)[0] + "/fm"
        return
    plan["fabricmanager_packages"] = [f"nvidia-fabric-manager-{b}.*", f"libnvidia-nscq-{b}.*"]


# ---------------------------------------------------------------------------------------------------
# What the kernel says
# ---------------------------------------------------------------------------------------------------
_PROC_VERSION_RE = re.compile(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)")


def parse_proc_version(text):
    """/proc/driver/nvidia/version -> {'version': '580.159.04', 'flavor': 'open'} (None values if unknown)."""
    text = text or ""
    match = _PROC_VERSION_RE.search(text)
    version = match.group(1) if match else None
    if not match:
        return {"version": None, "flavor": None}
    flavor = "open" if "Open Kernel Module" in text else "proprietary"
    return {"version": version, "flavor": flavor}


def flavor_from_license(license_text):
    """modinfo -F license nvidia: 'Dual MIT/GPL' -> open, 'NVIDIA' -> proprietary, else None."""
    lic = (license_text or "").strip()
    if not lic:
        return None
    if "MIT" in lic or "GPL" in lic:
        return "open"
    if lic.upper() == "NVIDIA":
        return "proprietary"
    return None


def branch_of(version):
    """'580.159.04' -> '580' (None if not a version)."""
    if not version:
        return None
    try:
        return str(parse_version(version, "driver version").major)
    except VersionError:
        return None


# ---------------------------------------------------------------------------------------------------
# States that forbid an install
# ---------------------------------------------------------------------------------------------------
def host_managed(container, loaded_version, nvml_paths, nvml_owned_by_package, readonly_driver_mount):
    """Whether the driver is provided from outside (a container runtime or a hypervisor).

    True when a driver is loaded (or its library present) and no package owns the NVML library, and the
    host is a container or the library sits on a read-only mount (e.g. /usr/local/nvidia on the H200 VM).
    Returns (bool, [reasons]).
    """
    reasons = []
    visible = bool(loaded_version) or bool(nvml_paths)
    if not visible:
        return False, []
    if nvml_owned_by_package:
        return False, []
    if container:
        reasons.append("the host is a container")
    if readonly_driver_mount:
        reasons.append(f"the driver libraries are on a read-only mount ({readonly_driver_mount})")
    if not reasons:
        return False, []
    if loaded_version:
        reasons.append(f"driver {loaded_version} is loaded and no package owns libnvidia-ml")
    else:
        reasons.append("libnvidia-ml is present and no package owns it")
    return True, reasons


def host_managed_mismatch(
    requested_branch, requested_flavor, requested_version, loaded_version, loaded_flavor
):
    """Messages for a host-managed driver that is not what was asked (empty list: it matches)."""
    errors = []
    loaded_branch = branch_of(loaded_version)
    req_branch = str(parse_branch_value(requested_branch))
    if loaded_version is None:
        return [
            "the driver is host-managed but no driver is loaded: it cannot be verified against "
            f"nvidia_driver_branch {req_branch!r}; the host (hypervisor or container runtime) must provide it"
        ]
    if loaded_branch != req_branch:
        errors.append(
            f"nvidia_driver_branch: {req_branch!r} was requested but this host's driver is host-managed "
            f"(provided read-only by the hypervisor or container runtime) and runs {loaded_version} "
            f"(branch {loaded_branch}); nothing can be installed here: "
            f"set nvidia_driver_branch: '{loaded_branch}' for this host "
            "or change the driver on the hypervisor"
        )
    if requested_version and str(requested_version) != loaded_version:
        errors.append(
            f"nvidia_driver_version: {requested_version!r} was requested but the host-managed driver is "
            f"{loaded_version}; set nvidia_driver_version: '{loaded_version}' or leave it empty"
        )
    if requested_flavor in ("open", "proprietary") and loaded_flavor and requested_flavor != loaded_flavor:
        errors.append(
            f"nvidia_driver_kernel_module: {requested_flavor!r} was requested but the host-managed driver "
            f"runs the {loaded_flavor} kernel module; "
            f"set nvidia_driver_kernel_module: auto or {loaded_flavor}"
        )
    return errors


RUNFILE_MARKERS = ("/usr/bin/nvidia-uninstall", "/var/log/nvidia-installer.log")


def runfile_conflict(markers_present, nvml_owned_by_package, replace_runfile):
    """(conflict: bool, message). A runfile-installed driver blocks packages unless replacement is allowed."""
    if not markers_present or nvml_owned_by_package:
        return False, ""
    found = ", ".join(markers_present)
    if replace_runfile:
        return False, f"a runfile-installed driver ({found}) will be removed with nvidia-uninstall first"
    return True, (
        f"a driver installed by NVIDIA's runfile was found ({found}); packages would conflict with it. "
        "Set nvidia_driver_replace_runfile: true to uninstall it first (nvidia-uninstall --silent), "
        "or remove it yourself"
    )


# ---------------------------------------------------------------------------------------------------
# Reboot
# ---------------------------------------------------------------------------------------------------
def reboot_decision(
    policy,
    loaded_version,
    loaded_flavor,
    installed_version,
    installed_flavor,
    *,
    changed=False,
    is_controller=False,
    is_container=False,
    host_managed_driver=False,
):
    """Decide the reboot. Returns {'reboot': bool, 'needed': bool, 'reason': str}.

    needed: a kernel module is installed for the running kernel and the loaded one differs from it (other
    version, other flavor, or none loaded). auto reboots when needed; always also when the run changed
    driver packages or kernel configuration; never does not. The controller itself and containers are
    never rebooted; neither is a host-managed driver.
    """
    if policy not in REBOOT_POLICIES:
        raise DriverPlanError(
            f"nvidia_driver_reboot: {policy!r} is not allowed; allowed: {', '.join(REBOOT_POLICIES)}"
        )
    if host_managed_driver:
        return {
            "reboot": False,
            "needed": False,
            "reason": "the driver is host-managed: nothing to reboot for",
        }
    if installed_version is None:
        needed = False
        why = "no NVIDIA kernel module is installed for the running kernel"
        if is_container:
            why += " (a container: kernel modules cannot be built or loaded here)"
    elif loaded_version is None:
        needed = True
        why = f"module {installed_version} is installed but no NVIDIA module is loaded"
    elif loaded_version != installed_version:
        needed = True
        why = f"loaded module {loaded_version} differs from installed {installed_version}"
    elif installed_flavor and loaded_flavor and installed_flavor != loaded_flavor:
        needed = True
        why = f"loaded {loaded_flavor} module differs from installed {installed_flavor} module"
    else:
        needed = False
        why = f"loaded module {loaded_version} is the installed one"
    want = needed if policy == "auto" else (needed or changed) if policy == "always" else False
    if not want:
        if policy == "never" and needed:
            return {
                "reboot": False,
                "needed": True,
                "reason": f"{why}; reboot policy is never: reboot it yourself",
            }
        return {"reboot": False, "needed": needed, "reason": why}
    if is_container:
        return {"reboot": False, "needed": needed, "reason": f"{why}; a container is never rebooted"}
    if is_controller:
        return {
            "reboot": False,
            "needed": needed,
            "reason": f"{why}; this is the Ansible controller itself: never rebooted, reboot it yourself",
        }
    if not needed:
        why = f"{why}; policy always and the run changed the driver"
    return {"reboot": True, "needed": needed, "reason": why}


# ---------------------------------------------------------------------------------------------------
# Changes of state
# ---------------------------------------------------------------------------------------------------
def transition(plan, installed_packages, installed_branches, held_packages):
    """What moving from the installed driver to ``plan`` involves.

    Returns {'kind': 'none'|'install'|'branch_change'|'flavor_switch', 'unhold': [...], 'remove': [...],
    'from_branches': [...]}. A branch change or flavor switch releases the holds on the installed driver
    packages first (held packages block apt), and removes the other flavor's top-level packages.
    """
    installed = set(installed_packages or ())
    branches = sorted(set(installed_branches or ()))
    remove = [p for p in plan["other_flavor_packages"] if p in installed]
    if not installed or not branches:
        kind = "install"
    elif plan["branch"] not in branches or len(branches) > 1:
        kind = "branch_change"
    elif remove:
        kind = "flavor_switch"
    else:
        kind = "none"
    unhold = sorted(held_packages or ()) if kind in ("branch_change", "flavor_switch") else []
    return {"kind": kind, "unhold": unhold, "remove": remove, "from_branches": branches}
