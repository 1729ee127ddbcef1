# Copyright: gpufleet contributors
# Apache-2.0
"""NVIDIA's CUDA network repository and distro packages: what to configure and install, per OS.

Stdlib only, Python >= 3.9. Pure decisions from data; the ``nvidia_repo`` module and the roles execute.
Every row carries its source. Facts read 2026-11-30 (see the project's reference notes).
"""

from __future__ import annotations

import base64
import hashlib
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import VersionError, parse_version

NVIDIA_REPO_BASE_URL = "https://developer.download.nvidia.com/compute/cuda/repos"

# OS -> repository directory: the OS key of kb/hosts.py (Rocky, AlmaLinux and Oracle Linux use rhelN).
# Source: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html (R580 guide,
# x86_64 table: RHEL/Rocky/Oracle 8-10 -> rhel8..rhel10, Ubuntu 22.04/24.04 -> ubuntu2204/2404,
# Debian 12/13 -> debian12/13) and the R610 guide (AlmaLinux 8-10 -> rhel8..rhel10).
SUPPORTED = kb_hosts.SUPPORTED_OS

# Repository signing keys per directory: key file name in the repo and the full OpenPGP fingerprint.
# 3bf863cc: NVIDIA's 2022 CUDA key for the Ubuntu/Debian repos (cuda-keyring 1.1; the apt error
# "NO_PUBKEY A4B469963BF863CC" names its long id). Source: repository listings
# https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64/3bf863cc.pub and NVIDIA's
# 2022 key-rotation notice; full fingerprint confidence: high.
# 8793F200: debian13 key; fingerprint 02182E60104FCDC26EAE1B8597A5D4CB8793F200 from public provisioning
# code that pins it (confidence: medium). D42D0685 (rhel8/9) and CDF6BA43 (rhel10): key file names from
# the repositories' .repo files; their full fingerprints were not readable here, so the role refuses
# until <role>_repo_key_fingerprint gives one (never trust an unpinned key).
KEYS = {
    "ubuntu2204": ("3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"),
    "ubuntu2404": ("3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"),
    "debian12": ("3bf863cc.pub", "EB693B3035CD5710E231E123A4B469963BF863CC"),
    "debian13": ("8793F200.pub", "02182E60104FCDC26EAE1B8597A5D4CB8793F200"),
    "rhel8": ("D42D0685.pub", ""),
    "rhel9": ("D42D0685.pub", ""),
    "rhel10": ("CDF6BA43.pub", ""),
}

# Distro archive CUDA toolkits (package nvidia-cuda-toolkit; Debian: non-free, Ubuntu: multiverse).
# Sources: https://packages.debian.org/bookworm/nvidia-cuda-toolkit (11.8.89~11.8.0-5~deb12u1),
# https://packages.debian.org/trixie/nvidia-cuda-toolkit (12.4.131~12.4.1-2),
# https://packages.ubuntu.com/jammy/nvidia-cuda-toolkit (11.5.1-1ubuntu1),
# https://packages.ubuntu.com/noble/nvidia-cuda-toolkit (12.0.140~12.0.1-4build4). Confidence: medium.
DISTRO_CUDA = {
    "debian12": ("11.8", "non-free"),
    "debian13": ("12.4", "non-free"),
    "ubuntu2204": ("11.5", "multiverse"),
    "ubuntu2404": ("12.0", "multiverse"),
}

# cuDNN 8.9.x packages carry the CUDA they were built with: libcudnn8=<ver>-1+cuda<X.Y>.
# Source: NVIDIA repo Packages indexes (e.g. ubuntu2204/x86_64: libcudnn8 8.9.7.29-1+cuda12.2 and
# 8.9.7.29-1+cuda11.8). Other 8.x builds: a version wildcard (+cuda<major>.*) lets the package manager pick.
CUDNN8_CUDA = {("8.9.7", 12): "12.2", ("8.9.7", 11): "11.8"}


class RepoPlanError(ValueError):
    """A clear one-line reason (names the variable and what is allowed)."""


def repo_dir(distribution, version, var="ansible_facts.distribution"):
    """The NVIDIA repository directory for an OS: its OS key (kb/hosts.os_key), where NVIDIA has one."""
    key = kb_hosts.os_key(distribution, version)
    if key not in KEYS:
        raise RepoPlanError(
            f"{var}: {distribution} {version} has no NVIDIA CUDA repository supported by gpufleet; "
            f"supported: {SUPPORTED}"
        )
    return key


