# Copyright: gpufleet contributors
# Apache-2.0
"""The NVIDIA driver: the loaded kernel module (/proc/driver/nvidia/version, /sys/module/nvidia), the module
the running kernel would load (modinfo), how it was installed (packages, runfile markers, host-managed),
CUDA driver API version (cuDriverGetVersion via ctypes), Secure Boot (read by probe/host.py); and what an
install would meet: NVIDIA's runfile (its uninstaller and installer log), DKMS trees of the nvidia module
and the package that owns each, the repository each driver package came from (its version string, and the
apt lists when they carry it)."""

from __future__ import annotations

import ctypes
import gzip
import lzma
import os
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.driver import PROC_VERSION_OPEN_MARK
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import boot as probe_boot
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import host as probe_host
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import mok as probe_mok
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import (
    UNKNOWN,
    run_command,
    run_isolated,
    which,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.host import mok_enrolled, secure_boot
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import DRIVER_PACKAGES

__all__ = [
    "dkms_trees",
    "package_origins",
    "parse_installer_log",
    "parse_proc_version",
    "probe",
    "read_loaded_module",
    "read_runfile",
    "secure_boot",
    "version_origin",
]

PROC_VERSION = "/proc/driver/nvidia/version"
SYS_MODULE_VERSION = "/sys/module/nvidia/version"
RUNFILE_UNINSTALLER = "/usr/bin/nvidia-uninstall"
RUNFILE_LOG = "/var/log/nvidia-installer.log"
RUNFILE_MARKERS = (RUNFILE_UNINSTALLER, RUNFILE_LOG)
RUNFILE_INSTALLER = "/usr/bin/nvidia-installer"
# modinfo's license of nvidia -> flavor (high: the open modules are "Dual MIT/GPL", the proprietary "NVIDIA";
# observed on the H200 host and in open-gpu-kernel-modules' kernel-open/nvidia/nv.c MODULE_LICENSE)
MODULE_LICENSES = {"Dual MIT/GPL": "open", "NVIDIA": "proprietary"}
NOT_LIVE = "runtime probe skipped: root is not /"
NO_DRIVER = "no NVIDIA driver found"
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
# Main driver packages, most specific first (deb and rpm names).
DRIVER_PACKAGE = re.compile(
    r"^(nvidia-driver-\d+(-server)?(-open)?|nvidia-open(-\d+)?|nvidia-driver(-cuda)?|cuda-drivers(-\d+)?|"
    r"kmod-nvidia-open-dkms|kmod-nvidia-latest-dkms|nvidia-kernel-open-dkms|nvidia-kernel-dkms|"
    r"nvidia-dkms-\d+(-open)?|nvidia-open-kmod|libnvidia-compute-\d+(-server)?)$"
)


def parse_proc_version(text):
    """{version, kernel_module} from /proc/driver/nvidia/version; None when not recognizable."""
    if not text:
        return None
    first = text.splitlines()[0] if text.splitlines() else ""
    match = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", first)
    if not match:
        return None
    return {
        "version": match.group(1),
        "kernel_module": "open" if PROC_VERSION_OPEN_MARK in first else "proprietary",
    }


def read_loaded_module(root):
    """({version, kernel_module, source} or None, reason) of the loaded nvidia kernel module.

    /proc/driver/nvidia/version gives version and flavor; else /sys/module/nvidia/version gives the version
    only (kernel_module None). ``reason`` says why /proc/driver/nvidia/version did not answer (None when it
    did, or when it is simply absent and nothing else is loaded).
    """
    reason = None
    if root.exists(PROC_VERSION):
        text, reason = root.read_text(PROC_VERSION, limit=65536)
        parsed = parse_proc_version(text)
        if parsed:
            return dict(parsed, source=PROC_VERSION), None
        if text is not None:
            reason = f"unrecognized content in {PROC_VERSION}"
    if root.exists(SYS_MODULE_VERSION):
        text, _reason = root.read_text(SYS_MODULE_VERSION, limit=4096)
        version = (text or "").strip()
        if _VERSION.match(version):
            return {"version": version, "kernel_module": None, "source": SYS_MODULE_VERSION}, reason
    return None, reason


def parse_modules(text):
    return {line.split()[0] for line in (text or "").splitlines() if line.strip()}


def cuda_driver_version(library="libcuda.so.1"):
    """cuDriverGetVersion() (call through run_isolated). Needs no GPU and no cuInit."""
    cuda = ctypes.CDLL(library)
    value = ctypes.c_int()
    rc = cuda.cuDriverGetVersion(ctypes.byref(value))
    if rc != 0:
        raise RuntimeError(f"cuDriverGetVersion returned {rc}")
    return value.value


def format_cuda_int(value):
    """13000 -> '13.0', 12080 -> '12.8'."""
    if not isinstance(value, int) or value <= 0:
        return UNKNOWN
    return f"{value // 1000}.{(value % 1000) // 10}"


def find_driver_package(packages):
    candidates = sorted(
        (p for p in packages.all().values() if DRIVER_PACKAGE.match(p["name"])),
        key=lambda p: (p["name"].startswith("libnvidia-compute"), p["name"]),
    )
    return candidates[0] if candidates else None


def flavor_from_license(text):
    """'Dual MIT/GPL' -> 'open', 'NVIDIA' -> 'proprietary', else None."""
    return MODULE_LICENSES.get((text or "").strip())


# The module's name in the running kernel's tree: nvidia (NVIDIA's packages, Ubuntu, the runfile), and
# nvidia-current on Debian, whose nvidia-kernel-dkms / nvidia-open-kernel-dkms install
# updates/dkms/nvidia-current.ko (dkms.conf DEST_MODULE_NAME="$PACKAGE_NAME"); `modinfo nvidia` does not find
# that one (seen in the lab's Debian 12 guest with 535.309.01, 2026-12-01).
MODULE_NAMES = ("nvidia", "nvidia-current")


# `modinfo NAME` reads the whole module file to find its .modinfo section, decompressing it first when the
# kernel's modules are compressed (Debian 13's DKMS writes nvidia-current.ko.xz, Ubuntu's .ko.zst): for
# NVIDIA's proprietary module that is tens of MB, which took past 10 s on a Debian 13 guest under software
# emulation (driver-vm-debian13, 2026-12-02 and 2026-12-03: "/usr/sbin/modinfo timed out after 10.0s", twice,
# after the reboot and before it). So the probe first asks for the file name only (`modinfo -n`: the module
# index, no decompression), which finds which name exists; then reads every field in one run, under a
# timeout of its own.
MODINFO_TIMEOUT = 60.0


def _modinfo_path(modinfo, name, timeout):
    """(path, reason, answered) of module ``name`` for the running kernel; answered is false when modinfo
    did not finish (timed out, could not run)."""
    rc, out, _err, reason = run_command([modinfo, "-n", name], timeout=timeout)
    path = out.strip() if rc == 0 else ""
    reason = reason or (None if path else f"modinfo reports no file for {name}")
    return path or None, reason, rc is not None


_MODINFO_FIELD = re.compile(r"^(\w+):[ \t]*(.*)$", re.MULTILINE)


def parse_modinfo(text):
    """{field: value} from `modinfo` output ("field:   value" lines; the first of a repeated field)."""
    fields = {}
    for match in _MODINFO_FIELD.finditer(text or ""):
        fields.setdefault(match.group(1), match.group(2).strip())
    return fields


def module_for_running_kernel(live, timeout=10.0):
    """({version, kernel_module}, reason): the nvidia.ko the running kernel would load next (modinfo; Debian's
    nvidia-current.ko when there is no nvidia.ko)."""
    module = {"version": None, "kernel_module": None}
    if not live:
        return module, NOT_LIVE
    modinfo = which("modinfo")
    if modinfo is None:
        return module, "modinfo not found"
    reasons = []
    path = None
    for name in MODULE_NAMES:
        path, reason, answered = _modinfo_path(modinfo, name, timeout)
        if path is not None:
            break
        reasons.append((answered, reason))
    if path is None:
        # a modinfo that did not finish says more than the other name's "not found": the module may be there
        return module, next((r for answered, r in reasons if not answered), reasons[0][1])
    return _module_fields(module, modinfo, name, path, max(timeout, MODINFO_TIMEOUT))


def _module_fields(module, modinfo, name, path, timeout):
    """(module, reason): ``module`` with the version and flavor that one `modinfo NAME` gives."""
    rc, out, _err, reason = run_command([modinfo, name], timeout=timeout)
    fields = parse_modinfo(out) if rc == 0 else {}
    module["version"] = fields.get("version") or None
    if module["version"] is None:
        return module, reason or f"modinfo reports no version for {name} ({path})"
    license_text = fields.get("license")
    module["kernel_module"] = flavor_from_license(license_text)
    if license_text is None:
        return module, f"modinfo reports no license for {name} ({path})"
    if module["kernel_module"] is None:
        return module, f"modinfo: license {license_text!r} names no known flavor"
    return module, None


# ------------------------------------------------------------------ NVIDIA's runfile installer
# nvidia-installer's log (NVIDIA/nvidia-installer at 590.48.01, read 2026-12-01): log.c log_init() opens
# /var/log/nvidia-installer.log with "w" (every run rewrites it) and writes the header line
# "installer version: <v>", NVIDIA_INSTALLER_VERSION being the driver version (Makefile:
# NVIDIA_INSTALLER_VERSION := $(NVIDIA_VERSION)); install-from-cwd.c logs "-> Installing NVIDIA driver version
# <v>." and, once done, "-> Installation of the <description> (version: <v>) is now complete." (wrapped at 79
# columns, log.c LOG_WIDTH), a failed run "Installation has failed."; nvidia-uninstall logs to
# /var/log/nvidia-uninstall.log instead (nvidia-installer.h) and removes the DKMS module it registered
# (backup.c). Real headers in bug reports: microsoft/pai#2040 ("installer version: 384.111"),
# anomixer/proxmox-vgpu-installer#21 ("installer version: 550.90.05"). High.
_VERSION_TEXT = r"(\d+\.\d+(?:\.\d+)?)"
_LOG_COMPLETE = re.compile(r"\(version:\s*" + _VERSION_TEXT + r"\)\s+is\s+now\s+complete")
_LOG_INSTALLING = re.compile(r"Installing\s+NVIDIA\s+driver\s+version\s+" + _VERSION_TEXT)
_LOG_HEADER = re.compile(r"^installer version:\s*" + _VERSION_TEXT + r"\s*$", re.MULTILINE)
_LOG_FAILED = re.compile(r"Installation\s+has\s+failed")


def parse_installer_log(text):
    """{version, completed} from nvidia-installer's log.

    ``version``: the driver the run installed (its completion line, else "Installing NVIDIA driver version",
    else the installer's own version from the header); ``completed``: True (completion line), False (failed,
    or started and not completed), None (the log says neither, e.g. only the header)."""
    done = _LOG_COMPLETE.search(text or "")
    started = _LOG_INSTALLING.search(text or "")
    header = _LOG_HEADER.search(text or "")
    found = done or started or header
    if done:
        completed = True
    elif started or _LOG_FAILED.search(text or ""):
        completed = False
    else:
        completed = None
    return {"version": found.group(1) if found else None, "completed": completed}


def read_runfile(root):
    """(the `runfile` fact {uninstaller, log, version, completed}, reason): paths that exist, else None."""
    runfile, reason = {"uninstaller": None, "log": None, "version": None, "completed": None}, None
    if root.exists(RUNFILE_UNINSTALLER):
        runfile["uninstaller"] = RUNFILE_UNINSTALLER
    if root.exists(RUNFILE_LOG):
        runfile["log"] = RUNFILE_LOG
        text, reason = root.read_text(RUNFILE_LOG, limit=8 * 1024 * 1024)
        runfile.update(parse_installer_log(text))
    return runfile, reason


# ------------------------------------------------------------------ DKMS trees of the nvidia module
# DKMS keeps a module's sources in /usr/src/<module>-<version> and registers it under
# /var/lib/dkms/<module>/<version> (its `source` link points at the sources). The driver's module names:
# nvidia (runfile: misc.c copies the sources to "/usr/src/nvidia-" + version; Ubuntu's nvidia-dkms-<b>,
# NVIDIA's nvidia-kernel(-open)-dkms), nvidia-open (NVIDIA/yum-packaging-dkms-nvidia dkms-open-nvidia.spec:
# dkms_name nvidia-open), nvidia-current(-open) (Debian). Driver versions have a 3-digit major, which leaves
# out other NVIDIA modules (nvidia-fs 2.x, GPUDirect Storage). Packages do not own /var/lib/dkms (dkms add
# creates it): a tree is owned when a driver package's file list holds its source directory.
USR_SRC = "/usr/src"
DKMS_TREE = "/var/lib/dkms"
_DKMS_SOURCE = re.compile(r"^(nvidia(?:-[a-z][a-z0-9]*)*)-(\d{3}\.\d+(?:\.\d+)?)$")
_DKMS_MODULE = re.compile(r"^nvidia(?:-[a-z][a-z0-9]*)*$")
_DKMS_VERSION = re.compile(r"^\d{3}\.\d+(?:\.\d+)?$")
_DKMS_OWNER_FIRST = re.compile(r"dkms|kernel-source|kmod")


def _source_trees(root):
    found = {}
    names, _reason = root.listdir(USR_SRC)
    for name in names or []:
        match = _DKMS_SOURCE.match(name)
        if match and root.isdir(f"{USR_SRC}/{name}"):
            found[match.groups()] = {"source_dir": f"{USR_SRC}/{name}", "dkms_dir": None}
    return found


def _registered_trees(root, found):
    modules, _reason = root.listdir(DKMS_TREE)
    for module in modules or []:
        if not _DKMS_MODULE.match(module):
            continue
        versions, _reason = root.listdir(f"{DKMS_TREE}/{module}")
        for version in versions or []:
            tree = f"{DKMS_TREE}/{module}/{version}"
            if not _DKMS_VERSION.match(version) or not root.isdir(tree):
                continue  # dkms also keeps kernel-<release>-<arch> links here
            source = root.readlink(f"{tree}/source") or f"{USR_SRC}/{module}-{version}"
            entry = found.setdefault((module, version), {"source_dir": source.rstrip("/"), "dkms_dir": None})
            entry["dkms_dir"] = tree
    return found


def _tree_owner(packages, source_dir):
    """Name of the driver package whose file list holds ``source_dir`` (or a file under it), else None."""
    candidates = [
        p for p in packages.all().values() if DRIVER_PACKAGES.match(p["name"]) or "dkms" in p["name"]
    ]
    candidates.sort(key=lambda p: (not _DKMS_OWNER_FIRST.search(p["name"]), p["name"]))
    prefix = source_dir + "/"
    for package in candidates:
        files, _reason = packages.files(package)
        if source_dir in files or any(path.startswith(prefix) for path in files):
            return package["name"]
    return None


def dkms_trees(root, packages):
    """The `dkms` fact: [{module, version, source_dir, dkms_dir, owned_by}] sorted by module and version.

    File lists are read only when a tree exists (the DKMS and kernel-source packages first)."""
    found = _registered_trees(root, _source_trees(root))
    trees = []
    for (module, version), entry in sorted(found.items()):
        trees.append(
            {
                "module": module,
                "version": version,
                "source_dir": entry["source_dir"],
                "dkms_dir": entry["dkms_dir"],
                "owned_by": _tree_owner(packages, entry["source_dir"]),
            }
        )
    return trees


# ------------------------------------------------------------------ where each driver package came from
# dpkg's status keeps no origin; each source writes its versions its own way (checked against real data):
# - "~gpuYY.MM": the graphics-drivers PPA, e.g. 550.78-0ubuntu0~gpu24.04.1 listed from
#   ppa.launchpadcontent.net/graphics-drivers (apt policy quoted in public threads); high.
# - "ubuntu0.YY.MM": the Ubuntu archive's stable updates, e.g. 535.216.01-0ubuntu0.24.04.1 (noble-updates,
#   noble-security), 515.86.01-0ubuntu0.22.04.1 (security.ubuntu.com restricted,
#   NVIDIA/ansible-role-nvidia-driver#72); linux-{modules,objects,signatures}-nvidia-* are Canonical's
#   precompiled modules (versions of the kernel); high.
# - "debNuM" / "~bpoN": Debian's stable, security and backport updates (Debian's version rules); high.
# - "ubuntuN" without "0.": NVIDIA's CUDA repository for Ubuntu, e.g. 580.95.05-0ubuntu1 (cuda-compat-13-0 on
#   the H200, tests/data/h200-ubuntu2404), 575.57.08-0ubuntu1 (NVIDIA/cuda-repo-management#19),
#   580.159.03-1ubuntu1 (ubuntu2204); the archive's release pocket can look the same: medium.
# - "-N" on Ubuntu: NVIDIA's repository (e.g. 470.x-1 fabric manager, NVIDIA/apt-packaging-fabric-manager#3);
#   the archive's NVIDIA packages carry "ubuntu" in the revision: medium. "-N" on Debian: NVIDIA's Debian
#   repository (550.54.15-1, keylase/nvidia-patch#773) and the Debian archive (535.261.03-1 bookworm,
#   550.163.01-2 trixie) look alike: undecided.
# - names only NVIDIA's repositories ship: cuda-drivers*, nvidia-open*, nvidia-driver-pinning-*,
#   nvidia-kernel-open-dkms (Debian's is nvidia-open-kernel-dkms), rpm kmod-nvidia-open-dkms and
#   kmod-nvidia-latest-dkms (NVIDIA/yum-packaging-dkms-nvidia); a package with the same upstream version is
#   taken to be from the same repository: medium. rpm ".elrepo" releases are ELRepo's (high); akmod-nvidia,
#   dkms-nvidia and kmod-nvidia-<kernel> are RPM Fusion's / negativo17's / ELRepo's names (medium).
# What is still medium or undecided is looked up in the apt lists (plain /var/lib/apt/lists/*_Packages, each
# read once, not the archives' big main/universe lists): a list that carries that exact Package/Version
# stanza names the repository.
NVIDIA_ONLY_NAMES = re.compile(
    r"^(cuda-drivers(-\d+)?|nvidia-open(-\d+)?|nvidia-driver-pinning-\d+|nvidia-kernel-open-dkms|"
    r"kmod-nvidia-open-dkms|kmod-nvidia-latest-dkms)$"
)
_CANONICAL_MODULES = re.compile(r"^linux-(modules|objects|signatures)-nvidia-")
_THIRD_PARTY_RPM = re.compile(r"^(akmod-nvidia|dkms-nvidia|kmod-nvidia(-\d.*)?)$")


def _origin(repository, confidence, evidence, candidates=None):
    if candidates is None:
        candidates = [repository] if repository else []
    return {
        "repository": repository,
        "confidence": confidence,
        "candidates": candidates,
        "evidence": evidence,
    }


def upstream_version(version):
    """'3:580.95.05-1.el9' -> '580.95.05'."""
    return re.sub(r"^\d+:", "", str(version or "")).split("-")[0]


def _rpm_origin(name, version):
    if ".elrepo" in version:
        return _origin("elrepo", "high", "an '.elrepo' release: ELRepo")
    if NVIDIA_ONLY_NAMES.match(name):
        return _origin("nvidia_repo", "high", f"{name} is a name only NVIDIA's repository uses")
    if _THIRD_PARTY_RPM.match(name):
        return _origin("other", "medium", f"{name} is an RPM Fusion / negativo17 / ELRepo name")
    return _origin(None, None, "the rpm version does not tell the repository", ["nvidia_repo", "other"])


def _deb_rules(family):
    """(test(name, revision), repository, confidence, evidence, candidates) in the order they apply."""
    plain = "NVIDIA's repository" + ("" if family == "ubuntu" else " or the Debian archive")
    return (
        (lambda n, r: "~gpu" in r, "ubuntu_ppa", "high", "a '~gpu' revision: the graphics-drivers PPA", None),
        (
            lambda n, r: re.search(r"pop\d", r),
            "other",
            "high",
            "a 'pop' revision: Pop!_OS's repository",
            None,
        ),
        (
            lambda n, r: re.search(r"ubuntu0\.\d\d\.\d\d", r),
            "ubuntu_archive",
            "high",
            "an 'ubuntu0.YY.MM' revision: the Ubuntu archive's updates",
            None,
        ),
        (
            lambda n, r: re.search(r"[~+]deb\d+u\d+|~bpo\d+", r),
            "debian_archive",
            "high",
            "a 'debNuM' or 'bpoN' revision: the Debian archive",
            None,
        ),
        (
            lambda n, r: _CANONICAL_MODULES.match(n),
            "ubuntu_archive",
            "high",
            "Canonical's precompiled modules",
            None,
        ),
        (
            lambda n, r: NVIDIA_ONLY_NAMES.match(n),
            "nvidia_repo",
            "medium",
            "a name only NVIDIA's repository uses",
            None,
        ),
        (
            lambda n, r: re.match(r"^\d+ubuntu\d+(\.\d+)?$", r),
            "nvidia_repo",
            "medium",
            "an 'ubuntuN' revision: NVIDIA's repository (or the Ubuntu archive's release pocket)",
            ["nvidia_repo", "ubuntu_archive"],
        ),
        (
            lambda n, r: re.match(r"^\d+$", r),
            "nvidia_repo" if family == "ubuntu" else None,
            "medium" if family == "ubuntu" else None,
            f"a plain '-N' revision: {plain}",
            None if family == "ubuntu" else ["nvidia_repo", "debian_archive"],
        ),
    )


def version_origin(name, version, manager="deb", family=None):
    """{repository, confidence, candidates, evidence} of one package from its name and version (see above).

    ``family``: the host's OS family (ubuntu, debian, rhel or None)."""
    version = str(version or "")
    if manager == "rpm":
        return _rpm_origin(name, version)
    revision = version.rsplit("-", 1)[1] if "-" in version else ""
    for test, repository, confidence, evidence, candidates in _deb_rules(family):
        if test(name, revision):
            return _origin(repository, confidence, evidence, candidates)
    return _origin(None, None, f"the version {version!r} does not tell the repository", [])


def _same_version_as_nvidia_only(packages, origins):
    """Undecided packages at the upstream version of a package only NVIDIA's repository ships."""
    marks = {
        upstream_version(p["version"]): p["name"]
        for p in packages
        if NVIDIA_ONLY_NAMES.match(p["name"]) and origins[p["name"]]["repository"] == "nvidia_repo"
    }
    for package in packages:
        origin, mark = origins[package["name"]], marks.get(upstream_version(package["version"]))
        if mark and origin["repository"] is None and "nvidia_repo" in origin["candidates"]:
            origins[package["name"]] = _origin(
                "nvidia_repo", "medium", f"same version as {mark}, which only NVIDIA's repository ships"
            )


# ------------------------------------------------------------------ the apt lists
APT_LISTS = "/var/lib/apt/lists"
APT_LIST_LIMIT = 96 * 1024 * 1024
_BIG_ARCHIVE_LIST = re.compile(r"_(ubuntu|debian(-security)?)_dists_[^_]+_(main|universe)_")
_LIST_SUFFIXES = {"_Packages": None, "_Packages.gz": gzip.decompress, "_Packages.xz": lzma.decompress}


def list_repository(list_name):
    """The repository an apt list file name (host_path_dists_suite_component_..._Packages) belongs to."""
    if "developer.download.nvidia.com" in list_name:
        return "nvidia_repo", "high"
    if "graphics-drivers_ppa" in list_name:
        return "ubuntu_ppa", "high"
    if re.search(r"_ubuntu_dists_", list_name) and "launchpad" not in list_name:
        return "ubuntu_archive", "high"
    if re.search(r"_debian(-security)?_dists_", list_name):
        return "debian_archive", "high"
    if re.search(r"nvidia|_cuda_", list_name):
        return "nvidia_repo", "medium"  # a mirror named after it
    return "other", "medium"


def _list_text(root, name):
    path = f"{APT_LISTS}/{name}"
    try:
        size = os.path.getsize(root.outer(path))
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    if size > APT_LIST_LIMIT:
        return None, f"{path} is larger than {APT_LIST_LIMIT // (1024 * 1024)} MiB: not read"
    data, reason = root.read_bytes(path, limit=APT_LIST_LIMIT + 1)
    decompress = next((f for s, f in _LIST_SUFFIXES.items() if name.endswith(s)), None)
    try:
        data = decompress(data) if data is not None and decompress else data
    except (OSError, EOFError, lzma.LZMAError) as exc:
        return None, f"cannot decompress {path}: {exc}"
    return (data.decode("utf-8", "replace") if data is not None else None), reason


def _carries(text, name, version):
    """The list holds a stanza `Package: name` with `Version: version`."""
    start = text.find(f"Package: {name}\n")
    while start != -1:
        if start == 0 or text[start - 1] == "\n":
            end = text.find("\n\n", start)
            if f"\nVersion: {version}\n" in text[start : end if end != -1 else len(text)] + "\n":
                return True
        start = text.find(f"Package: {name}\n", start + 1)
    return False


def apt_list_carriers(root, wanted):
    """({(name, version): [list file names]}, reasons) for the wanted deb packages."""
    names, reason = root.listdir(APT_LISTS)
    if names is None:
        return {}, [] if not root.exists(APT_LISTS) else [reason]
    lists = [n for n in names if n.endswith(tuple(_LIST_SUFFIXES)) and not _BIG_ARCHIVE_LIST.search(n)]
    found, reasons = {}, []
    skipped = [n for n in names if n.endswith("_Packages.lz4")]
    if skipped:
        reasons.append(f"{len(skipped)} lz4-compressed apt list(s) not read (no lz4 in the standard library)")
    for name in lists:
        text, why = _list_text(root, name)
        if text is None:
            reasons.append(why)
            continue
        for key in wanted:
            if _carries(text, *key):
                found.setdefault(key, []).append(name)
    return found, reasons


def _from_apt_lists(root, packages, origins, reasons):
    wanted = [
        (p["name"], p["version"])
        for p in packages
        if p.get("manager", "deb") == "deb" and origins[p["name"]]["confidence"] != "high"
    ]
    if not wanted:
        return
    carriers, why = apt_list_carriers(root, wanted)
    if why:
        reasons["package_origins"] = "; ".join(why)
    for name, version in wanted:
        lists = carriers.get((name, version))
        if not lists:
            continue
        found = sorted({list_repository(n) for n in lists})
        repositories = sorted({r for r, _confidence in found})
        evidence = f"listed with this version in {APT_LISTS}/{lists[0]}" + (
            f" (and {len(lists) - 1} more list(s))" if len(lists) > 1 else ""
        )
        if len(repositories) == 1:
            confidence = "high" if all(c == "high" for _repository, c in found) else "medium"
            origins[name] = _origin(repositories[0], confidence, evidence)
        else:
            origins[name] = _origin(None, None, evidence, repositories)


def package_origins(root, packages, family, reasons):
    """{name: origin} of the driver packages ([{name, version, manager}]): version form, NVIDIA-only
    names, then the apt lists for what is not certain yet."""
    origins = {p["name"]: version_origin(p["name"], p["version"], p.get("manager"), family) for p in packages}
    _same_version_as_nvidia_only(packages, origins)
    _from_apt_lists(root, packages, origins, reasons)
    return origins


def empty_driver():
    return {
        "installed": None,
        "version": UNKNOWN,
        "branch": UNKNOWN,
        "kernel_module": UNKNOWN,
        "loaded": None,
        "nouveau_loaded": None,
        "install_method": UNKNOWN,
        "package": None,
        "cuda_driver_version": UNKNOWN,
        "cuda_driver_version_int": None,
        "secure_boot": UNKNOWN,
        "mok_enrolled": None,
        "mok_files": {},
        "loaded_version": None,
        "loaded_kernel_module": None,
        "module_for_running_kernel": {"version": None, "kernel_module": None},
        "packages": [],
        "runfile_markers": [],
        "runfile": {"uninstaller": None, "log": None, "version": None, "completed": None},
        "dkms": [],
        "userspace": {},
        "gsp_firmware": [],
        "versions": {"loaded": None, "userspace": None, "package": None},
        "version_mismatch": None,
        "kernels": [],
        "next_boot": None,
        "boot_pending": {
            "boot_time": None,
            "initramfs_changed": False,
            "module_changed": False,
            "reason": None,
        },
        "reasons": {},
    }


def _loaded_state(root, driver, loaded, proc_reason):
    """`loaded_*`, `loaded` and `nouveau_loaded` from the loaded module and /proc/modules."""
    reasons = driver["reasons"]
    if loaded:
        driver["loaded_version"], driver["loaded_kernel_module"] = loaded["version"], loaded["kernel_module"]
    else:
        reasons["loaded_version"] = proc_reason or (
            f"no nvidia kernel module loaded ({PROC_VERSION} and {SYS_MODULE_VERSION} absent)"
        )
    if driver["loaded_kernel_module"] is None:
        reasons["loaded_kernel_module"] = (
            f"{SYS_MODULE_VERSION} does not say the flavor ({proc_reason or PROC_VERSION + ' absent'})"
            if loaded
            else reasons["loaded_version"]
        )
    modules_text, modules_reason = root.read_text("/proc/modules", limit=4 * 1024 * 1024)
    if modules_text is not None:
        modules = parse_modules(modules_text)
        driver["loaded"] = "nvidia" in modules or loaded is not None
        driver["nouveau_loaded"] = "nouveau" in modules
        return
    if loaded is not None:
        driver["loaded"] = True
    else:
        reasons["loaded"] = modules_reason or "no /proc/modules under root"
    reasons["nouveau_loaded"] = modules_reason or "no /proc/modules under root"


def _version_and_flavor(driver, loaded, proc_reason, gpu_driver_info, packages):
    """`version`, `branch`, `kernel_module`: the loaded module, else NVML/nvidia-smi, else the package."""
    reasons = driver["reasons"]
    package = find_driver_package(packages)
    if loaded:
        driver["version"] = loaded["version"]
        driver["kernel_module"] = loaded["kernel_module"] or UNKNOWN
    elif gpu_driver_info.get("driver_version"):
        driver["version"] = gpu_driver_info["driver_version"]
    elif package:
        driver["version"] = re.sub(r"^\d+:", "", package["version"]).split("-")[0]
    if driver["kernel_module"] == UNKNOWN and package:
        names = " ".join(p for p in packages.all() if p.startswith(("nvidia", "kmod-nvidia", "libnvidia")))
        driver["kernel_module"] = "open" if "-open" in names else "proprietary"
    if driver["kernel_module"] == UNKNOWN:
        reasons["kernel_module"] = proc_reason or (
            reasons["loaded_kernel_module"]
            if loaded
            else "driver kernel module not loaded and no driver package"
        )
    if driver["version"] == UNKNOWN:
        found = (
            proc_reason or f"{PROC_VERSION} absent",
            gpu_driver_info.get("reason"),
            "no driver package installed",
        )
        reasons["version"] = "; ".join(r for r in found if r)
    else:
        driver["branch"] = driver["version"].split(".")[0]
    return package


def _host_managed(root, live, nvml, host):
    """Fill host.driver_managed_externally (the one definition: probe/host.py) from the NVML location."""
    managed, evidence = (None, "")
    if nvml is not None:
        path, real, owner = nvml
        readonly = live and probe_host.is_readonly(root.outer(real))
        managed, evidence = probe_host.driver_managed_externally(
            host.get("container"), path, real, owner, readonly=readonly
        )
    host["driver_managed_externally"] = managed
    host["driver_managed_externally_reason"] = evidence
    if managed is None and nvml is None:
        host["reasons"]["driver_managed_externally"] = evidence or "no NVIDIA driver user-space found"
    return managed, evidence


def _install_method(root, driver, packages, package, *, managed, evidence, nvml, loaded):
    driver["runfile_markers"] = [path for path in RUNFILE_MARKERS if root.exists(path)]
    runfile = root.exists(RUNFILE_MARKERS[0]) or root.exists(RUNFILE_INSTALLER)
    if package and not managed:
        driver["install_method"] = "package"
        driver["package"] = packages.public(package)
    elif managed:
        driver["install_method"] = "host"
    elif runfile:
        driver["install_method"] = "runfile"
    elif nvml is None and loaded is None and package is None:
        driver["install_method"] = "none"
    else:
        driver["reasons"]["install_method"] = (
            evidence or "driver present but neither a package nor a runfile install"
        )
    driver["installed"] = (
        driver["install_method"] in ("package", "host", "runfile") or loaded is not None or (nvml is not None)
    )


def _cuda_driver(driver, live, found, gpu_driver_info, timeout):
    reasons = driver["reasons"]
    if not live:
        reasons["cuda_driver_version"] = NOT_LIVE
        return
    if not found:
        reasons["cuda_driver_version"] = NO_DRIVER
        return
    value, reason = run_isolated(cuda_driver_version, timeout=timeout)
    if value is None and gpu_driver_info.get("cuda_driver_version_int"):
        value = gpu_driver_info["cuda_driver_version_int"]
    if isinstance(value, int):
        driver["cuda_driver_version_int"] = value
        driver["cuda_driver_version"] = format_cuda_int(value)
    else:
        reasons["cuda_driver_version"] = f"cuDriverGetVersion via libcuda.so.1: {reason}"


def _packages_with_origins(root, packages, host, reasons):
    """driver.packages, each with its `origin` (package_origins)."""
    listed = packages.driver_packages()
    for package in listed:
        package["manager"] = (packages.get(package["name"]) or {}).get("manager", "deb")
    family = kb_hosts.os_family((host.get("os") or {}).get("distribution"))
    origins = package_origins(root, listed, family, reasons)
    for package in listed:
        package["origin"] = origins[package["name"]]
    return listed


# ------------------------------------------------------------------ loaded, user space, packages, firmware
# The kernel module and the user-space libraries must be one release: NVML refuses otherwise ("Failed to
# initialize NVML: Driver/library version mismatch"). The open kernel module loads the GSP firmware of its
# own version from /lib/firmware/nvidia/<version>/gsp_*.bin (NVIDIA's open-gpu-kernel-modules README).
FIRMWARE_DIR = "/lib/firmware/nvidia"


def gsp_firmware(root):
    """Driver versions with GSP firmware files (``/lib/firmware/nvidia/<version>/gsp_*.bin``), sorted."""
    real, reason = root.realpath(FIRMWARE_DIR)
    names, _reason = root.listdir(real) if reason is None else (None, None)
    found = []
    for name in names or ():
        files, _reason = root.listdir(f"{real}/{name}") if _VERSION.match(name) else (None, None)
        if any(f.startswith("gsp_") for f in files or ()):
            found.append(name)
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def _versions(root, driver, userspace, package):
    """userspace, gsp_firmware, versions {loaded, userspace, package} and version_mismatch."""
    driver["userspace"] = userspace
    driver["gsp_firmware"] = gsp_firmware(root)
    libs = [u.get("version") for u in userspace.values() if u.get("version")]
    user = libs[0] if libs else None
    upstream = upstream_version(package["version"]) if package else None
    driver["versions"] = {"loaded": driver.get("loaded_version"), "userspace": user, "package": upstream}
    if len(set(libs)) > 1:
        driver["reasons"]["userspace"] = "libnvidia-ml and libcuda are of different versions: " + ", ".join(
            f"{k} {v.get('version')}" for k, v in sorted(userspace.items())
        )
    if driver["loaded_version"] and user:
        driver["version_mismatch"] = driver["loaded_version"] != user or len(set(libs)) > 1
    else:
        driver["reasons"]["version_mismatch"] = (
            "no loaded module to compare"
            if user
            else "no versioned libnvidia-ml/libcuda where the loader finds them "
            "(its cache, glibc's trusted directories)"
        )


def probe(root, live, packages, *, nvml, gpu_driver_info, host, timeout=10.0, userspace=None, mok_paths=()):
    """The `driver` fact. `nvml` is (cache path, real inner path, owning package) or None; `userspace` what
    ldcache.userspace_driver found (libnvidia-ml.so.1 and libcuda.so.1 with their versions); `mok_paths` the
    MOK files to describe (`mok_files`, probe/mok.py)."""
    driver = empty_driver()
    reasons = driver["reasons"]
    loaded, proc_reason = read_loaded_module(root)
    _loaded_state(root, driver, loaded, proc_reason)
    package = _version_and_flavor(driver, loaded, proc_reason, gpu_driver_info, packages)
    managed, evidence = _host_managed(root, live, nvml, host)
    _install_method(
        root, driver, packages, package, managed=managed, evidence=evidence, nvml=nvml, loaded=loaded
    )
    _cuda_driver(driver, live, nvml is not None or loaded is not None, gpu_driver_info, timeout)
    driver["secure_boot"], reason = secure_boot(root)
    if reason:
        reasons["secure_boot"] = reason
    driver["mok_enrolled"], reason = mok_enrolled(root)
    if reason:
        reasons["mok_enrolled"] = reason
    driver["mok_files"], reason = probe_mok.probe(root, mok_paths)
    if reason:
        reasons["mok_files"] = reason
    driver["module_for_running_kernel"], reason = module_for_running_kernel(live, timeout)
    if reason:
        reasons["module_for_running_kernel"] = reason
    driver["runfile"], reason = read_runfile(root)
    if reason:
        reasons["runfile"] = reason
    driver["dkms"] = dkms_trees(root, packages)
    driver["packages"] = _packages_with_origins(root, packages, host, reasons)
    _versions(root, driver, userspace or {}, package)
    boot, reason = probe_boot.probe(
        root, running=host.get("kernel_release"), dkms=driver["dkms"], packages=driver["packages"]
    )
    driver.update(boot)
    if reason:
        reasons["next_boot"] = reason
    if driver["installed"] is False:
        for key in ("version", "kernel_module"):
            reasons[key] = NO_DRIVER
    return driver
