# Copyright: gpufleet contributors
# Apache-2.0
"""Operating systems and CPU platforms gpufleet supports: the one OS key and the one machine mapping.

Every module that needs "which OS is this" or "which NVIDIA platform directory is this machine" asks
here. Sources: NVIDIA Driver Installation Guide (R580 and R610 'introduction' pages: Ubuntu 22.04/24.04,
Debian 12/13, RHEL/Rocky/Oracle 8-10, AlmaLinux 8-10 map to rhelN; high), NVIDIA's redist layout
(https://developer.download.nvidia.com/compute/cuda/redist/: linux-x86_64, linux-sbsa, linux-aarch64
(Jetson); high) and the CUDA repository directories (x86_64, sbsa; high).
"""

from __future__ import annotations

# os key -> family, package manager, label (what error messages show)
OS_TABLE = {
    "ubuntu2204": {"family": "ubuntu", "pkg_mgr": "apt", "label": "Ubuntu 22.04"},
    "ubuntu2404": {"family": "ubuntu", "pkg_mgr": "apt", "label": "Ubuntu 24.04"},
    "debian12": {"family": "debian", "pkg_mgr": "apt", "label": "Debian 12"},
    "debian13": {"family": "debian", "pkg_mgr": "apt", "label": "Debian 13"},
    "rhel8": {"family": "rhel", "pkg_mgr": "dnf", "label": "RHEL 8 (or Rocky/Alma/Oracle 8)"},
    "rhel9": {"family": "rhel", "pkg_mgr": "dnf", "label": "RHEL 9 (or Rocky/Alma/Oracle 9)"},
    "rhel10": {"family": "rhel", "pkg_mgr": "dnf", "label": "RHEL 10 (or Rocky/Alma/Oracle 10)"},
}
SUPPORTED_OS = ", ".join(v["label"] for v in OS_TABLE.values())

# distribution names (ansible_facts.distribution, /etc/os-release ID, lower-cased, no spaces) -> family
_FAMILY_OF = {
    "ubuntu": "ubuntu",
    "debian": "debian",
    "redhat": "rhel",
    "rhel": "rhel",
    "rocky": "rhel",
    "almalinux": "rhel",
    "alma": "rhel",
    "centos": "rhel",
    "oraclelinux": "rhel",
    "ol": "rhel",
}

# machine (uname -m / ansible_facts.machine) -> NVIDIA redist platform and CUDA repository arch
REDIST_PLATFORMS = {
    "x86_64": "linux-x86_64",
    "amd64": "linux-x86_64",
    "aarch64": "linux-sbsa",
    "arm64": "linux-sbsa",
}
REPO_ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "sbsa", "arm64": "sbsa"}
SUPPORTED_MACHINES = "x86_64 and aarch64 (Arm servers such as Grace: NVIDIA's sbsa platform)"
# The OS keys whose NVIDIA CUDA repository has an sbsa (Arm server) tree, .../repos/<key>/sbsa/: Ubuntu and
# RHEL (medium: NVIDIA's repository index, https://developer.download.nvidia.com/compute/cuda/repos/, as
# stored copies show it, ubuntu2204/sbsa, ubuntu2404/sbsa, rhel9/sbsa, rhel10/sbsa; rhel8/sbsa through CUDA
# 12). Debian's directories showed x86_64 and cross-linux-sbsa only (packages for x86_64 hosts that
# cross-compile for Arm; low: an older copy of the index, re-checked 2026-12-06 for issue 39), so an Arm
# server on Debian is warned, not refused: the redist archives (linux-sbsa) are the sure way there.
SBSA_REPOSITORIES = ("ubuntu2204", "ubuntu2404", "rhel8", "rhel9", "rhel10")
SBSA_ADVICE = {
    "cuda_toolkit": "cuda_toolkit_source: redist installs NVIDIA's linux-sbsa archives",
    "cudnn": "cudnn_source: redist installs NVIDIA's linux-sbsa archives",
    "nvidia_driver": "nvidia_driver_source: distro installs the distribution's own driver packages",
}

# NVIDIA Jetson (a Tegra SoC running Jetson Linux, L4T) is another platform: its GPU driver is part of the L4T
# board support package, and JetPack brings its CUDA, cuDNN and TensorRT ("JetPack SDK includes the Jetson
# Linux ... and CUDA-X accelerated libraries"; NVIDIA's linux-aarch64 redist platform and Jetson apt
# repository). The datacenter driver and the sbsa repositories do not install on it; gpufleet refuses it.
# high: https://developer.nvidia.com/embedded/jetpack
JETSON_ADVICE = (
    "its driver, CUDA and cuDNN come with NVIDIA JetPack (Jetson Linux and NVIDIA's Jetson repository), "
    "which gpufleet does not install: use NVIDIA SDK Manager or JetPack's apt packages"
)


def os_family(distribution):
    """'Ubuntu' -> 'ubuntu', 'Rocky' -> 'rhel'; None when gpufleet does not know the distribution."""
    return _FAMILY_OF.get(str(distribution or "").strip().lower().replace(" ", ""))


def os_key(distribution, version):
    """The OS key ('ubuntu2404', 'debian12', 'rhel9') or None when the OS is not supported.

    Ubuntu keeps major.minor (22.10 is not 22.04); Debian and the RHEL family keep the major only
    ('12.7' -> debian12, '9.4' -> rhel9).
    """
    family = os_family(distribution)
    text = str(version or "").strip()
    parts = text.split(".")
    if family is None or not parts[0].isdigit():
        return None
    if family == "ubuntu":
        if len(parts) < 2 or not parts[1].isdigit():
            return None
        key = f"ubuntu{int(parts[0]):02d}{int(parts[1]):02d}"
    else:
        key = f"{family}{int(parts[0])}"
    return key if key in OS_TABLE else None


def redist_platform(machine):
    """NVIDIA's redist platform directory for a machine, or None (unknown machine)."""
    return REDIST_PLATFORMS.get(str(machine or "").strip().lower())


def repo_arch(machine):
    """NVIDIA's CUDA repository arch directory for a machine (unknown machines pass through)."""
    text = str(machine or "").strip()
    return REPO_ARCHES.get(text.lower(), text)
