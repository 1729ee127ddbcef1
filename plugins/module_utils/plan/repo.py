# Copyright: gpufleet contributors
# Apache-2.0
"""NVIDIA's CUDA network repository and distro packages: what to configure and install, per OS.

Stdlib only, Python >= 3.9. Pure decisions from data, made on the controller (plan/roles.py): the
repository for a host (``repo_config``: structured fields, no file content) and the package set against the
facts' installed packages (``package_plan``). The ``nvidia_repo`` module executes them on the target with
``install/repo.py`` (the source file rendered there, the key's fingerprint checked, apt's index resolved and
pinned); the roles pass the plan's ``repo`` and ``packages.specs``. Every row carries its source. Facts read
2026-11-30 (see the project's reference notes).
"""

from __future__ import annotations

import fnmatch
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

# Keys NVIDIA retired: a host's keyring that holds only one of them cannot verify today's repository.
# 7fa2af80: the 2018 CUDA repository key, replaced by 3bf863cc (Debian-based) and D42D0685 (RPM) on
# 2022-04-27. Source: NVIDIA's notice "Updating the CUDA Linux GPG Repository Key"
# (https://developer.nvidia.com/blog/updating-the-cuda-linux-gpg-repository-key/, and
# NVIDIA/cuda-repo-management#4: "apt-key del 7fa2af80", cuda-keyring); apt's NO_PUBKEY F60F4B3D7FA2AF80 is
# its long id; the full fingerprint as images pinned it (NVIDIA_GPGKEY_FPR=ae09fe4b...7fa2af80).
# Confidence: high.
RETIRED_KEYS = {
    "AE09FE4BBD223A84B2CCFCE3F60F4B3D7FA2AF80": "NVIDIA's CUDA repository key 7fa2af80, retired in 2022",
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
    """The repository of a host as structured data, what the nvidia_repo module writes from: repo_dir, arch,
    url, key_url, key_fingerprint (pinned, or the user's, checked), keyring, path (of the source file, which
    the module renders from url and keyring) and manager (apt or dnf).

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
    else:
        keyring = "/etc/pki/rpm-gpg/RPM-GPG-KEY-gpufleet-nvidia-cuda"
        path = "/etc/yum.repos.d/gpufleet-nvidia-cuda.repo"
    return {
        "repo_dir": rdir,
        "arch": arch,
        "url": url,
        "key_url": url + key_name,
        "key_fingerprint": fpr,
        "keyring": keyring,
        "path": path,
        "manager": "apt" if is_deb(rdir) else "dnf",
    }


# ---------------------------------------------------------------------------------------------------
# the pinned key's fingerprint: the user's grammar checked here, the key itself on the target
# (install/repo.check_key)
# ---------------------------------------------------------------------------------------------------
def normalize_fingerprint(text, var="key fingerprint"):
    """40 upper-case hex digits (spaces dropped) or ""; RepoPlanError naming ``var`` for anything else."""
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


def toolkit_name(version, var="cuda_toolkit_versions"):
    """The meta package of a toolkit release in NVIDIA's repositories (apt and dnf): cuda-toolkit-13-0."""
    parsed = _version(version, var, 2)
    return f"cuda-toolkit-{parsed.major}-{parsed.minor}"


def cuda_toolkit_packages(versions, rdir, var="cuda_toolkit_versions"):
    """NVIDIA repo package specs: cuda-toolkit-13-0 (X.Y) or cuda-toolkit-13-0=13.0.2-1 / -13.0.2 (X.Y.Z)."""
    out = []
    for value in versions:
        parsed = _version(value, var, 2)
        name = toolkit_name(value, var)
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


# NVIDIA names every package of a toolkit release <name>-X-Y, deb and rpm alike (cuda-nvcc-13-0,
# libcublas-13-0, libcublas-dev-13-0 / libcublas-devel-13-0, cuda-toolkit-13-0; the H200's dpkg database,
# tests/data/h200-ubuntu2404/dpkg-query-nvidia-cuda.tsv): dnf's versionlock takes them by these patterns (dnf
# resolves a pattern to the installed packages it matches and locks each at its version). The
# cuda-toolkit-*config-common packages (ld.so.conf.d, alternatives) are shared by releases and not locked.
TOOLKIT_LOCK_PATTERNS = ("cuda-*-{major}-{minor}", "lib*-{major}-{minor}")


# Who owns /usr/local/cuda-X.Y when NVIDIA's repository installed it: its toolkit packages (the lock patterns)
# and the config-common packages (cuda-toolkit-X-Y-config-common owns the directory itself) (the H200's dpkg
# status, tests/data/h200-ubuntu2404/dpkg-query-nvidia-cuda.tsv: every CUDA package there matches one)
TOOLKIT_TREE_PATTERNS = (
    *TOOLKIT_LOCK_PATTERNS,
    "cuda-toolkit-{major}-{minor}-config-common",
    "cuda-toolkit-{major}-config-common",
    "cuda-toolkit-config-common",
)


def nvidia_toolkit_package(name, version):
    """Whether package ``name`` is one of NVIDIA's CUDA packages of toolkit ``version`` (X.Y or X.Y.Z): a
    tree it owns is the package manager's to keep or complete; any other package's is refused."""
    parsed = _version(version, "cuda_toolkit_versions", 2)
    patterns = [p.format(major=parsed.major, minor=parsed.minor) for p in TOOLKIT_TREE_PATTERNS]
    return bool(name) and any(fnmatch.fnmatchcase(name, p) for p in patterns)


def toolkit_lock_patterns(versions, var="cuda_toolkit_versions"):
    """dnf versionlock patterns of the toolkits' packages (``TOOLKIT_LOCK_PATTERNS`` per X.Y)."""
    out = []
    for value in versions:
        parsed = _version(value, var, 2)
        out += [p.format(major=parsed.major, minor=parsed.minor) for p in TOOLKIT_LOCK_PATTERNS]
    return list(dict.fromkeys(out))


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
    names = package_names(specs, rdir)
    # the toolkit's set, held like cuDNN's (cuda_toolkit_hold); apt's resolved set replaces these names where
    # the index is read (nvidia_repo state=pinned), dnf locks every package of the release (lock patterns)
    return specs, names, list(names)


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

    Returns specs (pinned specs), names (bare), hold (names to hold: the whole set), hold_missing (those of
    hold not held yet: installed and not held, or not installed), installed (name -> version of the planned
    names that are installed), missing (specs not installed at their version) and unhold (missing names that
    are held: the move releases them). Raises RepoPlanError naming the variable."""
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
        "hold_missing": [name for name in hold if not (installed.get(name) or {}).get("held")],
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