def is_deb(rdir):
    return rdir.startswith(("ubuntu", "debian"))


def repo_url(rdir, arch="x86_64", base_url=""):
    return "{}/{}/{}/".format((base_url or NVIDIA_REPO_BASE_URL).rstrip("/"), rdir, arch)


def repo_arch(machine):
    """Repository arch directory: x86_64 (also for amd64 hosts) or sbsa (arm64 servers); kb/hosts.py."""
    return kb_hosts.repo_arch(machine)


URL_SCHEMES = ("http://", "https://", "file:/")


def check_base_url(base_url, var="<role>_repo_base_url"):
    """A mirror of NVIDIA's .../compute/cuda/repos: http(s) or file URLs only (apt fetches it)."""
    url = str(base_url or "")
    if url and (not url.startswith(URL_SCHEMES) or any(c.isspace() for c in url)):
        raise RepoPlanError(
            bad(
                var,
                repr(url),
                "an http://, https:// or file:/ URL of a mirror of NVIDIA's repositories, or empty for "
                f"{NVIDIA_REPO_BASE_URL}",
            )
        )
    return url


def repo_config(distribution, version, machine="x86_64", base_url="", fingerprint="", *, prefix="<role>"):
    """Everything the nvidia_repo role writes: key URL, pinned fingerprint, keyring and repo file.

    ``prefix`` names the role whose variables these are (cudnn, cuda_toolkit) in the error messages."""
    check_base_url(base_url, f"{prefix}_repo_base_url")
    rdir = repo_dir(distribution, version)
    arch = repo_arch(machine)
    url = repo_url(rdir, arch, base_url)
    key_name, pinned = KEYS[rdir]
    fpr = normalize_fingerprint(fingerprint or pinned, f"{prefix}_repo_key_fingerprint")
    if is_deb(rdir):
        keyring = "/etc/apt/keyrings/gpufleet-nvidia-cuda.asc"
        path = "/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources"
        content = render_deb822(url, keyring)
    else:
        keyring = "/etc/pki/rpm-gpg/RPM-GPG-KEY-gpufleet-nvidia-cuda"
        path = "/etc/yum.repos.d/gpufleet-nvidia-cuda.repo"
        content = render_dnf_repo(url, keyring)
    return {
        "repo_dir": rdir,
        "arch": arch,
        "url": url,
        "key_url": url + key_name,
        "key_fingerprint": fpr,
        "keyring": keyring,
        "path": path,
        "content": content,
        "manager": "apt" if is_deb(rdir) else "dnf",
    }


def render_deb822(url, keyring):
    # NVIDIA's repositories are flat (Suites: /), as cuda-keyring's own source line "deb [...] <url> /".
    return (
        "# Managed by gpufleet (nvidia_repo): NVIDIA CUDA repository\n"
        "Types: deb\n"
        f"URIs: {url}\n"
        "Suites: /\n"
        f"Signed-By: {keyring}\n"
    )


def render_dnf_repo(url, keyring):
    return (
        "# Managed by gpufleet (nvidia_repo): NVIDIA CUDA repository\n"
        "[gpufleet-nvidia-cuda]\n"
        "name=NVIDIA CUDA\n"
        f"baseurl={url}\n"
        "enabled=1\n"
        "gpgcheck=1\n"
        f"gpgkey=file://{keyring}\n"
    )


# ---------------------------------------------------------------------------------------------------
# OpenPGP key fingerprint (v4): SHA-1 over 0x99 | len16 | public-key packet body (RFC 4880 12.2)
# ---------------------------------------------------------------------------------------------------
def normalize_fingerprint(text, var="key fingerprint"):
    fpr = re.sub(r"\s+", "", str(text or "")).upper()
    if fpr and not re.match(r"^[0-9A-F]{40}\Z", fpr):
        raise RepoPlanError(
            bad(
                var,
                repr(text),
                "40 hex digits (spaces allowed), the key's full OpenPGP fingerprint, or empty",
            )
            + ": it is not 40 hex digits"
        )
    return fpr


