# Copyright: gpufleet contributors
# Apache-2.0
"""Installed packages under a root: the dpkg database read directly, rpm through ``rpm --root``.

Only NVIDIA-related packages are kept (cuDNN, CUDA, driver, NCCL), and those gpufleet's records name, which
keeps this cheap on big hosts. Also whether ansible.builtin.apt could run on the host: python3-apt for this
interpreter, or apt's candidate for it; and gpufleet's records of the packages it installed (its apt pin files
of the cuDNN and CUDA toolkit sets, the driver's record: kb/gpufleet.py), the one reader of them.
"""

from __future__ import annotations

import importlib.util
import re
import sys

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpufleet as kb_gpufleet
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root, run_command, which

RELEVANT = re.compile(
    r"^(lib)?(cudnn|nvidia|cuda|nccl|kmod-nvidia|dkms-nvidia|xserver-xorg-video-nvidia|firmware-nvidia|"
    r"linux-modules-nvidia|datacenter-gpu-manager)"
    # the CUDA component packages without "cuda" in their name (libnvvm-13-0 belongs to cuda-toolkit-13-0)
    r"|^lib(nvvm|nvjitlink|nvfatbin|nvptxcompiler|nvjpeg|cublas|cufft|cufile|curand|cusolver|cusparse|npp)"
    r"|^gds-tools",
    re.IGNORECASE,
)
# The packages of an NVIDIA driver installation (`driver.packages` of the facts, deb and rpm names).
DRIVER_PACKAGES = re.compile(
    r"^(nvidia-|libnvidia-|cuda-drivers|linux-modules-nvidia-|libcuda1$|firmware-nvidia-gsp|kmod-nvidia|"
    r"datacenter-gpu-manager)"
)
DPKG_STATUS = "/var/lib/dpkg/status"
RPM_DB_DIRS = ("/var/lib/rpm", "/usr/lib/sysimage/rpm")
DNF_VERSIONLOCK = ("/etc/dnf/plugins/versionlock.list", "/etc/yum/pluginconf.d/versionlock.list")


def parse_dpkg_status(text, keep=RELEVANT):
    """Installed packages from the text of /var/lib/dpkg/status: {name: {...}} (relevant names only)."""
    packages = {}
    for block in re.split(r"\n\s*\n", text or ""):
        fields = {}
        last = None
        for line in block.splitlines():
            if line[:1] in (" ", "\t"):
                continue  # continuation lines (descriptions, conffiles)
            key, sep, value = line.partition(":")
            if not sep:
                continue
            last = key.strip()
            fields[last] = value.strip()
        name = fields.get("Package")
        if not name or (keep is not None and not keep.search(name)):
            continue
        status = fields.get("Status", "").split()
        if len(status) != 3 or status[2] not in ("installed", "half-configured", "unpacked"):
            continue
        packages[name] = {
            "name": name,
            "version": fields.get("Version", "unknown"),
            "arch": fields.get("Architecture", ""),
            "held": status[0] == "hold",
            "state": status[2],
            "manager": "deb",
            "provides": [p.strip().split(" ")[0] for p in fields.get("Provides", "").split(",") if p.strip()],
        }
    return packages


def dpkg_packages(root, keep=RELEVANT):
    """({name: package}, reason); ({}, None) when there is no dpkg database (not a Debian-like tree)."""
    if not root.exists(DPKG_STATUS):
        return {}, None
    text, reason = root.read_text(DPKG_STATUS, limit=256 * 1024 * 1024)
    if text is None:
        return {}, reason
    return parse_dpkg_status(text, keep), None


def dpkg_files(root, package):
    """Files of an installed deb (from /var/lib/dpkg/info/<name>[:arch].list): (list, reason)."""
    names = [package["name"]]
    if package.get("arch"):
        names.insert(0, "{}:{}".format(package["name"], package["arch"]))
    reason = None
    for name in names:
        path = f"/var/lib/dpkg/info/{name}.list"
        if not root.exists(path):
            continue
        text, reason = root.read_text(path)
        if text is not None:
            return [line.strip() for line in text.splitlines() if line.strip() and line.strip() != "/."], None
    return [], reason or "no file list for {} in /var/lib/dpkg/info".format(package["name"])


