# Copyright: gpufleet contributors
# Apache-2.0
"""Knowledge base: NVIDIA Linux driver branches (lifecycle, native CUDA version) and kernel-module flavors.

Pure data (stdlib only); every row carries its confidence and a source comment.
"""

from __future__ import annotations

HIGH, MEDIUM, LOW = "high", "medium", "low"

LTSB, PB, NFB = "LTSB", "PB", "NFB"
BRANCH_TYPE_NAMES = {LTSB: "long-term support", PB: "production", NFB: "new feature"}

# fmt: off
# branch -> (type, end of life (year, month) or None, native CUDA version or None, confidence)
# Native CUDA = what nvidia-smi reports as "CUDA Version" = the cuda_compat variant of the branch.
DRIVER_BRANCHES = {
    418: (LTSB, (2022, 3), None, HIGH),  # high: RN-08625-001, https://docs.nvidia.com/datacenter/tesla/pdf/NVIDIA_CUDA_Drivers_Support.pdf
    440: (NFB, (2020, 11), None, HIGH),  # high: same, https://docs.nvidia.com/datacenter/tesla/pdf/NVIDIA_CUDA_Drivers_Support.pdf
    450: (LTSB, (2023, 7), "11.0", HIGH),  # high: same, https://docs.nvidia.com/datacenter/tesla/pdf/NVIDIA_CUDA_Drivers_Support.pdf
    455: (NFB, None, "11.1", HIGH),  # high: "Evaluation/Developer", https://docs.nvidia.com/datacenter/tesla/pdf/NVIDIA_CUDA_Drivers_Support.pdf
    460: (PB, (2022, 1), "11.2", HIGH),  # high: same, https://docs.nvidia.com/datacenter/tesla/pdf/NVIDIA_CUDA_Drivers_Support.pdf
    # listed EOL (date ours)
    465: (NFB, (2021, 12), "11.3", MEDIUM),  # medium: https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    # Kepler legacy, unmaintained (EOL date ours)
    470: (LTSB, (2024, 7), "11.4", MEDIUM),  # high: https://forums.developer.nvidia.com/t/current-graphics-driver-releases/28500
    # listed EOL (date ours)
    495: (NFB, (2022, 6), "11.5", MEDIUM),  # medium: https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    510: (PB, (2023, 1), "11.6", MEDIUM),  # medium: same, https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    515: (PB, (2023, 5), "11.7", MEDIUM),  # medium: same, https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    # CUDA 11.8 bundles 520.61.05
    520: (NFB, (2023, 1), "11.8", MEDIUM),  # medium: https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    # listed EOL (date ours)
    525: (PB, (2023, 12), "12.0", MEDIUM),  # medium: https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    # CUDA 12.1 bundles 530.30.02
    530: (NFB, (2023, 6), "12.1", MEDIUM),  # medium: https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    # v580 + /615/ pages
    535: (LTSB, (2026, 6), "12.2", HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    # CUDA 12.3 bundles 545.23
    545: (NFB, (2024, 3), "12.3", MEDIUM),  # medium: https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    # listed EOL (date ours)
    550: (PB, (2025, 2), "12.4", MEDIUM),  # medium: https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    # CUDA 12.5 bundles 555.42
    555: (NFB, (2024, 9), "12.5", MEDIUM),  # medium: https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    # listed EOL (date ours)
    560: (NFB, (2025, 2), "12.6", MEDIUM),  # medium: https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    565: (NFB, (2025, 4), "12.7", MEDIUM),  # medium: same, https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    570: (PB, (2026, 2), "12.8", HIGH),  # high: v580 page, https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    # listed EOL (date ours)
    575: (NFB, (2025, 8), "12.9", MEDIUM),  # medium: https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html
    # /620/ page (June 2028) + H200 host
    580: (LTSB, (2028, 6), "13.0", HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/drivers/620/supported-drivers-and-cuda-toolkit-versions.html
    590: (NFB, None, "13.1", HIGH),  # high: forum "new feature branch 590.48.01", https://forums.developer.nvidia.com/t/current-graphics-driver-releases/28500
    # /615/ and /620/ pages
    595: (PB, (2027, 3), "13.2", HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/drivers/620/supported-drivers-and-cuda-toolkit-versions.html
    # /615/ page + redist cuda_compat 13.3
    610: (NFB, (2026, 8), "13.3", HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/drivers/615/supported-drivers-and-cuda-toolkit-versions.html
    # 615: native 13.4 (cuda-compat-13-4 is built from the 615 libraries); new feature branch: the /620/ page
    # lists only LTSB and PB (R580, R595, R620), https://docs.nvidia.com/datacenter/tesla/drivers/620/supported-drivers-and-cuda-toolkit-versions.html
    615: (NFB, None, "13.4", HIGH),  # high: not on /620/ (LTSB/PB only), https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    # No 616 row: no NVIDIA page read names an R616 (developer) branch (issue 39, 2026-12-06); R616 is warned
    # as a branch the knowledge base does not know.
    # /620/ page + cuda_compat 13.5
    620: (LTSB, (2029, 9), "13.5", HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/drivers/620/supported-drivers-and-cuda-toolkit-versions.html
}
# fmt: on
# Branch types/EOL dates marked "ours" are the month the branch left NVIDIA's list (approximate): they only
# drive warnings ("end of life"), never refusals.

NEWEST_KNOWN_BRANCH = max(DRIVER_BRANCHES)

# Open kernel modules.
# high: "Two flavors since R515", https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html
OPEN_MODULES_FIRST_BRANCH = 515
# high: "Starting in the 560 driver release series, the open kernel module flavor is the default"
OPEN_MODULES_DEFAULT_FROM = 560
# high: GeForce/workstation support in open modules was alpha-quality up to 535.113.01 (not from 545.23.06),
# https://github.com/NVIDIA/open-gpu-kernel-modules/blob/545.23.06/README.md
OPEN_MODULES_PRODUCTION_ALL_FROM = 545
# First branch without proprietary kernel modules: R620.
# high: the R620 guide (Nov 2026) has "4.1 Proprietary Kernel Modules Removed"; its Kernel Modules page says
# only "The kernel modules are open source"; the R615 guide (Sep 2026) has no such section and still has
# "5.2 Pro(prietary ...)", as the R610 Kernel Modules page lists both flavors,
# https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/pdf/Driver_Installation_Guide.pdf,
# https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/kernel-modules.html,
# https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/615/pdf/Driver_Installation_Guide.pdf
PROPRIETARY_REMOVED_FROM = (620, HIGH)

# Kernel-module flavor as written in /proc/driver/nvidia/version.
# high: observed on the H200 host ("NVIDIA UNIX Open Kernel Module for x86_64  580.159.04")
PROC_VERSION_OPEN_MARK = "Open Kernel Module"