def dearmor(data):
    """Binary OpenPGP data from an ASCII-armored block (or the bytes unchanged if already binary)."""
    text = data.decode("ascii", "replace") if isinstance(data, (bytes, bytearray)) else data
    if "-----BEGIN PGP" not in text:
        return bytes(data) if isinstance(data, (bytes, bytearray)) else text.encode("latin-1")
    body = text.split("-----BEGIN PGP", 1)[1].split("\n", 1)[1]
    body = body.split("-----END PGP", 1)[0]
    lines = body.strip().splitlines()
    # skip armor headers (until the first empty line), drop the CRC line
    if any(not line.strip() for line in lines):
        lines = lines[[i for i, line in enumerate(lines) if not line.strip()][0] + 1 :]
    lines = [line.strip() for line in lines if line.strip() and not line.startswith("=")]
    try:
        return base64.b64decode("".join(lines), validate=False)
    except (ValueError, TypeError):
        raise RepoPlanError("the key is not valid ASCII-armored OpenPGP data") from None


def _packets(data):
    i = 0
    while i < len(data):
        tag_byte = data[i]
        if not tag_byte & 0x80:
            raise RepoPlanError("the key is not OpenPGP data")
        if tag_byte & 0x40:  # new format
            tag = tag_byte & 0x3F
            first = data[i + 1]
            if first < 192:
                length, hdr = first, 2
            elif first < 224:
                length, hdr = ((first - 192) << 8) + data[i + 2] + 192, 3
            elif first == 255:
                length, hdr = int.from_bytes(data[i + 2 : i + 6], "big"), 6
            else:
                raise RepoPlanError("partial-length packets are not expected in a key")
        else:
            tag = (tag_byte >> 2) & 0x0F
            ltype = tag_byte & 0x03
            size = {0: 1, 1: 2, 2: 4}.get(ltype)
            if size is None:
                raise RepoPlanError("indeterminate-length packets are not expected in a key")
            length, hdr = int.from_bytes(data[i + 1 : i + 1 + size], "big"), 1 + size
        body = data[i + hdr : i + hdr + length]
        if len(body) != length:
            raise RepoPlanError("the key data is truncated")
        yield tag, body
        i += hdr + length


def key_fingerprints(data):
    """Fingerprints of the primary keys (tag 6) and subkeys (tag 14) in an OpenPGP key file."""
    out = []
    for tag, body in _packets(dearmor(data)):
        if tag in (6, 14) and body[:1] == b"\x04":
            digest = hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest()
            out.append(digest.upper())
    if not out:
        raise RepoPlanError("no OpenPGP v4 public key found in the key file")
    return out


def check_key(data, fingerprint, var):
    """Raise unless the primary key of ``data`` has the pinned ``fingerprint``."""
    if not fingerprint:
        raise RepoPlanError(
            f"{var}: no pinned fingerprint is known for this repository's key; set {var} to the fingerprint "
            "NVIDIA publishes for it"
        )
    found = key_fingerprints(data)
    if normalize_fingerprint(fingerprint) != found[0]:
        raise RepoPlanError(
            f"the repository key's fingerprint is {found[0]}, not the pinned "
            f"{normalize_fingerprint(fingerprint)} ({var}); refusing it"
        )
    return found[0]


# ---------------------------------------------------------------------------------------------------
# packages
# ---------------------------------------------------------------------------------------------------
def _version(value, var, minimum=1):
    try:
        parsed = parse_version(value, var)
    except VersionError as exc:
        raise RepoPlanError(str(exc)) from None
    if len(parsed.parts) < minimum:
        raise RepoPlanError(f"{var}: {value!r} needs at least {minimum} components")
    return parsed


def cuda_toolkit_packages(versions, rdir, var="cuda_toolkit_versions"):
    """NVIDIA repo package specs: cuda-toolkit-13-0 (X.Y) or cuda-toolkit-13-0=13.0.2-1 / -13.0.2 (X.Y.Z)."""
    out = []
    for value in versions:
        parsed = _version(value, var, 2)
        name = f"cuda-toolkit-{parsed.major}-{parsed.minor}"
        if len(parsed.parts) >= 3:
            ver = f"{parsed.major}.{parsed.minor}.{parsed.patch}"
            name += ("={}-1" if is_deb(rdir) else "-{}").format(ver)
        out.append(name)
    return out