def dpkg_owner_anywhere(root, paths):
    """{name, version, manager} of the first deb whose file list (/var/lib/dpkg/info/*.list) has one of
    ``paths`` (in the order of ``paths``), any package; None when none has."""
    names, _reason = root.listdir("/var/lib/dpkg/info")
    wanted = set(paths)
    found = {}
    for entry in names or []:
        if not entry.endswith(".list"):
            continue
        text, _reason = root.read_text(f"/var/lib/dpkg/info/{entry}")
        for line in (text or "").splitlines():
            if line in wanted and line not in found:
                found[line] = entry[: -len(".list")].split(":", 1)[0]
    owner = next((found[path] for path in paths if path in found), None)
    if owner is None:
        return None
    status, _reason = root.read_text(DPKG_STATUS, limit=256 * 1024 * 1024)
    package = parse_dpkg_status(status, keep=re.compile(f"^{re.escape(owner)}$")).get(owner) or {}
    return {"name": owner, "version": package.get("version", ""), "manager": "deb"}


def parse_versionlock(text):
    """Package names locked by the dnf versionlock plugin (lines like `name-0:1.2-3.*`)."""
    names = set()
    for raw in (text or "").splitlines():
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        entry = entry.lstrip("!")
        match = re.match(r"^(.+?)-(?:\d+:)?[^-]+-[^-]+$", entry)
        names.add(match.group(1) if match else entry)
    return names


def rpm_available(root):
    return any(root.isdir(d) and (root.listdir(d)[0] or []) for d in RPM_DB_DIRS)


def rpm_packages(root, timeout=15.0, keep=RELEVANT):
    """({name: package}, reason) through `rpm --root`; ({}, None) when there is no rpm database."""
    if not rpm_available(root):
        return {}, None
    rpm = which("rpm")
    if rpm is None:
        return {}, "an rpm database exists but the rpm command is not available"
    rc, out, _err, reason = run_command(
        [rpm, "--root", root.root, "-qa", "--qf", r"%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\t%{ARCH}\n"],
        timeout=timeout,
    )
    if rc != 0:
        return {}, reason
    locked = set()
    for lock in DNF_VERSIONLOCK:
        if root.exists(lock):
            text, _reason = root.read_text(lock)
            locked |= parse_versionlock(text)
    return parse_rpm_qa(out, locked, keep), None


def parse_rpm_qa(text, locked=(), keep=RELEVANT):
    packages = {}
    for line in (text or "").splitlines():
        parts = line.split("\t")
        if len(parts) < 2 or not keep.search(parts[0]):
            continue
        version = parts[1]
        if version.startswith("0:"):
            version = version[2:]
        packages[parts[0]] = {
            "name": parts[0],
            "version": version,
            "arch": parts[2] if len(parts) > 2 else "",
            "held": parts[0] in locked,
            "state": "installed",
            "manager": "rpm",
            "provides": [],
        }
    return packages


def rpm_files(root, package, timeout=15.0):
    rpm = which("rpm")
    if rpm is None:
        return [], "rpm command not available"
    rc, out, _err, reason = run_command([rpm, "--root", root.root, "-ql", package["name"]], timeout=timeout)
    if rc != 0:
        return [], reason
    return [line.strip() for line in out.splitlines() if line.startswith("/")], None


def plain_version(version):
    """A package version without its epoch ('1:580.95.05-1' -> '580.95.05-1')."""
    return re.sub(r"^[0-9]+:", "", str(version))


def package_manager(root):
    """'apt' (a dpkg database), 'dnf' (an rpm database) or 'none'."""
    if root.exists(DPKG_STATUS):
        return "apt"
    return "dnf" if rpm_available(root) else "none"


class Kept:
    """The names the reader keeps: RELEVANT's, and those gpufleet's records name (a package of a recorded set
    whose name says nothing of NVIDIA, e.g. nsight-compute-*, is still gpufleet's to remove)."""

    def __init__(self, names=()):
        self.names = frozenset(names)

    def search(self, name):
        return name in self.names or RELEVANT.search(name) is not None


