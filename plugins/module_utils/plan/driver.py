# Copyright: gpufleet contributors
# Apache-2.0
"""The NVIDIA driver plan: every decision of the ``nvidia_driver`` role, from the request and the facts.

Pure Python (no I/O), stdlib only, Python >= 3.9: runs on targets inside ``nvidia_driver_plan``, on the
controller in the ``gpufleet.nvidia.driver_*`` filters, and in tests.

Main entry points:

* :func:`decide` -- ``decide(request, facts, compat=None)``: the one plan of a run. ``request`` holds the
  role's variables without their ``nvidia_driver_`` prefix (:data:`REQUEST_DEFAULTS`), ``facts`` what
  ``ansible_facts.nvidia`` holds (docs/facts.md), ``compat`` the result of ``plan.compat.check``. The plan
  says everything the tasks do: packages, locks, services, sources, refusals (``errors``), the reboot now.
* :func:`reboot_after` -- the reboot decision after the install, from a fresh facts read (with
  ``rebooted``: the health check after the role's reboot).
* :func:`kernel_guard` -- the installed kernels DKMS builds for, their missing headers, whether the next
  boot's kernel has a module.
* :func:`build_plan` -- packages / dnf module stream / holds / fabric manager / initramfs per
  OS x source x branch x kernel-module flavor.
* :func:`validate_request` -- every refusal about the user's variables, before any change.
* :func:`existing_driver` -- a driver gpufleet did not install: packages of another repository, DKMS trees
  no package owns (refused unless ``nvidia_driver_existing: replace``, resp. removed by hand).

Knowledge about branches and module flavors is kb/driver.py's, about operating systems kb/hosts.py's, and
the packaging tables (what each source packages, and how) are kb/driver_packages.py's, with their sources.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver as kb_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver_packages as kb_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import (
    VersionError,
    parse_version,
)

SOURCES = ("nvidia_repo", "distro")
FLAVORS = ("auto", "open", "proprietary")
REBOOT_POLICIES = ("auto", "never", "always")
TRISTATE = ("auto", "true", "false")
EXISTING_POLICIES = ("refuse", "replace")

# The role's variables (nvidia_driver_<key>) a plan is made from, with the role's defaults; plus what the
# module adds: whether the MOK files exist and hold a key / a certificate (mok_*_valid: is_private_key,
# is_certificate on their first MOK_READ bytes), the controller test, nvidia_compat's recommendation.
REQUEST_DEFAULTS = {
    "source": "nvidia_repo",
    "branch": "580",
    "version": "",
    "kernel_module": "auto",
    "reboot": "auto",
    "ubuntu_server": True,
    "fabricmanager": "auto",
    "dcgm": False,
    "build_kernel_module": "auto",
    "replace_runfile": False,
    "existing": "refuse",
    "mok_key": "",
    "mok_cert": "",
    "mok_key_exists": None,
    "mok_cert_exists": None,
    "mok_key_valid": None,
    "mok_cert_valid": None,
    "mok_cert_sha256": None,
    "hold": True,
    "persistenced": True,
    "debian_mirror": "",
    "is_controller": False,
    "recommended_kernel_module": None,
}


class DriverPlanError(ValueError):
    """A request no plan can serve (the message names the variable, the value and what is allowed)."""


def _os_label(os_name):
    return kb_hosts.OS_TABLE[os_name]["label"]


def _family(os_name):
    return kb_hosts.OS_TABLE[os_name]["family"]


def available_branches(os_name, source):
    """Branches ``source`` packages for ``os_name`` (sorted ints)."""
    if source == "nvidia_repo":
        first = kb_packages.NVIDIA_REPO_FIRST_BRANCH[os_name]
        return [b for b in sorted(kb_driver.DRIVER_BRANCHES) if b >= first]
    family = _family(os_name)
    if family == "ubuntu":
        return list(kb_packages.UBUNTU_ARCHIVE_BRANCHES[os_name])
    if family == "debian":
        return [kb_packages.DEBIAN_ARCHIVE_BRANCH[os_name]]
    return []


def parse_branch_value(value, param="nvidia_driver_branch"):
    """'580' / 'R580' / 580 -> 580; anything else (e.g. '58O', '580.95') -> DriverPlanError."""
    try:
        return parse_version(value, param, 1, 1).major
    except VersionError as exc:
        raise DriverPlanError(str(exc)) from None


def branch_of(version):
    """'580.159.04' -> '580' (None if not a version)."""
    if not version:
        return None
    try:
        return str(parse_version(version, "driver version").major)
    except VersionError:
        return None


def native_cuda_major(branch):
    """The CUDA major a branch runs natively (kb/driver.py), or None when the knowledge base has none."""
    row = kb_driver.DRIVER_BRANCHES.get(int(branch))
    if not row or not row[2]:
        return None
    return int(row[2].split(".")[0])


# ---------------------------------------------------------------------------------------------------
# Validation of the request (preflight)
# ---------------------------------------------------------------------------------------------------
def _choice_errors(source, kernel_module, reboot):
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
    return errors


def _branch_errors(os_name, source, branch, branch_int, kernel_module):
    errors = []
    if branch_int is None or source not in SOURCES or os_name not in kb_hosts.OS_TABLE:
        return errors
    avail = available_branches(os_name, source)
    if branch_int not in avail:
        hint = ""
        if source == "distro" and _family(os_name) == "debian":
            hint = " (Debian ships one branch per release; use nvidia_driver_source: nvidia_repo for others)"
        elif source == "distro" and _family(os_name) == "rhel":
            hint = " (RHEL has no distribution driver; use nvidia_driver_source: nvidia_repo)"
        errors.append(
            f"nvidia_driver_branch: {branch!r} is not a driver branch {source} packages for "
            f"{_os_label(os_name)}; available: {', '.join(str(b) for b in avail) or 'none'}{hint}"
        )
    first_open = kb_driver.OPEN_MODULES_FIRST_BRANCH
    if kernel_module == "open" and branch_int < first_open:
        errors.append(
            f"nvidia_driver_kernel_module: 'open' needs branch >= {first_open}, "
            f"nvidia_driver_branch is {branch!r}; use proprietary or a newer branch"
        )
    return errors


def _version_errors(version, branch, branch_int):
    if version in (None, ""):
        return []
    try:
        parsed = parse_version(version, "nvidia_driver_version", 2, 3)
    except VersionError as exc:
        return [str(exc)]
    if branch_int is not None and parsed.major != branch_int:
        return [
            f"nvidia_driver_version: {version!r} is not in nvidia_driver_branch {branch!r}; "
            f"set nvidia_driver_branch: '{parsed.major}' or a {branch_int}.x version"
        ]
    return []


# MOK files: the private key is PEM (openssl's "-----BEGIN PRIVATE KEY-----", also RSA/EC/ENCRYPTED), the
# certificate PEM or DER (an X.509 DER certificate is an ASN.1 SEQUENCE with a two-byte length: 0x30 0x82);
# RFC 7468 sections 2, 5 and 10 (PEM labels), X.690 8.1.3 (long-form length), high. Only the first MOK_READ
# bytes are looked at.
MOK_READ = 64 * 1024
_PEM_PRIVATE_KEY = re.compile(rb"^-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----\s*$", re.MULTILINE)
_PEM_CERTIFICATE = re.compile(rb"^-----BEGIN CERTIFICATE-----\s*$", re.MULTILINE)
_MOK_NOT = {
    "nvidia_driver_mok_key": 'is not a private key (PEM "-----BEGIN PRIVATE KEY-----")',
    "nvidia_driver_mok_cert": "is not an X.509 certificate (PEM or DER)",
}


def is_private_key(head):
    """The first bytes of a file hold a PEM private key line."""
    return bool(_PEM_PRIVATE_KEY.search(bytes(head or b"")[:MOK_READ]))


def is_certificate(head):
    """The first bytes of a file are a PEM certificate (its BEGIN line) or a DER one (0x30 0x82)."""
    head = bytes(head or b"")[:MOK_READ]
    return head[:2] == b"\x30\x82" or bool(_PEM_CERTIFICATE.search(head))


_PEM_CERTIFICATE_BODY = re.compile(rb"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.DOTALL)


def certificate_sha256(head):
    """sha256 (hex) of the DER bytes of the certificate at the start of ``head`` (DER, or the first PEM
    CERTIFICATE block), as shim's MokListRT stores it; None when it cannot be told."""
    head = bytes(head or b"")[:MOK_READ]
    if head[:2] == b"\x30\x82":
        length = 4 + int.from_bytes(head[2:4], "big")
        der = head[:length] if len(head) >= length else None
    else:
        found = _PEM_CERTIFICATE_BODY.search(head)
        try:
            der = base64.b64decode(b"".join(found.group(1).split()), validate=True) if found else None
        except (binascii.Error, ValueError):
            der = None
    return hashlib.sha256(der).hexdigest() if der else None