def cudnn_packages(version, cuda_major, rdir, dev=True, var="cudnn_version"):
    """Package specs (pinned to the version) for cuDNN 9 (per CUDA major) or 8.9 (per CUDA X.Y)."""
    parsed = _version(version, var, 3)
    try:
        major = int(str(cuda_major))
    except ValueError:
        raise RepoPlanError(
            f"cudnn_cuda_major: {cuda_major!r} is not a CUDA major such as 12 or 13"
        ) from None
    deb = is_deb(rdir)
    full = len(parsed.parts) == 4
    if parsed.major >= 9:
        suffix = f"cuda-{major}"
        names = [f"libcudnn{parsed.major}-{suffix}"]
        if dev:
            names += (
                [
                    f"libcudnn{parsed.major}-dev-{suffix}",
                    f"libcudnn{parsed.major}-headers-{suffix}",
                ]
                if deb
                else [f"libcudnn{parsed.major}-devel-{suffix}"]
            )
        ver = str(parsed) + ("-1" if full else "*")
        return [("{}={}" if deb else "{}-{}").format(n, ver) for n in names]
    if parsed.major == 8:
        names = ["libcudnn8"] + ((["libcudnn8-dev"] if deb else ["libcudnn8-devel"]) if dev else [])
        base = ".".join(str(p) for p in parsed.parts[:3])
        cuda = CUDNN8_CUDA.get((base, major))
        tail = cuda if cuda else f"{major}.*"
        ver = str(parsed) if full else str(parsed) + ".*"
        if deb:
            return [f"{n}={ver}-1+cuda{tail}" for n in names]
        return [f"{n}-{ver}-1.cuda{tail}" for n in names]
    raise RepoPlanError(f"{var}: cuDNN {version} is not packaged by gpufleet (8.x and 9.x are)")


def package_names(specs, rdir):
    """Bare names from specs (for holds / versionlock): deb ``name=ver``, rpm ``name-ver`` (ver starts a digit
    right after the CUDA major suffix, so split on the last ``-`` followed by the version's first digits)."""
    if is_deb(rdir):
        return [s.split("=", 1)[0] for s in specs]
    out = []
    for spec in specs:
        match = re.match(
            r"^(.*?-cuda-[0-9]+|libcudnn8(?:-devel)?|cuda-toolkit-[0-9]+-[0-9]+)(?:-[0-9].*)?$", spec
        )
        out.append(match.group(1) if match else spec)
    return out


def distro_cuda_plan(distribution, version, requested, var="cuda_toolkit_versions"):
    """Distro nvidia-cuda-toolkit: one version per OS release; refuse anything else."""
    rdir = repo_dir(distribution, version)
    if rdir not in DISTRO_CUDA:
        raise RepoPlanError(
            f"cuda_toolkit_source: distro has no CUDA toolkit package on {distribution} {version}; "
            "use nvidia_repo or redist"
        )
    have, component = DISTRO_CUDA[rdir]
    wanted = [str(_version(v, var, 2).truncate(2)) for v in requested]
    if wanted != [have]:
        raise RepoPlanError(
            "{}: {} {} packages CUDA {} only (nvidia-cuda-toolkit, {}); got {}".format(
                var, distribution, version, have, component, ", ".join(wanted)
            )
        )
    return {"packages": ["nvidia-cuda-toolkit"], "version": have, "component": component, "prefix": "/usr"}


def distro_cudnn_plan(distribution, version):
    """No distro ships the cuDNN library itself (Debian/Ubuntu nvidia-cudnn only downloads it)."""
    raise RepoPlanError(
        f"cudnn_source: distro is not possible on {distribution} {version}: the archive has no cuDNN library "
        "package, only the "
        "'nvidia-cudnn' downloader (which fetches from NVIDIA unverified); use cudnn_source nvidia_repo or "
        "redist"
    )