class Packages:
    """Both package databases of a root, loaded once, and gpufleet's records of what it installed."""

    def __init__(self, root):
        self.root = root
        self.manager = package_manager(root)
        self.reasons = []
        self.records = records(root)
        keep = Kept(recorded_names(self.records))
        self.deb, reason = dpkg_packages(root, keep)
        if reason:
            self.reasons.append(reason)
        self.rpm, reason = rpm_packages(root, keep=keep)
        if reason:
            self.reasons.append(reason)
        self._files = {}
        self._index = None

    def all(self):
        merged = dict(self.rpm)
        merged.update(self.deb)
        return merged

    def get(self, name):
        return self.deb.get(name) or self.rpm.get(name)

    def files(self, package):
        key = (package["manager"], package["name"])
        if key not in self._files:
            if package["manager"] == "deb":
                self._files[key] = dpkg_files(self.root, package)
            else:
                self._files[key] = rpm_files(self.root, package)
        return self._files[key]

    def path_index(self):
        """{path: package} over the file lists of every relevant package (built once)."""
        if self._index is None:
            self._index = {}
            for package in self.all().values():
                files, _reason = self.files(package)
                for path in files:
                    self._index.setdefault(path, package)
        return self._index

    def owners_of(self, paths, timeout=15.0):
        """{inner path: package name} of those ``paths`` an installed package owns: the file lists of the
        NVIDIA-related debs (cuda-keyring's source and keyring), or one ``rpm -qf`` of the existing paths;
        paths nobody (or no NVIDIA-related deb) owns are left out."""
        if self.deb:
            index = self.path_index()
            return {path: index[path]["name"] for path in paths if path in index}
        existing = [path for path in paths if self.root.exists(path)]
        rpm = which("rpm") if self.rpm and existing else None
        if rpm is None:
            return {}
        rc, out, _err, _reason = run_command(
            [rpm, "--root", self.root.root, "-qf", "--qf", r"%{NAME}\n", "--", *existing], timeout=timeout
        )
        lines = out.splitlines()
        if rc is None or len(lines) != len(existing):
            return {}
        return {path: name for path, name in zip(existing, lines) if " is not owned " not in name}

    def owner_anywhere(self, paths, timeout=15.0):
        """{name, version, manager} of the installed package, any package and not only the NVIDIA-related
        ones this reader keeps, that owns the first of ``paths`` one owns; None when none does or the
        database cannot tell. For a tree whose owner is no NVIDIA package (a site's own package of CUDA):
        rpm -qf, or dpkg's file lists (/var/lib/dpkg/info/*.list) read once."""
        existing = [path for path in paths if self.root.exists(path)]
        if not existing:
            return None
        if self.manager == "apt":
            return dpkg_owner_anywhere(self.root, existing)
        rpm = which("rpm") if self.manager == "dnf" else None
        if rpm is None:
            return None
        qf = r"%{NAME}\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\n"
        rc, out, _err, _reason = run_command(
            [rpm, "--root", self.root.root, "-qf", "--qf", qf, "--", *existing], timeout=timeout
        )
        if rc is None:
            return None
        for line in out.splitlines():  # "file ... is not owned by any package" has no tab
            name, tab, version = line.partition("\t")
            if tab:
                return {"name": name, "version": version.removeprefix("0:"), "manager": "rpm"}
        return None

    def driver_packages(self):
        """Every installed NVIDIA driver package: [{name, version, held}] sorted by name."""
        return [
            {"name": p["name"], "version": p["version"], "held": bool(p["held"])}
            for _key, p in sorted(self.all().items())
            if DRIVER_PACKAGES.match(p["name"])
        ]

    def installed(self, names=None):
        """{name: {version, held}} of the installed packages among ``names`` (None: every package kept);
        version without its epoch (deb: Version; rpm: version-release), held: dpkg hold or dnf versionlock."""
        found = self.all() if names is None else {n: self.get(n) for n in names}
        return {
            name: {"version": plain_version(package["version"]), "held": bool(package.get("held"))}
            for name, package in sorted(found.items())
            if package
        }

    def public(self, package):
        """The package as reported in facts."""
        if not package:
            return None
        return {
            "name": package["name"],
            "version": package["version"],
            "held": bool(package["held"]),
            "manager": package["manager"],
        }