def _mok_errors(mok_key, mok_cert, mok_paths_exist, mok_valid=None):
    errors = []
    for name, path in (("nvidia_driver_mok_key", mok_key), ("nvidia_driver_mok_cert", mok_cert)):
        if path in (None, ""):
            continue
        if mok_paths_exist is not None and not mok_paths_exist.get(path, False):
            errors.append(f"{name}: {path!r} does not exist on the host; give the path of an existing file")
        elif (mok_valid or {}).get(name) is False:
            errors.append(f"{name}: {path!r} {_MOK_NOT[name]}")
    if bool(mok_key) != bool(mok_cert):
        errors.append(
            "nvidia_driver_mok_key and nvidia_driver_mok_cert: give both "
            "(private key and DER/PEM certificate) or neither"
        )
    return errors


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
    mok_valid=None,
    is_controller=False,
):
    """Every refusal about the variables, as a list of one-line messages (empty = fine).

    ``mok_paths_exist`` maps each given MOK path to whether it exists on the target, ``mok_valid`` each
    MOK variable (``nvidia_driver_mok_key``, ``nvidia_driver_mok_cert``) to whether its file holds what it
    must (the key a PEM private key, the certificate PEM or DER; a variable not in it is not judged). By
    variable, not by path: one file given as both is a certificate or a key, never both.
    ``is_controller``: the host is the Ansible controller, which auto/always would reboot.
    """
    errors = _choice_errors(source, kernel_module, reboot)
    if is_controller and reboot in ("auto", "always"):
        errors.append(
            f"nvidia_driver_reboot: {reboot!r} would reboot the Ansible controller itself (connection local "
            "or localhost); set nvidia_driver_reboot: never and reboot it yourself"
        )
    branch_int = None
    try:
        branch_int = parse_branch_value(branch)
    except DriverPlanError as exc:
        errors.append(str(exc))
    errors += _branch_errors(os_name, source, branch, branch_int, kernel_module)
    errors += _version_errors(version, branch, branch_int)
    errors += _mok_errors(mok_key, mok_cert, mok_paths_exist, mok_valid)
    return errors


def tristate(value, name):
    """auto/true/false (also YAML booleans) -> 'auto'|'true'|'false'; DriverPlanError naming the variable."""
    text = str(value).strip().lower() if value is not None else "auto"
    if text in ("yes", "on", "1"):
        text = "true"
    elif text in ("no", "off", "0"):
        text = "false"
    if text not in TRISTATE:
        raise DriverPlanError(f"nvidia_driver_{name}: {value!r} is not allowed; allowed: auto, true, false")
    return text


# ---------------------------------------------------------------------------------------------------
# Flavor
# ---------------------------------------------------------------------------------------------------
def resolve_flavor(requested, branch, recommended=None):
    """The kernel module flavor to install.

    ``requested`` open/proprietary is kept (nvidia_compat refuses impossible ones); ``auto`` takes
    ``recommended`` (from nvidia_compat, which knows the GPUs) when given, else NVIDIA's default for the
    branch (kb/driver.py OPEN_MODULES_DEFAULT_FROM).
    """
    branch = int(branch)
    if requested in ("open", "proprietary"):
        return requested
    if recommended in ("open", "proprietary"):
        return recommended
    if branch >= kb_driver.OPEN_MODULES_DEFAULT_FROM:
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
    family = _family(os_name)
    if not kernel_release:
        return []
    if family in ("ubuntu", "debian"):
        return [f"linux-headers-{kernel_release}"]
    return [f"kernel-devel-{kernel_release}", f"kernel-headers-{kernel_release}"]


# ---------------------------------------------------------------------------------------------------
# The package plan
# ---------------------------------------------------------------------------------------------------
def _apt_versioned(name, version):
    return f"{name}={version}*" if version else name


def _dnf_versioned(name, version):
    return f"{name}-{version}" if version else name