# ---------------------------------------------------------------------------------------------------
# the planned packages against the installed state ({name: {version, held}}: facts packages.installed)
# ---------------------------------------------------------------------------------------------------
def _package_set(
    packages_for, source, versions, *, cuda_major, dev, rdir, distribution, distribution_version
):
    """(specs, names, hold) of the packages of ``packages_for`` (cudnn, else cuda_toolkit) from ``source``."""
    if packages_for == "cudnn":
        if source == "distro":
            distro_cudnn_plan(distribution, distribution_version)
        if len(versions) != 1:
            raise RepoPlanError("cudnn_version: exactly one version per package plan")
        specs = cudnn_packages(versions[0], cuda_major, rdir, dev=dev)
        names = package_names(specs, rdir)
        return specs, names, list(names)  # the library, -dev and -headers: every package (NVIDIA's images do)
    if source == "distro":
        packages = distro_cuda_plan(distribution, distribution_version, versions)["packages"]
        return packages, packages, packages
    specs = cuda_toolkit_packages(versions, rdir)
    return specs, package_names(specs, rdir), []


def missing_specs(specs, names, installed):
    """The specs whose package is not installed at the version they ask for (a version prefix, ``*`` ending
    a wildcard; a bare name asks for any version)."""
    missing = []
    for spec, name in zip(specs, names):
        want = spec[len(name) + 1 :].rstrip("*")
        have = (installed.get(name) or {}).get("version")
        if have is None or (want and not have.startswith(want.split("*")[0])):
            missing.append(spec)
    return missing


def package_plan(
    packages_for,
    source,
    versions,
    *,
    cuda_major,
    dev,
    repo_dir,
    distribution,
    distribution_version,
    installed,
):
    """The packages to install for ``packages_for`` (cudnn, else cuda_toolkit) from ``source`` (nvidia_repo,
    distro), decided against ``installed`` ({name: {version, held}}, the facts' packages.installed).

    Returns specs (pinned specs), names (bare), hold (names to hold: cuDNN's whole set), installed (name ->
    version of the planned names that are installed), missing (specs not installed at their version) and
    unhold (missing names that are held: the move releases them). Raises RepoPlanError naming the variable."""
    specs, names, hold = _package_set(
        packages_for,
        source,
        versions,
        cuda_major=cuda_major,
        dev=dev,
        rdir=repo_dir,
        distribution=distribution,
        distribution_version=distribution_version,
    )
    installed = installed or {}
    missing = missing_specs(specs, names, installed)
    return {
        "specs": specs,
        "names": names,
        "hold": hold,
        "installed": {name: installed[name]["version"] for name in names if name in installed},
        "missing": missing,
        "unhold": [
            name
            for spec, name in zip(specs, names)
            if spec in missing and (installed.get(name) or {}).get("held")
        ],
    }


def python_apt_refusal(manager, prefix, missing, python_apt):
    """ansible.builtin.apt needs python3-apt in the interpreter that runs it and installs it itself only when
    the host's apt has a candidate for it (a minimal image on an air-gapped site has neither): the refusal
    text for the preflight, before any change, instead of failing halfway through the Install phase; None
    when apt installs nothing (``manager`` not apt, nothing ``missing``) or could run. ``python_apt``: the
    facts' packages.python_apt ({importable, candidate, interpreter}); None (not gathered, not a live root)
    says nothing, so nothing is refused on it."""
    if manager != "apt" or not missing or not python_apt or python_apt.get("importable"):
        return None
    if python_apt.get("candidate") not in (None, "none"):
        return None
    interpreter = python_apt.get("interpreter") or "the module's interpreter"
    return (
        f"{prefix}_source='nvidia_repo' installs {' '.join(missing)} with ansible.builtin.apt, "
        f"which needs python3-apt for {interpreter}: it cannot import apt_pkg and apt has no candidate "
        "for python3-apt; install python3-apt from the distribution's archive (or a site mirror of it), or "
        f"choose {prefix}_source: redist. Nothing was changed"
    )


# ---------------------------------------------------------------------------------------------------
# the repository's index (apt's verified copy of Packages): the whole package set, each at one version
# ---------------------------------------------------------------------------------------------------
PIN_PRIORITY = 1001  # the planned version is apt's candidate, over newer ones and (re)installs, never moved
PIN_FILES = {
    "cudnn": "/etc/apt/preferences.d/gpufleet-cudnn.pref",
    "cuda_toolkit": "/etc/apt/preferences.d/gpufleet-cuda-toolkit.pref",
}


def _order(char):
    if char == "~":
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256 if char else 0