# ---------------------------------------------------------------------------------------------------
# gpufleet's records of the packages it installed (kb/gpufleet.py): what <role>_state: absent removes
# ---------------------------------------------------------------------------------------------------
RECORD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+._-]*\Z")
RECORD_VALUE = re.compile(r"^[A-Za-z0-9*][A-Za-z0-9+._:~*/-]*\Z")
_STANZA_FIELD = re.compile(r"^(Explanation|Package|Pin): (.*)$")


def _managed(text):
    """The text is one of gpufleet's files: its first line (a pin file's first Explanation) says so."""
    first = (text or "").split("\n", 1)[0]
    return _header_line(first)


def _header_line(line):
    """A first line of gpufleet's: a comment or an apt Explanation that says it manages the file."""
    return "Managed by gpufleet" in line and line.startswith(("#", "Explanation:"))


def parse_pin_record(text):
    """[{name, version, owned}] of a pin file gpufleet wrote (install/repo.pin_file): its record of the
    package set it pinned, ``owned`` false for a package that was installed before gpufleet pinned it; [] for
    a file without gpufleet's header (someone else's is never read as gpufleet's record)."""
    if not _managed(text):
        return []
    out = []
    for block in re.split(r"\n\s*\n", text):
        fields = dict(m.groups() for m in map(_STANZA_FIELD.match, block.splitlines()) if m)
        name, pin = fields.get("Package", ""), fields.get("Pin", "")
        version = pin[len("version ") :] if pin.startswith("version ") else ""
        if RECORD_NAME.match(name) and RECORD_VALUE.match(version):
            owned = kb_gpufleet.PIN_NOT_OWNED not in fields.get("Explanation", "")
            out.append({"name": name, "version": version, "owned": owned})
    return out


def parse_driver_record(text):
    """{packages, module, versionlock} of the driver's record (plan/driver/record.py renders it): the
    driver packages gpufleet's installs added, the dnf module stream and the versionlock patterns they set;
    None for a file without gpufleet's header. Lines ``key: value``; a value not one token is skipped."""
    if not _managed(text):
        return None
    out = {"packages": [], "module": None, "versionlock": []}
    for line in text.splitlines()[1:]:
        key, sep, value = line.partition(": ")
        if not sep or not RECORD_VALUE.match(value):
            continue
        if key == "package" and RECORD_NAME.match(value):
            out["packages"].append(value)
        elif key == "module":
            out["module"] = value
        elif key == "versionlock":
            out["versionlock"].append(value)
    return out


def records(root):
    """gpufleet's records on the host: {cudnn, cuda_toolkit: {path, packages: [{name, version, owned}]} or
    None, nvidia_driver: {path, packages, module, versionlock} or None, dir: the names in RECORD_DIR (None:
    no such directory)}. A file without gpufleet's header is no record (None)."""
    out = {}
    for what, path in kb_gpufleet.PIN_FILES.items():
        text, _reason = root.read_text(path) if root.isfile(path) else (None, None)
        found = parse_pin_record(text) if text is not None else []
        out[what] = {"path": path, "packages": found} if found or _managed(text) else None
    path = kb_gpufleet.DRIVER_RECORD
    text, _reason = root.read_text(path) if root.isfile(path) else (None, None)
    driver = parse_driver_record(text) if text is not None else None
    out["nvidia_driver"] = dict(driver, path=path) if driver is not None else None
    top = kb_gpufleet.RECORD_DIR
    names, _reason = root.listdir(top) if root.isdir(top) else (None, None)
    out["dir"] = sorted(names) if names is not None else None
    return out


def recorded_names(found):
    """Every package name gpufleet's records hold."""
    names = set()
    for what in kb_gpufleet.PIN_FILES:
        names |= {p["name"] for p in (found.get(what) or {}).get("packages") or []}
    names |= set((found.get("nvidia_driver") or {}).get("packages") or [])
    return sorted(names)


def record_of(root_path, what):
    """gpufleet's record of ``what`` (cudnn, cuda_toolkit: the pin file; nvidia_driver: the driver's record)
    under ``root_path`` as {path, owned: [names gpufleet installed], manager}, or None: what the removal
    executor checks the plan's names against, read right before it acts."""
    root = Root(root_path)
    found = records(root).get(what)
    if not found:
        return None
    packages = found.get("packages") or []
    owned = [p["name"] for p in packages if p.get("owned")] if what in kb_gpufleet.PIN_FILES else packages
    return {"path": found["path"], "owned": owned, "manager": package_manager(root)}