def _check_plan_input(os_name, source, branch, flavor):
    if os_name not in kb_hosts.OS_TABLE:
        raise DriverPlanError(
            f"operating system: {os_name!r} is not supported; supported: {', '.join(kb_hosts.OS_TABLE)}"
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
            f"for {_os_label(os_name)}; "
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
        "fabricmanager_packages": [],
        "fabricmanager_service": kb_packages.FABRICMANAGER_SERVICE,
        "dcgm_packages": [],
        "dcgm_service": kb_packages.DCGM_SERVICE,
        "hold_packages": [],
        "versionlock": False,
        "versionlock_patterns": [],
        "flavor_switch": {"apt_packages": [], "argv": []},
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
        plan["hold_packages"] = _bare_names(
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


def _bare_names(names):
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
        # Userspace only (containers): NVIDIA's Debian-style compute packages, no metapackage that pulls DKMS.
        plan["packages"] = ["nvidia-driver-cuda", "nvidia-persistenced"]
        plan["flavor_switch"] = {"apt_packages": [], "argv": []}
        if b < kb_packages.PINNING_FROM:
            plan["pin_packages"] = []
            plan["warnings"].append(
                "userspace-only install from the NVIDIA repository is not branch-locked before R590 "
                "(no pin package): the newest driver userspace in the repository is installed"
            )


def _plan_nvidia_dnf(plan, os_name, b, flavor, version):
    lock = kb_packages.VERSIONLOCK_PATTERN.format(branch=version or b)
    if os_name in ("rhel8", "rhel9"):
        # dnf module streams nvidia-driver:<b>-open (open, DKMS), <b>-dkms (proprietary, DKMS); profile 'fm'
        # adds fabric manager + NSCQ (_plan_fabricmanager).
        # Source: R620 guide kernel-modules.html, RHEL 8/9 "dnf module enable nvidia-driver:580-open" (high);
        # NVIDIA/yum-packaging-dkms-nvidia README ("XXX-dkms" and "XXX-open" streams: the XXX streams lock
        # driver updates to the branch, high). The stream is installed with its default profile
        # (@nvidia-driver:<stream>/default = enable + install of the profile's packages).
        stream = f"{b}-open" if flavor == "open" else f"{b}-dkms"
        plan["dnf_module"] = f"@nvidia-driver:{stream}/default"
        plan["dnf_module_reset"] = "nvidia-driver"
        plan["packages"] = []
        plan["kernel_packages"] = []
        plan["kernel_build"] = "dkms"
        plan["other_flavor_packages"] = (
            ["kmod-nvidia-latest-dkms"] if flavor == "open" else ["kmod-nvidia-open-dkms"]
        )
        # "dnf -y module switch-to nvidia-driver:<stream> --allowerasing" (DNF_MODULE_SWITCH, high)
        argv = [a.format(module=f"nvidia-driver:{stream}") for a in kb_packages.DNF_MODULE_SWITCH]
        plan["flavor_switch"] = {"apt_packages": [], "argv": argv}
        if version:
            plan["packages"] = [_dnf_versioned("nvidia-driver", version)]
        if not plan["build_kernel_module"]:
            plan["dnf_module"] = None
            plan["flavor_switch"] = {"apt_packages": [], "argv": []}
            plan["packages"] = [_dnf_versioned("nvidia-driver-cuda", version), "nvidia-persistenced"]
            plan["warnings"].append(
                "userspace-only install on RHEL 8/9 does not enable the module stream: packages are "
                "installed by name and locked with versionlock"
            )
            plan["versionlock"] = True
            plan["versionlock_patterns"] = [lock]  # DNF 4 versionlock (version-locking.html, high)
    else:
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
            plan["packages"] = [f"nvidia-driver-cuda-{pattern}", "nvidia-persistenced"]
            plan["flavor_switch"] = {"apt_packages": [], "argv": []}
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


# ---------------------------------------------------------------------------------------------------
# States that forbid an install
# ---------------------------------------------------------------------------------------------------
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


def runfile_conflict(markers_present, nvml_owned_by_package, replace_runfile, version=None, trees=()):
    """(conflict: bool, message). A runfile-installed driver blocks packages unless replacement is allowed.

    ``version``: the driver the runfile installed, as its log says (facts driver.runfile.version);
    ``trees``: the unowned DKMS source directories that are the runfile's (nvidia-uninstall removes them)."""
    if not markers_present or nvml_owned_by_package:
        return False, ""
    found = ", ".join([*markers_present, *(f"DKMS tree {tree}" for tree in trees)])
    if version:
        found = f"driver {version}; {found}"
    if replace_runfile:
        return False, f"a runfile-installed driver ({found}) will be removed with nvidia-uninstall first"
    return True, (
        f"a driver installed by NVIDIA's runfile was found ({found}); packages would conflict with it. "
        "Set nvidia_driver_replace_runfile: true to uninstall it first (nvidia-uninstall --silent, which "
        "also removes the DKMS module it registered), or remove it yourself"
    )


# ---------------------------------------------------------------------------------------------------
# A driver gpufleet did not install: packages of another repository, DKMS trees no package owns
# ---------------------------------------------------------------------------------------------------
# The repositories facts driver.packages[].origin names (probe/driver.py tells them from the version string
# and the apt lists), in the words messages use.
ORIGIN_WORDS = {
    "nvidia_repo": "NVIDIA's CUDA repository",
    "ubuntu_archive": "the Ubuntu archive",
    "ubuntu_ppa": "the graphics-drivers PPA",
    "debian_archive": "the Debian archive",
    "elrepo": "ELRepo",
    "other": "another repository",
}
# The packages that are the driver itself (kernel module, its userspace core, the metapackages): these must
# come from the requested source. Fabric manager, DCGM, the container toolkit, nvidia-settings and the like
# may come from NVIDIA's repositories next to a distribution's driver and are not judged.
_DRIVER_CORE = re.compile(
    r"^(nvidia-driver|nvidia-open|cuda-drivers|nvidia-headless|nvidia-utils-\d|nvidia-dkms-|nvidia-kernel-|"
    r"nvidia-compute-utils-\d|libnvidia-compute|libcuda1$|libnvidia-ml1$|nvidia-smi$|linux-modules-nvidia-|"
    r"kmod-nvidia|akmod-nvidia|dkms-nvidia)"
)


def accepted_origins(source, family):
    """The repositories whose driver packages ``source`` manages on an OS family."""
    if source == "nvidia_repo":
        return ("nvidia_repo",)
    return {"ubuntu": ("ubuntu_archive",), "debian": ("debian_archive",)}.get(family, ())


def _source_of(origin, family):
    """The nvidia_driver_source that manages a repository's packages (None: gpufleet does not)."""
    for source in SOURCES:
        if origin in accepted_origins(source, family):
            return source
    return None


def _origin_of(package):
    origin = package.get("origin")
    return origin if isinstance(origin, dict) else {}


def driver_origins(packages, source, family):
    """({repository: [package]} of driver packages from a repository ``source`` does not manage,
    [package] whose repository the facts could not tell but that may be another one)."""
    accepted = accepted_origins(source, family)
    foreign, undecided = {}, []
    for package in packages or ():
        if not _DRIVER_CORE.match(str(package.get("name") or "")):
            continue
        origin = _origin_of(package)
        repository = origin.get("repository")
        if repository and repository not in accepted:
            foreign.setdefault(repository, []).append(package)
        elif repository is None and set(origin.get("candidates") or ()) - set(accepted):
            undecided.append(package)
    return foreign, undecided


def _listed(packages, limit=3):
    shown = ", ".join(f"{p['name']} {p.get('version', '')}".strip() for p in packages[:limit])
    return shown + (f" and {len(packages) - limit} more" if len(packages) > limit else "")


def foreign_message(repository, packages, source, family, policy):
    """The refusal (refuse) or the notice (replace) for driver packages of another repository."""
    words = ORIGIN_WORDS.get(repository, repository)
    evidence = _origin_of(packages[0]).get("evidence") or "their version"
    head = (
        f"packages {_listed(packages)} (the installed driver) come from {words} ({evidence}), not from "
        f"{ORIGIN_WORDS['nvidia_repo'] if source == 'nvidia_repo' else 'the distribution'} "
        f"(nvidia_driver_source: {source})"
    )
    if policy == "replace":
        return (
            f"nvidia_driver_existing=replace: {head}; they are removed first (package manager remove: their "
            "configuration files stay), then the planned packages are installed"
        )
    keep = _source_of(repository, family)
    choices = [f"nvidia_driver_source: {keep} to keep managing this driver"] if keep else []
    choices += [
        "nvidia_driver_existing: replace to remove these packages first (their configuration files stay)",
        "remove them yourself through the package manager",
    ]
    return (
        f"nvidia_driver_existing=refuse: {head}; installing would mix two repositories' driver packages. "
        f"Choose {', '.join(choices[:-1])}, or {choices[-1]}"
    )


def runfile_owns_tree(tree, runfile):
    """The unowned DKMS tree is the one a present runfile driver registered (module nvidia, its version)."""
    version = (runfile or {}).get("version")
    return (
        bool((runfile or {}).get("uninstaller"))
        and tree.get("module") == "nvidia"
        and (version in (None, tree.get("version")))
    )


def dkms_message(tree):
    """The refusal for a DKMS tree of the nvidia module that no package owns, with the way out."""
    module, version, source_dir = tree.get("module"), tree.get("version"), tree.get("source_dir")
    registered = f", registered in {tree['dkms_dir']}" if tree.get("dkms_dir") else ""
    return (
        f"DKMS tree {source_dir} (module {module} {version}{registered}) that no package owns (a runfile "
        "--dkms install, or one added by hand?): DKMS would keep building it for every kernel next to the "
        f"packaged module. Remove it yourself first: dkms remove -m {module} -v {version} --all, then move "
        f"{source_dir} away (gpufleet never deletes a tree it does not own)"
    )


def _unowned_trees(state):
    """The unowned DKMS trees this run must not install next to, less those the runfile's uninstall takes."""
    runfile_handled = bool(state["runfile_markers"]) and not state["owned_by_package"]
    return [
        tree
        for tree in state["dkms"]
        if not tree.get("owned_by") and not (runfile_handled and runfile_owns_tree(tree, state["runfile"]))
    ]


def existing_driver(req, state, plan):
    """What the installed driver's owners say about this plan (``state``: host_state; ``plan``: build_plan's).

    Returns {'policy', 'foreign': [{name, version, repository}], 'undecided': [names], 'dkms': [trees],
    'replace': [names removed first], 'errors': [...], 'warnings': [...]}. Packages of a repository the
    source does not manage are refused (refuse) or removed first (replace); an unowned DKMS tree of the
    nvidia module is refused (removed by hand) where the plan builds a kernel module.
    """
    policy, family = req["existing"], state["family"]
    foreign, undecided = driver_origins(state["packages"], req["source"], family)
    out = {"policy": policy, "foreign": [], "undecided": [p["name"] for p in undecided], "replace": []}
    out.update(dkms=_unowned_trees(state), errors=[], warnings=[])
    for repository, packages in sorted(foreign.items()):
        message = foreign_message(repository, packages, req["source"], family, policy)
        (out["warnings"] if policy == "replace" else out["errors"]).append(message)
        out["foreign"] += [
            {"name": p["name"], "version": p.get("version"), "repository": repository} for p in packages
        ]
    if policy == "replace":
        out["replace"] = [p["name"] for p in out["foreign"]]
    if undecided:
        out["warnings"].append(
            f"the repository of packages {_listed(undecided)} could not be told "
            f"({_origin_of(undecided[0]).get('evidence')}, and no apt list settles it): taken to be "
            f"nvidia_driver_source {req['source']}'s; if it is another one, remove them first"
        )
    for tree in out["dkms"]:
        (out["errors"] if plan["build_kernel_module"] else out["warnings"]).append(dkms_message(tree))
    return out


# ---------------------------------------------------------------------------------------------------
# Reboot
# ---------------------------------------------------------------------------------------------------
PENDING_REASON = "the initramfs / NVIDIA module of the running kernel changed after this boot"


def no_gpu_note(installed_version):
    """The clear, non-failing state of a module installed where no NVIDIA GPU is present to load it."""
    return f"module {installed_version} installed; not loadable: no NVIDIA GPU present"


def _pending_without_gpu(installed_version, pending):
    """(needed, why) of an installed module that no GPU loads: only a changed boot image counts."""
    pending = pending or {}
    if pending.get("initramfs_changed") or pending.get("module_changed"):
        return True, PENDING_REASON
    return False, no_gpu_note(installed_version)


def _reboot_need(
    loaded_version,
    loaded_flavor,
    installed_version,
    installed_flavor,
    *,
    is_container,
    gpu=True,
    pending=None,
):
    if installed_version is None:
        why = "no NVIDIA kernel module is installed for the running kernel"
        if is_container:
            why += " (a container: kernel modules cannot be built or loaded here)"
        return False, why
    if loaded_version is None and not gpu:
        return _pending_without_gpu(installed_version, pending)
    if loaded_version is None:
        return True, f"module {installed_version} is installed but no NVIDIA module is loaded"
    if loaded_version != installed_version:
        return True, f"loaded module {loaded_version} differs from installed {installed_version}"
    if installed_flavor and loaded_flavor and installed_flavor != loaded_flavor:
        return True, f"loaded {loaded_flavor} module differs from installed {installed_flavor} module"
    return False, f"loaded module {loaded_version} is the installed one"


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
    gpu_present=True,
    boot_pending=None,
):
    """Decide the reboot. Returns {'reboot': bool, 'needed': bool, 'reason': str}. needed: a kernel module
    is installed for the running kernel and the loaded one differs from it (other version, other flavor, or
    none loaded; without an NVIDIA GPU, ``gpu_present`` false, none loaded only when ``boot_pending``, facts
    driver.boot_pending, says the running kernel's initramfs or nvidia module changed after this boot).
    auto reboots when needed; always also when the run changed driver packages or kernel configuration;
    never does not. The controller itself, containers and host-managed drivers are never rebooted."""
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
    needed, why = _reboot_need(
        loaded_version,
        loaded_flavor,
        installed_version,
        installed_flavor,
        is_container=is_container,
        gpu=gpu_present,
        pending=boot_pending,
    )
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
_BRANCH_IN_NAME = re.compile(r"-(\d{3})(?:-|$)")
_BRANCH_FROM_VERSION = ("nvidia-open", "cuda-drivers", "libcuda1", "nvidia-smi", "nvidia-driver")


def installed_branches(packages):
    """Driver branches of installed packages ([{name, version}] as in facts driver.packages), sorted."""
    branches = set()
    for package in packages or ():
        name, version = package.get("name") or "", str(package.get("version") or "")
        match = _BRANCH_IN_NAME.search(name)
        if match and name.startswith(("nvidia-", "cuda-drivers", "linux-modules-nvidia")):
            branches.add(match.group(1))
        elif name in _BRANCH_FROM_VERSION:
            branch = branch_of(version.rsplit(":", 1)[-1].split("-", 1)[0])
            if branch:
                branches.add(branch)
    return sorted(branches)


def transition(plan, installed_packages, installed_branches, held_packages, replaced=()):
    """What moving from the installed driver to ``plan`` involves.

    Returns {'kind': 'none'|'install'|'branch_change'|'flavor_switch'|'source_change', 'unhold': [...],
    'remove': [...], 'from_branches': [...], 'switch_packages': [...], 'switch_argv': [...]}. A branch change
    or flavor switch releases the holds on the installed driver packages first (held packages block apt and
    dnf), and a branch change removes the other flavor's top-level packages. A flavor switch on the same
    branch is NVIDIA's in-place command instead: ``switch_packages`` for ``apt install --autoremove --purge``
    (Debian/Ubuntu), ``switch_argv`` (``dnf module switch-to ... --allowerasing`` on RHEL 8/9,
    ``dnf install --allowerasing ...`` on RHEL 10).
    ``replaced``: packages of another repository that nvidia_driver_existing: replace removes
    first (a source change).
    """
    installed = set(installed_packages or ())
    branches = sorted(set(installed_branches or ()))
    remove = [p for p in plan["other_flavor_packages"] if p in installed]
    remove += [p for p in replaced or () if p not in remove]
    if replaced:
        kind = "source_change"
    elif not installed or not branches:
        kind = "install"
    elif plan["branch"] not in branches or len(branches) > 1:
        kind = "branch_change"
    elif remove:
        kind = "flavor_switch"
    else:
        kind = "none"
    unhold = (
        sorted(held_packages or ()) if kind in ("branch_change", "flavor_switch", "source_change") else []
    )
    switch = plan.get("flavor_switch") or {}
    switch_packages, switch_argv = [], []
    if kind == "flavor_switch" and (switch.get("apt_packages") or switch.get("argv")):
        # NVIDIA's in-place switch (APT_FLAVOR_SWITCH, DNF_*_SWITCH) replaces the other flavor itself
        # (apt --autoremove --purge, dnf --allowerasing): nothing is removed by name first.
        switch_packages, switch_argv = list(switch.get("apt_packages") or []), list(switch.get("argv") or [])
        remove = []
    return {
        "kind": kind,
        "unhold": unhold,
        "remove": remove,
        "from_branches": branches,
        "switch_packages": switch_packages,
        "switch_argv": switch_argv,
    }


# ---------------------------------------------------------------------------------------------------
# What the plan reads of the facts (ansible_facts.nvidia, docs/facts.md)
# ---------------------------------------------------------------------------------------------------
def _section(facts, name):
    value = (facts or {}).get(name)
    return value if isinstance(value, dict) else {}


def _flavor_or_none(value):
    return value if value in ("open", "proprietary") else None


def host_state(facts):
    """The facts fields the plan uses, normalized (absent or unknown values become None/False/[])."""
    host, driver = _section(facts, "host"), _section(facts, "driver")
    os_info = _section(host, "os")
    running = _section(driver, "module_for_running_kernel")
    packages = [p for p in driver.get("packages") or [] if isinstance(p, dict) and p.get("name")]
    return {
        "os_key": os_info.get("key"),
        "distribution": os_info.get("distribution"),
        "os_version": os_info.get("version"),
        "debian_mirror": os_info.get("debian_mirror") or None,
        "kernel_release": host.get("kernel_release") or "",
        "container": host.get("container") not in (None, "none", "unknown"),
        "host_managed": host.get("driver_managed_externally") is True,
        "host_managed_reason": host.get("driver_managed_externally_reason") or "",
        "loaded_version": driver.get("loaded_version") or None,
        "loaded_flavor": _flavor_or_none(driver.get("loaded_kernel_module")),
        "installed_version": running.get("version") or None,
        "installed_flavor": _flavor_or_none(running.get("kernel_module")),
        "installed_reason": _section(driver, "reasons").get("module_for_running_kernel") or "",
        "packages": packages,
        "held": sorted(p["name"] for p in packages if p.get("held")),
        "runfile_markers": list(driver.get("runfile_markers") or []),
        "runfile": driver.get("runfile") if isinstance(driver.get("runfile"), dict) else {},
        "dkms": [t for t in driver.get("dkms") or [] if isinstance(t, dict) and t.get("source_dir")],
        "family": kb_hosts.OS_TABLE.get(os_info.get("key") or "", {}).get("family"),
        "owned_by_package": driver.get("install_method") == "package",
        "secure_boot": driver.get("secure_boot") == "enabled",
        "mok_enrolled": driver.get("mok_enrolled") if isinstance(driver.get("mok_enrolled"), list) else None,
        "mok_enrolled_reason": _section(driver, "reasons").get("mok_enrolled") or "",
        "nvswitch_count": int((facts or {}).get("nvswitch_count") or 0),
        "gpu_present": gpu_present(facts),
        "boot_pending": _section(driver, "boot_pending"),
        "kernels": [k for k in driver.get("kernels") or [] if isinstance(k, dict) and k.get("release")],
        "next_boot": _section(driver, "next_boot"),
    }


def gpu_present(facts):
    """The facts list at least one NVIDIA GPU (``gpus`` non-empty). Facts without a GPU list, or whose gpu
    probe was skipped or failed (``probes.gpu.state`` skipped/unknown), say nothing: taken as present (the
    checks that need a GPU then stay on)."""
    facts = facts or {}
    if facts.get("gpus"):
        return True
    state = _section(_section(facts, "probes"), "gpu").get("state")
    return "gpus" not in facts or state in ("skipped", "unknown")


# ---------------------------------------------------------------------------------------------------
# The plan of a run
# ---------------------------------------------------------------------------------------------------
def normalize_request(request):
    """REQUEST_DEFAULTS updated with the given values (None = not given)."""
    req = dict(REQUEST_DEFAULTS)
    req.update({k: v for k, v in (request or {}).items() if v is not None})
    for key in ("version", "mok_key", "mok_cert", "debian_mirror"):
        req[key] = str(req[key] or "")
    req["branch"] = str(req["branch"])
    return req


def validate(request, facts):
    """Every refusal about the request on this host's OS (one line each, naming the variable)."""
    req, state = normalize_request(request), host_state(facts)
    os_name = state["os_key"]
    if os_name not in kb_hosts.OS_TABLE:
        shown = f"{state['distribution'] or 'unknown'} {state['os_version'] or ''}".strip()
        return [
            f"operating system: {shown} is not supported by nvidia_driver; supported: {kb_hosts.SUPPORTED_OS}"
        ]
    mok_exists, mok_valid = {}, {}
    for key in ("mok_key", "mok_cert"):
        if req[key] and req[f"{key}_exists"] is not None:
            mok_exists[req[key]] = bool(req[f"{key}_exists"])
        if req[key] and req[f"{key}_valid"] is not None:
            mok_valid[f"nvidia_driver_{key}"] = bool(req[f"{key}_valid"])
    errors = validate_request(
        os_name,
        req["source"],
        req["branch"],
        kernel_module=req["kernel_module"],
        version=req["version"],
        reboot=req["reboot"],
        mok_key=req["mok_key"],
        mok_cert=req["mok_cert"],
        mok_paths_exist=mok_exists if mok_exists else None,
        mok_valid=mok_valid,
        # a container or a host-managed driver is never rebooted by the role: nothing to refuse there
        is_controller=bool(req["is_controller"]) and not state["container"] and not state["host_managed"],
    )
    for key in ("fabricmanager", "build_kernel_module"):
        try:
            tristate(req[key], key)
        except DriverPlanError as exc:
            errors.append(str(exc))
    if req["existing"] not in EXISTING_POLICIES:
        allowed = ", ".join(EXISTING_POLICIES)
        errors.append(f"nvidia_driver_existing: {req['existing']!r} is not allowed; allowed: {allowed}")
    return errors


def decide(request, facts, compat=None):
    """The driver plan of one host: a dict with everything the role's tasks do (see the module's RETURN).

    ``compat`` is ``plan.compat.check``'s result for the request (None: not checked); its errors and
    warnings join the plan's, its ``recommended.kernel_module`` resolves ``kernel_module: auto``.
    A plan with ``errors`` must not be executed; ``made`` is false when no package plan could be made.
    """
    req, state = normalize_request(request), host_state(facts)
    errors = validate(req, facts)
    if errors:
        return {"made": False, "errors": errors, "warnings": [], "flavor": None}
    compat = compat or {}
    errors, warnings = list(compat.get("errors") or []), list(compat.get("warnings") or [])
    recommended = (compat.get("recommended") or {}).get("kernel_module") or req["recommended_kernel_module"]
    branch = parse_branch_value(req["branch"])
    flavor = resolve_flavor(req["kernel_module"], branch, recommended)
    if state["host_managed"]:
        errors += host_managed_mismatch(
            req["branch"],
            req["kernel_module"],
            req["version"],
            state["loaded_version"],
            state["loaded_flavor"],
        )
        flavor = state["loaded_flavor"] or flavor
    build = tristate(req["build_kernel_module"], "build_kernel_module")
    fabric = tristate(req["fabricmanager"], "fabricmanager")
    try:
        plan = build_plan(
            state["os_key"],
            req["source"],
            branch,
            flavor,
            version=req["version"],
            kernel_release=state["kernel_release"],
            ubuntu_server=bool(req["ubuntu_server"]),
            fabricmanager=state["nvswitch_count"] > 0 if fabric == "auto" else fabric == "true",
            dcgm=bool(req["dcgm"]),
            build_kernel_module=(not state["container"]) if build == "auto" else build == "true",
        )
    except DriverPlanError as exc:
        return {"made": False, "errors": [*errors, str(exc)], "warnings": warnings, "flavor": flavor}
    _add_state(plan, req, state, errors, warnings)
    _add_tasks(plan, req, state)
    return plan


_NOTHING_EXISTING = {"foreign": [], "undecided": [], "dkms": [], "replace": [], "errors": [], "warnings": []}


def _add_state(plan, req, state, errors, warnings):
    """Host-managed, existing driver, transition, Secure Boot and runfile refusals; the user's warnings."""
    managed = state["host_managed"]
    if managed:  # the host owns the driver: nothing here is gpufleet's to judge or change
        existing = dict(_NOTHING_EXISTING, policy=req["existing"])
        plan["transition"] = {
            "kind": "none",
            "unhold": [],
            "remove": [],
            "from_branches": [],
            "switch_packages": [],
            "switch_argv": [],
        }
    else:
        warnings += plan["warnings"]
        existing = existing_driver(req, state, plan)
        errors += existing["errors"]
        warnings += existing["warnings"]
        plan["transition"] = transition(
            plan,
            [p["name"] for p in state["packages"]],
            installed_branches(state["packages"]),
            state["held"],
            replaced=existing["replace"],
        )
        if state["secure_boot"] and plan["module_signing_needed_with_secure_boot"]:
            refused, unsure = _secure_boot_errors(req, state)
            errors += refused
            warnings += unsure
    plan["existing"] = {k: v for k, v in existing.items() if k not in ("errors", "warnings")}
    _add_runfile(plan, req, state, errors, warnings)
    plan.update(
        made=True,
        errors=errors,
        warnings=warnings,
        host_managed=managed,
        host_managed_reason=state["host_managed_reason"],
        container=state["container"],
        install=not managed,
        mok_signing=state["secure_boot"] and plan["module_signing_needed_with_secure_boot"] and not managed,
    )


def _secure_boot_errors(req, state):
    """(errors, warnings) when Secure Boot is on and DKMS builds the module: a MOK pair must be given, and
    its certificate must be one that shim hands to the kernel (the facts' mok_enrolled, from MokListRT), or
    the module is signed with a key the kernel rejects. A list the facts could not read is a warning."""
    if not req["mok_key"]:
        return [
            "Secure Boot is enabled and the plan builds the nvidia module with DKMS (unsigned): set "
            "nvidia_driver_mok_key and nvidia_driver_mok_cert to a MOK key pair enrolled with "
            "'mokutil --import <cert>' (then reboot to confirm), or disable Secure Boot"
        ], []
    enrolled, digest, cert = state["mok_enrolled"], req["mok_cert_sha256"], req["mok_cert"]
    if enrolled is None:
        why = state["mok_enrolled_reason"] or "the facts hold no MOK list"
        return [], [
            f"nvidia_driver_mok_cert: cannot tell whether {cert!r} is enrolled ({why}); the module will not "
            "load under Secure Boot if it is not (mokutil --test-key tells)"
        ]
    if not digest or digest in enrolled:
        return [], []
    return [
        f"nvidia_driver_mok_cert: {cert!r} is not enrolled (shim's MokListRT holds {len(enrolled)} other "
        f"certificate(s)): run 'mokutil --import {cert}', reboot and confirm the enrollment in MokManager, "
        "then run again"
    ], []


def _add_runfile(plan, req, state, errors, warnings):
    managed = state["host_managed"]
    trees = [
        tree["source_dir"]
        for tree in state["dkms"]
        if not tree.get("owned_by") and runfile_owns_tree(tree, state["runfile"])
    ]
    conflict, message = runfile_conflict(
        state["runfile_markers"],
        state["owned_by_package"],
        bool(req["replace_runfile"]),
        version=state["runfile"].get("version"),
        trees=trees,
    )
    if conflict and not managed:
        errors.append(message)
    elif message:
        warnings.append(message)
    plan["runfile"] = {
        "conflict": conflict,
        "message": message,
        "remove": bool(req["replace_runfile"]) and bool(state["runfile_markers"]) and not managed,
    }


def _dnf_bare(name):
    return re.sub(r"-[0-9][0-9.*]*$", "", name)


def _services(plan, req, state):
    state_wanted = "started" if state["loaded_version"] else None  # without /dev/nvidiactl they exit
    services = []
    if req["persistenced"]:
        services.append({"name": plan["persistenced_service"], "enabled": True, "state": state_wanted})
    if plan["fabricmanager_packages"] or (plan["dnf_module"] or "").endswith("/fm"):
        services.append({"name": plan["fabricmanager_service"], "enabled": True, "state": state_wanted})
    if plan["dcgm_packages"]:
        services.append({"name": plan["dcgm_service"], "enabled": True, "state": state_wanted})
    return services


def _debian_source(plan, req, state):
    if not plan["debian_components"]:
        return {"needed": False, "uri": "", "suites": "", "components": ""}
    codename = kb_packages.DEBIAN_CODENAMES[plan["os"]]
    return {
        "needed": True,
        "uri": req["debian_mirror"] or state["debian_mirror"] or kb_packages.DEBIAN_DEFAULT_MIRROR,
        "suites": f"{codename} {codename}-updates",
        "components": " ".join(plan["debian_components"]),
    }


def _dnf_locks(plan, req, state, apt):
    """The dnf branch lock, the locks released first and the module reset of this run's change."""
    kind = plan["transition"]["kind"]
    patterns = plan["versionlock_patterns"] if req["hold"] and not state["host_managed"] else []
    main_names = {_dnf_bare(p) for p in plan["packages"]}
    return {
        # NVIDIA's branch lock before the install (RHEL 10; RHEL 8/9 userspace only): needed unless the
        # installed driver is this plan's and already locked (VERSIONLOCK_PATTERN's sources).
        "versionlock_patterns": patterns,
        "versionlock_patterns_needed": bool(patterns)
        and (kind != "none" or not main_names & set(state["held"])),
        # dnf: the locks of the installed driver go before a branch change, flavor switch or source change
        "versionlock_delete": list(plan["transition"]["unhold"]) if not apt else [],
        # the stream is reset for a branch change; a flavor switch is `dnf module switch-to` (switch_argv)
        "dnf_module_reset_needed": bool(plan["dnf_module_reset"])
        and (kind == "branch_change" or (kind == "flavor_switch" and not plan["transition"]["switch_argv"])),
    }


def _add_tasks(plan, req, state):
    """What the tasks loop over or test: names, locks, services, sources, verify, reboot now, summary."""
    apt = plan["pkg_mgr"] == "apt"
    install = (
        plan["packages"] + plan["kernel_packages"] + plan["fabricmanager_packages"] + plan["dcgm_packages"]
    )
    expected = [p.split("=", 1)[0] for p in plan["pin_packages"] + install]
    locked = plan["packages"] + plan["kernel_packages"] + plan["fabricmanager_packages"]
    plan.update(
        install_packages=install,
        # DKMS builds for every installed kernel: the headers of those without a module and headers too
        header_packages=_bare_names(plan["header_packages"] + _kernel_guard(plan, state)["header_packages"]),
        hold_names=plan["hold_packages"] if req["hold"] and apt else [],
        versionlock_names=_bare_names([_dnf_bare(p) for p in locked])
        if req["hold"] and plan["versionlock"]
        else [],
        **_dnf_locks(plan, req, state, apt),
        services=_services(plan, req, state),
        initramfs={"command": plan["initramfs_command"], "run": not state["container"]},
        verify={
            "packages": [p for p in expected if "*" not in p],
            "check_packages": apt,
            "branch": plan["branch"],
        },
        debian_source=_debian_source(plan, req, state),
        loaded_version=state["loaded_version"],
    )
    plan["reboot"] = reboot_decision(
        req["reboot"],
        state["loaded_version"],
        state["loaded_flavor"],
        state["installed_version"],
        state["installed_flavor"],
        is_controller=bool(req["is_controller"]),
        is_container=state["container"],
        host_managed_driver=state["host_managed"],
        gpu_present=state["gpu_present"],
        boot_pending=state["boot_pending"],
    )
    plan["touches_host"] = not state["host_managed"] and (
        plan["transition"]["kind"] != "none" or plan["reboot"]["needed"]
    )
    plan["summary"] = _summary(plan, state)
    plan["host_managed_report"] = (
        f"host-managed NVIDIA driver {state['loaded_version']} ({state['loaded_flavor']} kernel module) "
        f"matches nvidia_driver_branch {plan['branch']}; nothing installed or changed "
        f"({state['host_managed_reason']})."
        if state["host_managed"] and not plan.get("errors")
        else ""
    )


def _summary(plan, state):
    head = (
        f"driver branch {plan['branch']} ({plan['flavor']} module) from {plan['source']}; "
        f"loaded {state['loaded_version'] or 'none'}, "
    )
    if state["host_managed"]:
        return f"{head}host-managed ({state['host_managed_reason']})"
    names = " ".join(plan["pin_packages"] + plan["packages"] + plan["kernel_packages"])
    text = f"{head}change: {plan['transition']['kind']}, packages: {names}"
    if plan["dnf_module"]:
        text += f", module stream {plan['dnf_module']}"
    if not plan["build_kernel_module"]:
        text += "; kernel module build skipped (container: module loading is impossible here)"
    return text


# ---------------------------------------------------------------------------------------------------
# After the install (filters gpufleet.nvidia.driver_reboot / driver_unlocked)
# ---------------------------------------------------------------------------------------------------
def reboot_after(plan, facts_after, changed=False, policy="auto", *, is_controller=False, rebooted=False):
    """The reboot decision from the facts read after the install, plus what verify checks.

    Returns reboot_decision's {reboot, needed, reason} and: container, loaded_version, installed_version
    (of the module the running kernel loads), check_running (nvidia-smi must answer with
    installed_version), loaded_in_branch (the loaded module is of the plan's branch), note (what to
    tell the user when the module cannot be checked here; empty otherwise) and failure (``rebooted``: the
    facts are read after the reboot the role did; an installed module that is still not the loaded one on
    a host with an NVIDIA GPU is a failed health check, one line; empty otherwise).
    """
    state = host_state(facts_after)
    decision = reboot_decision(
        policy,
        state["loaded_version"],
        state["loaded_flavor"],
        state["installed_version"],
        state["installed_flavor"],
        changed=bool(changed),
        is_controller=bool(is_controller),
        is_container=state["container"],
        host_managed_driver=state["host_managed"] or bool((plan or {}).get("host_managed")),
        gpu_present=state["gpu_present"],
        boot_pending=state["boot_pending"],
    )
    managed = state["host_managed"] or bool((plan or {}).get("host_managed"))
    failure = _after_reboot_failure(state, plan or {}) if rebooted and not managed else ""
    idle = not state["gpu_present"] and state["installed_version"] and not state["loaded_version"]
    checkable = not state["container"] and bool(state["installed_version"])
    decision.update(
        container=state["container"],
        loaded_version=state["loaded_version"],
        installed_version=state["installed_version"],
        check_running=checkable and (bool(failure) or (not decision["needed"] and not idle)),
        loaded_in_branch=branch_of(state["loaded_version"]) == (plan or {}).get("branch"),
        note=_after_note(state, decision, bool(idle)),
        failure=failure,
    )
    return decision


def _after_note(state, decision, idle):
    if state["container"]:
        return (
            f"{decision['reason']}. Module loading is impossible in a container: only the userspace packages "
            "were installed and checked."
        )
    if idle and decision["needed"]:
        return f"{decision['reason']}. A reboot is pending; the module is not loadable: no NVIDIA GPU present"
    if idle:
        return no_gpu_note(state["installed_version"])
    if decision["needed"]:
        return f"{decision['reason']}. A reboot is needed to load the installed driver."
    return ""


def _after_reboot_failure(state, plan):
    """The health check after the role's reboot: the running kernel has the module the plan builds (any
    host: a reboot into a kernel without it leaves the host without a driver), and on GPU hosts the
    installed module is the loaded one."""
    installed, loaded = state["installed_version"], state["loaded_version"]
    if state["container"]:
        return ""
    if not installed:
        if not plan.get("build_kernel_module"):
            return ""
        why = f" ({state['installed_reason']})" if state["installed_reason"] else ""
        kernel = state["kernel_release"] or "(unknown)"
        return f"health check: after the reboot the running kernel {kernel} has no NVIDIA module{why}"
    if not state["gpu_present"]:
        return ""
    flavors = state["installed_flavor"], state["loaded_flavor"]
    other_flavor = all(flavors) and flavors[0] != flavors[1]
    if loaded == installed and not other_flavor:
        return ""
    if other_flavor:
        installed, loaded = f"{installed} {flavors[0]}", f"{loaded} {flavors[1]}"
    loaded = loaded or "none"
    return f"health check: after the reboot the installed module {installed} is not loaded (loaded: {loaded})"


# Headers DKMS builds another installed kernel's module against: linux-headers-<release> (Debian, Ubuntu),
# kernel-devel-<release> (RHEL; kernel-headers are the userspace headers, one version installed at a time,
# so only the running kernel's are planned, by header_packages), high: the distributions' package names.
def kernel_header_packages(family, release):
    """The header packages of one installed kernel that DKMS builds for."""
    if family in ("ubuntu", "debian"):
        return [f"linux-headers-{release}"]
    return [f"kernel-devel-{release}"]


def kernel_guard(plan, facts):
    """What the installed kernels need for the plan's module, from the facts (driver.kernels, next_boot).

    Returns {build: [releases DKMS builds for: no NVIDIA module, headers present], headers_missing:
    [releases without module and headers], header_packages: [their header packages], next_boot: release or
    None, next_boot_ok: the next boot's kernel has an NVIDIA module (true where no module is built here or
    no next boot is known), message: one line naming the kernel and why not, "" when ok}. Only DKMS plans
    that build the module list kernels to build.
    """
    return _kernel_guard(plan or {}, host_state(facts))


def _kernel_guard(plan, state):
    family = plan.get("family") or state["family"]
    next_boot = state["next_boot"]
    out = {"build": [], "headers_missing": [], "header_packages": [], "next_boot": next_boot.get("kernel")}
    out.update(next_boot_ok=True, message="")
    if not plan.get("build_kernel_module"):
        return out
    dkms = plan.get("kernel_build") == "dkms"
    without = [k for k in state["kernels"] if _section(k, "module").get("kind") == "none"]
    if dkms:
        out["build"] = [k["release"] for k in without if k.get("headers")]
        out["headers_missing"] = [k["release"] for k in without if not k.get("headers")]
        for release in out["headers_missing"]:
            out["header_packages"] += kernel_header_packages(family, release)
    if next_boot and not next_boot.get("has_module"):
        out["next_boot_ok"] = False
        out["message"] = _next_boot_message(plan, state, out, dkms)
    return out


def initramfs_rebuild(plan, facts, *, check_mode=False):
    """The initramfs images to rebuild after the role changed a file they carry (the nouveau blacklist, the
    hook that keeps nouveau out, the module options), from facts read after that change.

    Returns {commands: [argv, ...], kernels: [releases], current: [releases whose image is newer than every
    file it carries: the package install's own rebuild came after the role's files], reason}. Only images
    older than the newest such file (facts ``driver.kernels[].initramfs.stale``) are rebuilt, one command per
    kernel; facts without that field (an older nvidia_facts) get the plan's rebuild of every image. Check mode
    lists every image: the files it would write are newer than all of them. Nothing where the plan runs no
    rebuild (a container boots no initramfs).
    """
    plan = plan or {}
    out = {"commands": [], "kernels": [], "current": [], "reason": ""}
    if not _section(plan, "initramfs").get("run"):
        out["reason"] = "no initramfs is rebuilt here (a container boots none)"
        return out
    state = host_state(facts)
    images = [k for k in state["kernels"] if _section(k, "initramfs").get("path")]
    known = [k for k in state["kernels"] if isinstance(k.get("initramfs"), dict)]
    family = plan.get("family") or state["family"]
    if not known or family not in kb_packages.INITRAMFS_KERNEL_COMMANDS:
        out["commands"] = [
            list(_section(plan, "initramfs").get("command") or kb_packages.INITRAMFS_COMMANDS[family])
        ]
        out["reason"] = "the facts do not say which images carry the new files: every image is rebuilt"
        return out
    stale = images if check_mode else [k for k in images if k["initramfs"].get("stale")]
    out["kernels"] = [k["release"] for k in stale]
    out["current"] = [k["release"] for k in images if k not in stale]
    form = kb_packages.INITRAMFS_KERNEL_COMMANDS[family]
    out["commands"] = [[part.format(release=release) for part in form] for release in out["kernels"]]
    if check_mode:
        out["reason"] = "check mode: the files would be newer than every image"
    elif stale:
        older = sorted({k["initramfs"].get("older_than") or "?" for k in stale})
        out["reason"] = f"older than {', '.join(older)}: {', '.join(out['kernels'])}"
    else:
        out["reason"] = "every image is newer than the files it carries (the package install rebuilt it)"
    return out


def _next_boot_message(plan, state, guard, dkms):
    release = guard["next_boot"]
    head = f"next boot kernel {release} has no NVIDIA module"
    if dkms and release in guard["headers_missing"]:
        packages = " ".join(kernel_header_packages(plan.get("family") or state["family"], release))
        return f"{head}: its headers are missing (install {packages})"
    if dkms:
        return f"{head}: DKMS has not built it"
    running = state["kernel_release"]
    named = " ".join(p.replace(running, release) for p in plan.get("kernel_packages") or () if running in p)
    return f"{head}: no precompiled module package for it" + (
        f" (install {named})" if running and named else ""
    )


def hold_missing(plan, facts):
    """The plan's apt hold names that ``facts`` (dpkg's selections) do not show held yet.

    A run that changes nothing then holds nothing: one ``dpkg_selections`` call per name costs a module run
    each (seconds on a slow host), for a state the facts have already read.
    """
    held = set(host_state(facts)["held"])
    return [name for name in (plan or {}).get("hold_names") or [] if name not in held]


def versionlock_missing(plan, facts):
    """The plan's versionlock names (dnf) that no held package of ``facts`` covers yet."""
    held = set(host_state(facts)["held"])
    return [name for name in (plan or {}).get("versionlock_names") or [] if name not in held]


# ---------------------------------------------------------------------------------------------------
# nvidia_compat input from the request and the facts
# ---------------------------------------------------------------------------------------------------
def compat_gpus(request_gpus, facts):
    """GPU items for plan.compat.check: the request's (nvidia_driver_gpus) when given, else the facts'."""
    if request_gpus:
        return list(request_gpus)
    items = []
    for gpu in (facts or {}).get("gpus") or []:
        known = {k: v for k, v in gpu.items() if v not in (None, "", "unknown")}
        device = known.get("pci_device_id") or known.get("device_id")
        if device:
            item = {"pci_device_id": device}
            subsystem = known.get("pci_subsystem_id") or known.get("subsystem_device_id")
            if subsystem:
                item["pci_subsystem_id"] = subsystem
        elif known.get("compute_capability"):
            item = {"compute_capability": known["compute_capability"]}
        else:
            item = {"name": known.get("name") or "unknown"}
        items.append(item)
    return items


def compat_os(facts):
    """{distribution, version} for plan.compat.check from facts host.os (None when unknown)."""
    os_info = _section(_section(facts, "host"), "os")
    if not os_info.get("distribution"):
        return None
    return {
        "distribution": str(os_info["distribution"]).lower(),
        "version": str(os_info.get("version") or ""),
    }


_COMPAT_NAMES = {
    "cuda_version": "nvidia_driver_cuda_version",
    "driver_branch": "nvidia_driver_branch",
    "driver_version": "nvidia_driver_version",
    "kernel_module": "nvidia_driver_kernel_module",
}
_COMPAT_NAME_RE = re.compile(r"(?<![\w.])(cuda_version|driver_branch|driver_version|kernel_module)\b")


def user_words(text, gave_gpus=False):
    """nvidia_compat's parameter names in a message -> the role's variables (gpus[i] only when given)."""
    text = _COMPAT_NAME_RE.sub(lambda m: _COMPAT_NAMES[m.group(1)], str(text))
    if gave_gpus:
        text = re.sub(r"(?<![\w.])gpus\[", "nvidia_driver_gpus[", text)
    return text