def _compare_part(a, b):
    """dpkg's verrevcmp: non-digit runs by dpkg's character order (~ first), digit runs numerically."""
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            bc = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ac != bc:
                return ac - bc
            i, j = i + 1, j + 1
        start_i, start_j = i, j
        while i < len(a) and a[i].isdigit():
            i += 1
        while j < len(b) and b[j].isdigit():
            j += 1
        diff = int(a[start_i:i] or 0) - int(b[start_j:j] or 0)
        if diff:
            return diff
    return 0


def compare_versions(a, b):
    """<0, 0, >0 as dpkg --compare-versions orders two Debian versions (epoch:upstream-revision)."""

    def split(v):
        epoch, _sep, rest = v.rpartition(":") if ":" in v else ("0", "", v)
        upstream, _sep, revision = rest.rpartition("-") if "-" in rest else (rest, "", "0")
        return int(epoch or 0), upstream, revision

    ea, ua, ra = split(str(a))
    eb, ub, rb = split(str(b))
    return (ea - eb) or _compare_part(ua, ub) or _compare_part(ra, rb)


RELATIONS = {
    ">=": lambda c: c >= 0,
    "<=": lambda c: c <= 0,
    ">>": lambda c: c > 0,
    "<<": lambda c: c < 0,
    "=": lambda c: c == 0,
    ">": lambda c: c >= 0,  # obsolete forms, as dpkg reads them
    "<": lambda c: c <= 0,
}


def parse_index(text):
    """{name: {version: {field: value}}} of a Packages file (what apt verified against the signed Release)."""
    out = {}
    for block in re.split(r"\n\s*\n", text or ""):
        fields = {}
        for line in block.splitlines():
            if line[:1] in (" ", "\t") or ":" not in line:
                continue
            key, _sep, value = line.partition(":")
            fields[key.strip()] = value.strip()
        if fields.get("Package") and fields.get("Version"):
            out.setdefault(fields["Package"], {})[fields["Version"]] = fields
    return out


def parse_depends(value):
    """[[(name, relation, version)], ...]: each list holds the alternatives (a | b) of one dependency."""
    out = []
    for group in (value or "").split(","):
        alternatives = []
        for item in group.split("|"):
            match = re.match(
                r"^\s*([a-z0-9][a-z0-9+.-]*)(?::\S+)?\s*(?:\(\s*([<>=]+)\s*([^)\s]+)\s*\))?", item
            )
            if match:
                alternatives.append((match.group(1), match.group(2) or "", match.group(3) or ""))
        if alternatives:
            out.append(alternatives)
    return out


def _newest(versions):
    best = None
    for version in versions:
        if best is None or compare_versions(version, best) > 0:
            best = version
    return best


def _satisfying(available, constraints):
    return sorted(
        (v for v in available if all(RELATIONS[r](compare_versions(v, want)) for r, want in constraints)),
        key=_SortKey,
    )


class _SortKey:
    """Sort Debian versions with dpkg's order."""

    def __init__(self, version):
        self.version = version

    def __lt__(self, other):
        return compare_versions(self.version, other.version) < 0


def top_version(index, spec, url, var):
    """The version of a requested package (``name``, ``name=ver`` or ``name=prefix*``) that the index has."""
    name, _sep, want = spec.partition("=")
    have = sorted(index.get(name, {}), key=_SortKey)
    if not have:
        raise RepoPlanError(
            f"{var}: the repository {url} has no package {name} (it has {len(index)} packages); is "
            "the base URL a mirror of NVIDIA's repository for this OS?"
        )
    if not want:
        return name, _newest(have)
    prefix = want[:-1] if want.endswith("*") else None
    matches = [v for v in have if v == want or (prefix and v.startswith((prefix + ".", prefix + "-")))]
    if not matches:
        raise RepoPlanError(
            f"{var}: the repository {url} has {name} {', '.join(have)}, not {want.rstrip('*')}; "
            "choose one of those versions"
        )
    return name, _newest(matches)