def pin_record(root_path, what):
    """[{name, version, owned}] of gpufleet's pin file of ``what`` under ``root_path`` (nvidia_repo reads its
    previous set through this, right before it acts)."""
    return (records(Root(root_path)).get(what) or {}).get("packages") or []


APT_EXTENDED_STATES = "/var/lib/apt/extended_states"


def parse_extended_states(text):
    """The names apt marked automatically installed (``Auto-Installed: 1``: pulled in as a dependency)."""
    names = set()
    for block in re.split(r"\n\s*\n", text or ""):
        fields = {
            key.strip(): value.strip()
            for key, sep, value in (line.partition(":") for line in block.splitlines())
            if sep
        }
        if fields.get("Auto-Installed") == "1" and fields.get("Package"):
            names.add(fields["Package"])
    return names


def auto_installed(root_path="/"):
    """The packages apt installed as dependencies (apt-mark showauto), read right before a removal decides
    which of the packages it would take are dependencies and which someone installed (never taken)."""
    root = Root(root_path)
    text, _reason = root.read_text(APT_EXTENDED_STATES, limit=64 * 1024 * 1024)
    return parse_extended_states(text)


NEEDED_BY = re.compile(r"is needed by \(installed\) (\S+)")


def rpm_removal_blockers(root_path, names, timeout=60.0):
    """The installed packages that need one of ``names`` (``rpm -e --test``: what a removal of them would
    break), or None when rpm cannot tell (no rpm, it failed otherwise)."""
    rpm = which("rpm")
    if rpm is None or not names:
        return [] if names == [] else None
    rc, out, err, _reason = run_command(
        [rpm, "--root", Root(root_path).root, "-e", "--test", "--", *names], timeout=timeout
    )
    found = sorted(set(NEEDED_BY.findall(f"{out or ''}\n{err or ''}")))
    if rc is None or (rc != 0 and not found):
        return None
    return found


def installed_state(root_path="/", names=None):
    """{name: {version, held}} of ``names`` (None: every package kept) installed under ``root_path``: one
    read of the package database, for an executor that must know the state right before it acts."""
    return Packages(Root(root_path)).installed(names)


PYTHON_APT = "python3-apt"
APT_CANDIDATE = re.compile(r"^\s*Candidate:\s*(\S+)", re.M)


def python_apt_importable():
    """Whether the interpreter running this code can import apt_pkg (what ansible.builtin.apt needs)."""
    return importlib.util.find_spec("apt_pkg") is not None


def apt_candidate(policy):
    """apt's candidate in `apt-cache policy python3-apt` output: its version, or 'none' when apt has none
    (`Candidate: (none)`, or no python3-apt in apt's lists: empty output)."""
    match = APT_CANDIDATE.search(policy or "")
    if not match or match.group(1) == "(none)":
        return "none"
    return match.group(1)


def python_apt(live, timeout=10.0):
    """({importable, candidate, interpreter} or None, reason) for an apt host.

    Only for a live root (the interpreter and apt of the running system): None with the reason otherwise.
    ``candidate`` is None, with the reason, when apt-cache cannot tell (missing, failed, timed out)."""
    if not live:
        return None, "runtime probe skipped: root is not /"
    fact = {"importable": python_apt_importable(), "candidate": None, "interpreter": sys.executable}
    apt_cache = which("apt-cache")
    if apt_cache is None:
        return fact, "apt-cache is not available"
    rc, out, _err, reason = run_command([apt_cache, "policy", PYTHON_APT], timeout=timeout)
    if rc != 0:
        return fact, f"apt-cache policy {PYTHON_APT}: {reason}"
    fact["candidate"] = apt_candidate(out)
    return fact, None


def owned_by(packages, inner_path):
    """Name of the package that owns a path (looked up in the file lists of the relevant packages)."""
    for package in packages.all().values():
        files, _reason = packages.files(package)
        if inner_path in files:
            return package["name"]
    return None
