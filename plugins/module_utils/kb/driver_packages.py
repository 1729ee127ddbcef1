# Copyright: gpufleet contributors
# Apache-2.0
"""Knowledge base: how each source packages the NVIDIA driver, per OS.

The branches each source carries, the Debian non-free source, NVIDIA's pin packages, dnf versionlock
patterns, the flavor-switch commands of NVIDIA's install guides, the initramfs commands and the services of
NVIDIA's packages. Pure data (stdlib only); every table carries its confidence (high = NVIDIA's / the
distribution's own text or index; medium = indirect) and its source. The plan (plan/driver/) decides with
these tables; branches themselves and the module flavors are kb/driver.py's, operating systems kb/hosts.py's.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------------
# Branches each source packages, per OS
# ---------------------------------------------------------------------------------------------------
# NVIDIA network repositories: the branches of kb/driver.py from the first one the repository carries.
# medium (the per-branch listing itself was not read): NVIDIA's data-center driver lifecycle (kb/driver.py
# DRIVER_BRANCHES) intersected with the repository's lifetime: ubuntu2204 first CUDA 11.7 (R515), debian12
# first CUDA 12.3 (R545), ubuntu2404 created 2024-05 (R550), debian13 and rhel10 from 2025 (R575/R580), rhel9
# from 2022 (R515) (compat-facts os_support.cuda_version_os_facts); the lifecycle,
# https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
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
# medium (not every branch x release pair was read): Ubuntu's package listings for jammy/noble
# (linux-modules-nvidia-*, nvidia-headless-no-dkms-*, nvidia-dkms-*-server(-open)), read 2026-11-30,
# https://packages.ubuntu.com/
UBUNTU_ARCHIVE_BRANCHES = {
    "ubuntu2204": (470, 535, 550, 560, 565, 570, 575, 580, 590, 595),
    "ubuntu2404": (470, 535, 550, 560, 565, 570, 575, 580, 590, 595),
}

# Debian non-free: one branch per release.
# high: apt-cache show nvidia-driver against the Debian mirror's index, 2026-11-30: bookworm 535.261.03-1,
# trixie 550.163.01-2; nvidia-open-kernel-dkms is in contrib, firmware-nvidia-gsp in non-free-firmware,
# nvidia-persistenced in contrib, http://deb.debian.org/debian/dists/
DEBIAN_ARCHIVE_BRANCH = {"debian12": 535, "debian13": 550}
# high: the components those packages are in (same index), http://deb.debian.org/debian/dists/
DEBIAN_COMPONENTS = ("main", "contrib", "non-free", "non-free-firmware")
# Release codenames (the suites of the non-free source) and Debian's own mirror, used when neither
# nvidia_driver_debian_mirror nor the host's Debian source (facts host.os.debian_mirror) names one.
# high: https://www.debian.org/releases/ (deb.debian.org is Debian's CDN, high)
DEBIAN_CODENAMES = {"debian12": "bookworm", "debian13": "trixie"}
DEBIAN_DEFAULT_MIRROR = "http://deb.debian.org/debian"
# The headless compute set of Debian's driver (nvidia-driver itself pulls the X server); the kernel module
# is nvidia-kernel-dkms (non-free, proprietary) or nvidia-open-kernel-dkms (contrib, open), the GSP
# firmware in non-free-firmware.
# high: apt-cache show on the Debian mirror for bookworm and trixie, 2026-11-30,
# http://deb.debian.org/debian/dists/
DEBIAN_ARCHIVE_PACKAGES = (
    "nvidia-smi",
    "libcuda1",
    "libnvidia-ml1",
    "nvidia-kernel-support",
    "firmware-nvidia-gsp",
    "nvidia-persistenced",
)

# ---------------------------------------------------------------------------------------------------
# Locking a branch
# ---------------------------------------------------------------------------------------------------
# NVIDIA Driver Installation Guide, the same section in the R590, R615 and R620 editions: "Recent Updates ->
# Version locking packages for Ubuntu / Debian -> Ubuntu 590 and later packages": "Driver pinning packages
# have been introduced for Debian and Ubuntu to track specific driver branches and versions"; "we suggest to
# install the pinning package prior to installing the driver"; "Starting with branch 590, the Ubuntu packages
# will be renamed by removing the branch designation from the package name" (Table "Ubuntu 590 package
# renames": cuda-drivers-580 "will be removed", cuda-drivers "no change", nvidia-dkms-580 -> nvidia-dkms,
# nvidia-dkms-580-open -> nvidia-dkms-open, libnvidia-nscq "no change") (high),
# sections 4.1.1 (r590, R615) and 4.2.1 (R620) of
# https://docs.nvidia.com/datacenter/tesla/pdf/Driver_Installation_Guide.pdf,
# https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/615/pdf/Driver_Installation_Guide.pdf,
# https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/pdf/Driver_Installation_Guide.pdf.
# The pin package's name nvidia-driver-pinning-<branch> (and =<version> for one version): medium (the guide's
# APT subsection of version-locking.html was not read in full; public install scripts use that name).
PINNING_FROM = 590
PIN_PACKAGE = "nvidia-driver-pinning-{branch}"

# dnf versionlock onto a branch (DNF 4: RHEL 8/9/10, "Make sure the python3-dnf-plugin-versionlock package is
# installed"; "dnf4 versionlock \*nvidia\*575\*"), and the R620 "Open GPU kernel module installation" table:
# RHEL/Alma/Rocky/Oracle Linux 10, specific branch: "dnf versionlock \*nvidia\*580\*" then
# "dnf install nvidia-open" (no module streams); RHEL 8/9 (and Alma/Oracle/Rocky 8/9, Amazon Linux 2023):
# "dnf module enable nvidia-driver:580-open" then "dnf install nvidia-open" (high),
# https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/version-locking.html,
# https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/kernel-modules.html
VERSIONLOCK_PATTERN = "*nvidia*{branch}*"

# ---------------------------------------------------------------------------------------------------
# Switching the kernel module flavor in place
# ---------------------------------------------------------------------------------------------------
# "Switching between Driver Module Flavors", R590 and R595 guides, high: RHEL/Rocky/Oracle 8/9: "dnf -y
# module switch-to nvidia-driver:<stream> --allowerasing"; RHEL/Rocky 10: "dnf install --allowerasing
# nvidia-open" (to open), "dnf install --allowerasing cuda-drivers" (to proprietary); Debian 12/13: "apt
# install --autoremove --purge nvidia-open" / "... cuda-drivers"; Ubuntu 22.04/24.04: "apt install
# --autoremove --purge nvidia-open nvidia-driver-open" / "... cuda-drivers nvidia-driver",
# https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/advanced-options.html,
# https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/595/advanced-options.html
# Before R590 (branch-named metapackages) the same apt command with nvidia-open-<b> / cuda-drivers-<b>:
# medium (by analogy; the R580 page was not read).
APT_FLAVOR_SWITCH = {
    "ubuntu": {
        "open": ("nvidia-open", "nvidia-driver-open"),
        "proprietary": ("cuda-drivers", "nvidia-driver"),
    },
    "debian": {"open": ("nvidia-open",), "proprietary": ("cuda-drivers",)},
}
DNF_MODULE_SWITCH = ["dnf", "-y", "module", "switch-to", "{module}", "--allowerasing"]
# The stream enabled explicitly before its profile is installed, as the R620 guide's RHEL 8/9 table does
# ("dnf module enable nvidia-driver:580-open", high; kernel-modules.html above). Left to ansible.builtin.dnf's
# `@nvidia-driver:<stream>/<profile>`, an enabled other stream is switched silently where the dnf CLI refuses,
# and after `dnf module reset` a stream whose packages are installed stays disabled (tried on an EL 9-shaped
# host with dnf 4.14, libdnf 0.69: issue 38). `dnf module enable` of the enabled stream is "Nothing to do".
DNF_MODULE_ENABLE = ["dnf", "-y", "module", "enable", "{module}"]
DNF_INSTALL_SWITCH = ["dnf", "-y", "install", "--allowerasing", "{package}"]

# ---------------------------------------------------------------------------------------------------
# Operating systems: initramfs tools (initramfs-tools on Debian/Ubuntu, dracut on RHEL)
# ---------------------------------------------------------------------------------------------------
# Every image: update-initramfs(8) "-u ... -k all"; dracut(8) "--regenerate-all" (high: the tools' manual
# pages), https://manpages.debian.org/update-initramfs, https://manpages.debian.org/dracut
INITRAMFS_COMMANDS = {
    "ubuntu": ["update-initramfs", "-u", "-k", "all"],
    "debian": ["update-initramfs", "-u", "-k", "all"],
    "rhel": ["dracut", "--force", "--regenerate-all"],
}
# One kernel's image: update-initramfs(8) -u -k <version>; dracut(8) --kver <version> (high: the same
# pages), https://manpages.debian.org/update-initramfs, https://manpages.debian.org/dracut
INITRAMFS_KERNEL_COMMANDS = {
    "ubuntu": ["update-initramfs", "-u", "-k", "{release}"],
    "debian": ["update-initramfs", "-u", "-k", "{release}"],
    "rhel": ["dracut", "--force", "--kver", "{release}"],
}

# ---------------------------------------------------------------------------------------------------
# Services the role enables
# ---------------------------------------------------------------------------------------------------
# The systemd unit names of NVIDIA's packages (high).
PERSISTENCED_SERVICE = "nvidia-persistenced"
FABRICMANAGER_SERVICE = "nvidia-fabricmanager"
DCGM_SERVICE = "nvidia-dcgm"