def resolve_set(index, specs, url, var):
    """Every package of the set: the requested packages at their versions and, within this repository, their
    dependencies at the lowest version every constraint in the set allows (NVIDIA's metapackages depend on
    their release's component versions with >=). Packages the repository does not have (zlib1g, the
    distribution's) are not part of the set. Returns [(name, version)] sorted by name."""
    chosen = dict(top_version(index, spec, url, var) for spec in specs)
    constraints = {name: [("=", version)] for name, version in chosen.items()}
    changed = True
    while changed:
        changed = False
        for name, version in sorted(chosen.items()):
            for alternatives in parse_depends(index[name][version].get("Depends", "")):
                dep = next((a for a in alternatives if a[0] in index), None)
                if dep is None:
                    continue
                rules = constraints.setdefault(dep[0], [])
                if dep[1] and (dep[1], dep[2]) not in rules:
                    rules.append((dep[1], dep[2]))
                fits = _satisfying(index[dep[0]], rules)
                if not fits:
                    wanted = ", ".join(f"{r} {v}" for r, v in rules)
                    have = ", ".join(sorted(index[dep[0]], key=_SortKey))
                    raise RepoPlanError(
                        f"{var}: the repository {url} has no {dep[0]} that satisfies {wanted} (it has {have})"
                    )
                if chosen.get(dep[0]) != fits[0]:
                    chosen[dep[0]] = fits[0]
                    changed = True
    return sorted(chosen.items())


_CUDNN_MAJOR = re.compile(r"-cuda-([0-9]+)$")
_CUDA_XY = re.compile(r"-([0-9]+)-([0-9]+)(?:-config-common)?$")
_CUDA_MAJOR = re.compile(r"^cuda-toolkit-([0-9]+)-config-common$")


def check_one_major(members, what, wanted, var, url):
    """The resolved set must not mix CUDA majors (or, for toolkits, X.Y releases): every package whose name
    carries a CUDA version carries a planned one. ``wanted``: the cuDNN build's CUDA major (cudnn) or the
    toolkits' X.Y list (cuda_toolkit). A repository whose metapackage pulls another major's packages (a
    mis-built mirror, a hand-made set) is refused before anything is pinned or installed."""
    if what == "cudnn":
        ok_major, ok_xy = {str(wanted)}, set()
    else:
        ok_xy = {tuple(str(v).split(".")[:2]) for v in wanted}
        ok_major = {xy[0] for xy in ok_xy}
    strays = []
    for name, version in members:
        cudnn, xy, major = _CUDNN_MAJOR.search(name), _CUDA_XY.search(name), _CUDA_MAJOR.match(name)
        if what == "cudnn":
            stray = bool(cudnn) and cudnn.group(1) not in ok_major
        elif major:
            stray = major.group(1) not in ok_major
        else:
            stray = bool(xy) and xy.groups() not in ok_xy
        if stray:
            strays.append(f"{name}={version}")
    if strays:
        allowed = f"CUDA {wanted}" if what == "cudnn" else "CUDA " + ", ".join(str(v) for v in wanted)
        raise RepoPlanError(
            f"{var}: the package set resolved from {url} mixes CUDA majors or releases: {', '.join(strays)} "
            f"(the plan is for {allowed} only); nothing was pinned or installed. Fix the repository's "
            "dependencies or choose the version whose packages match"
        )


def pin_file(what, packages):
    """apt preferences that make each package's planned version its candidate (the whole set, not only
    the top-level package): apt-get upgrade / dist-upgrade and installs of other packages keep them."""
    stanzas = [
        f"Explanation: Managed by gpufleet ({what}): {name} stays at {version}\n"
        f"Package: {name}\nPin: version {version}\nPin-Priority: {PIN_PRIORITY}\n"
        for name, version in packages
    ]
    return {"path": PIN_FILES[what], "content": "\n".join(stanzas)}


def parse_pin_file(text):
    """[(name, version)] of a pin file gpufleet wrote (its record of the set it installed last); [] for a file
    without gpufleet's header (someone else's is never read as gpufleet's record)."""
    if not text or "Managed by gpufleet" not in text.split("\n", 1)[0]:
        return []
    found = re.findall(r"^Package: (\S+)\nPin: version (\S+)$", text, re.M)
    return list(found)


_CUDNN_FAMILY = re.compile(r"^libcudnn([0-9]+)(?:-dev|-headers)?-cuda-([0-9]+)$")


def leftovers(previous, members, installed, what, remove):
    """What gpufleet pinned (and installed) before and the new set no longer has, still installed:
    ``replaced`` (cuDNN packages of another CUDA major: NVIDIA's packages conflict, apt replaces them with the
    new set), else ``remove`` when asked (<role>_remove_unlisted), else ``kept`` (still pinned, as they were:
    nothing is upgraded or removed behind the user's back)."""
    names = {name for name, _version in members}
    family_of = [m.groups() for m in map(_CUDNN_FAMILY.match, names) if m]
    majors, cuda_majors = {f[0] for f in family_of}, {f[1] for f in family_of}
    out = {"replaced": [], "remove": [], "kept": []}
    for name, _pinned in previous:
        if name in names or name not in installed:
            continue
        family = _CUDNN_FAMILY.match(name)
        if what == "cudnn" and family and family.group(1) in majors and family.group(2) not in cuda_majors:
            out["replaced"].append(name)
        elif remove:
            out["remove"].append(name)
        else:
            out["kept"].append((name, installed[name]))
    return out


def pinned_packages(what, members, previous, installed, remove_unlisted):
    """The resolved set ``members`` ([(name, version)], resolve_set) against the installed state
    (``installed``: {name: {version, held}}) and the set gpufleet pinned before (``previous``,
    parse_pin_file).

    Returns (packages, pins). ``packages``: specs (name=version of the whole set), names, installed, missing
    (not installed at the set's version), unhold (held packages the move changes, replaces or removes), hold
    (cuDNN: the set and what stays pinned; toolkits: none), and from leftovers() replaced, remove and kept
    (names). ``pins``: [(name, version)] for the pin file - the set and what stays pinned."""
    installed = installed or {}
    versions = {name: state["version"] for name, state in installed.items()}
    rest = leftovers(previous, members, versions, what, remove_unlisted)
    kept = [name for name, _version in rest["kept"]]
    names = [name for name, _version in members]
    state = {name: installed[name] for name in names if name in installed}
    moved = [n for n, v in members if state.get(n, {}).get("held") and state[n]["version"] != v]
    packages = {
        "specs": [f"{name}={version}" for name, version in members],
        "names": names,
        "installed": {name: s["version"] for name, s in state.items()},
        "missing": [f"{n}={v}" for n, v in members if state.get(n, {}).get("version") != v],
        "unhold": moved + [n for n in rest["replaced"] + rest["remove"] if installed[n]["held"]],
        "hold": names + kept if what == "cudnn" else [],
        "replaced": rest["replaced"],
        "remove": rest["remove"],
        "kept": kept,
    }
    return packages, members + rest["kept"]


# apt-get update: what its output says about the repository (signature, index hashes, reachability)
APT_REFUSALS = (
    (re.compile(r"BADSIG|signatures were invalid|has been manipulated|signature verification failed", re.I),
     "its Release signature does not verify with the key pinned by {var}"),
    (re.compile(r"NO_PUBKEY|Missing key|key is not certified", re.I),
     "its Release is signed by another key than the one {var} pins"),
    (re.compile(r"Hash Sum mismatch|unexpected size|Hashes of expected file", re.I),
     "an index file does not match the hashes in its signed Release"),
    (re.compile(r"is not signed|no longer signed|NOSPLIT|Clearsigned file isn't valid", re.I),
     "it has no valid signature"),
    (re.compile(r"Could not connect|Failed to fetch|Temporary failure resolving|404\s+Not Found", re.I),
     "apt could not fetch it"),
)  # fmt: skip


def apt_update_refusal(output, rc, url, var):
    """None when apt-get update accepted the repository, else the one-line reason (names the variable)."""
    lines = [line.strip() for line in (output or "").splitlines()]
    errors = [
        line for line in lines if line.startswith(("E:", "W:", "Err:")) and "Some index files" not in line
    ]
    if rc == 0 and not errors:
        return None
    why = next(
        (words for rx, words in APT_REFUSALS if rx.search(output or "")), f"apt-get update failed (rc={rc})"
    )
    first = next(
        (line for tag in ("E:", "W:", "Err:") for line in errors if line.startswith(tag)), f"rc={rc}"
    )
    return (
        f"apt refused the repository {url}: {why.format(var=var)} (apt: {' '.join(first.split())[:300]}); "
        "nothing was installed or changed: the packages installed before are as they were"
    )
