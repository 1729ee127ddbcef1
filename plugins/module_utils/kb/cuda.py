# Copyright: gpufleet contributors
# Apache-2.0
"""Knowledge base: CUDA toolkit releases, minimum drivers, compatibility floors, GPU targets, OS facts.

Pure data (stdlib only); every row carries its confidence and a source comment.
"""

from __future__ import annotations

HIGH, MEDIUM, LOW = "high", "medium", "low"

RELEASE_NOTES_URL = "https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html"
MINOR_COMPAT_URL = "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
FORWARD_COMPAT_URL = "https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html"

# fmt: off
# CUDA toolkit release (major.minor.update) -> (label, minimum Linux x86_64 driver, confidence).
# min driver None = not published in what was readable (the rules then use the major's floor + a warning).
# Table 3 "CUDA Toolkit and Corresponding Driver Versions", CUDA 13.2 Update 2 release notes, unless noted.
CUDA_RELEASES = (
    ("11.0.1", "11.0.1 RC", "450.36.06", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.0.2", "11.0 GA", "450.51.05", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.0.3", "11.0 Update 1", "450.51.06", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.1.0", "11.1 GA", "455.23", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.1.1", "11.1 Update 1", "455.32", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.2.0", "11.2 GA", "460.27.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.2.1", "11.2 Update 1", "460.32.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.2.2", "11.2 Update 2", "460.32.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.3.0", "11.3 GA", "465.19.01", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.3.1", "11.3 Update 1", "465.19.01", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.4.0", "11.4 GA", "470.42.01", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.4.1", "11.4 Update 1", "470.57.02", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.4.2", "11.4 Update 2", "470.57.02", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.4.3", "11.4 Update 3", "470.82.01", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.4.4", "11.4 Update 4", "470.82.01", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.5.0", "11.5 GA", "495.29.05", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.5.1", "11.5 Update 1", "495.29.05", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.5.2", "11.5 Update 2", "495.29.05", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.6.0", "11.6 GA", "510.39.01", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.6.1", "11.6 Update 1", "510.47.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.6.2", "11.6 Update 2", "510.47.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.7.0", "11.7 GA", "515.43.04", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.7.1", "11.7 Update 1", "515.48.07", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("11.8.0", "11.8 GA", "520.61.05", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.0.0", "12.0 GA", "525.60.13", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.0.1", "12.0 Update 1", "525.85.12", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.1.0", "12.1 GA", "530.30.02", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.1.1", "12.1 Update 1", "530.30.02", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.2.0", "12.2 GA", "535.54.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.2.1", "12.2 Update 1", "535.86.09", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.2.2", "12.2 Update 2", "535.104.05", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.3.0", "12.3 GA", "545.23.06", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.3.1", "12.3 Update 1", "545.23.08", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    # not in Table 3; runfile driver
    # the runfile: https://developer.download.nvidia.com/compute/cuda/12.3.2/local_installers/cuda_12.3.2_545.23.08_linux.run
    ("12.3.2", "12.3 Update 2", "545.23.08", MEDIUM),  # medium: runfile above; https://developer.nvidia.com/cuda-12-3-2-download-archive
    ("12.4.0", "12.4 GA", "550.54.14", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.4.1", "12.4 Update 1", "550.54.15", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.5.0", "12.5 GA", "555.42.02", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.5.1", "12.5 Update 1", "555.42.06", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.6.0", "12.6 GA", "560.28.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.6.1", "12.6 Update 1", "560.35.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.6.2", "12.6 Update 2", "560.35.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.6.3", "12.6 Update 3", "560.35.05", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.8.0", "12.8 GA", "570.26", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.8.1", "12.8 Update 1", "570.124.06", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.9.0", "12.9 GA", "575.51.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("12.9.1", "12.9 Update 1", "575.57.08", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("13.0.0", "13.0 GA", "580.65.06", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("13.0.1", "13.0 Update 1", "580.82.07", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("13.0.2", "13.0 Update 2", "580.95.05", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("13.1.0", "13.1 GA", "590.44.01", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("13.1.1", "13.1 Update 1", "590.48.01", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("13.2.0", "13.2 GA", "595.45.04", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("13.2.1", "13.2 Update 1", "595.58.03", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    ("13.2.2", "13.2 Update 2", "595.71.05", HIGH),  # high: Table 3, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    # quoted by 3 public notes
    ("13.3.0", "13.3 GA", "610.43.02", MEDIUM),  # medium: https://docs.nvidia.com/cuda/archive/13.3.0/cuda-toolkit-release-notes/index.html
    ("13.3.1", "13.3 Update 1", "610.43.02", MEDIUM),  # medium: same, https://docs.nvidia.com/cuda/archive/13.3.0/cuda-toolkit-release-notes/index.html
    # R610 (CUTLASS notes)
    ("13.4.0", "13.4 Developer Preview", None, MEDIUM),  # medium: https://docs.nvidia.com/cuda/developer-preview/13.4/cuda-toolkit-release-notes/
    # "GA release is versioned 13.4.1"
    ("13.4.1", "13.4 GA", None, HIGH),  # high: https://docs.nvidia.com/cuda/archive/13.4.1/cuda-toolkit-release-notes/index.html
    ("13.4.2", "13.4 Update 1", None, HIGH),  # high: 13.4 Update 1 notes, https://docs.nvidia.com/cuda/archive/13.4.2/cuda-toolkit-release-notes/index.html
    # minimum not found; R620 is native 13.5. Re-checked 2026-12-06 (issue 39): the 13.5 release notes exist
    # ("CUDA Toolkit 13.5 - Release Notes", docs.nvidia.com/cuda/cuda-toolkit-release-notes/) but their driver
    # table was not readable here, so the minimum stays unknown (low)
    ("13.5.0", "13.5 GA", None, LOW),  # low: https://developer.download.nvidia.com/compute/nvidia-driver/redist/redistrib_620.70.06.json
)

# Driver branch whose native CUDA version is the release (hint for releases whose minimum is unknown).
# high: 13.4 -> R615 ("the cuda-compat-13-4 package is built using the NVIDIA driver libraries version 615");
# high: 13.5 -> R620 (cuda_compat variant of the 620 driver).
UNKNOWN_MIN_BRANCH_HINT = {
    "13.4": (615, HIGH),  # high: cuda-compat-13-4 from 615, https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "13.5": (620, HIGH),  # high: cuda_compat cuda13.5, https://developer.download.nvidia.com/compute/nvidia-driver/redist/redistrib_620.70.06.json
}

# CUDA forward compatibility: which base driver branches each cuda-compat-<major>-<minor> package supports.
# high: table of "Use the Right CUDA Forward Compatibility Package" (edition with cuda-compat-13-4, R615),
# https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html (read from a verbatim copy).
# NVIDIA: "Branches not listed in the table above are end of life and are not supported targets for
# compatibility.
# New Feature Branches are not supported targets for CUDA Forward Compatibility." (590/610/615 are columns of
# the table although they are new feature branches: NVIDIA's text contradicts itself there; the rule warns.)
FORWARD_COMPAT_BASE_BRANCHES = (535, 570, 580, 590, 595, 610, 615)  # the table's columns
# "major.minor" of the package -> (base branches marked C (compatible), confidence); the other columns are
# X (not compatible) or N/A (the package's own branch). Packages not listed: not in that edition.
FORWARD_COMPAT = {
    # row cuda-compat-13-4 (615: N/A)
    "13.4": ((535, 570, 580, 590, 595, 610), HIGH),  # high: https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    # row cuda-compat-13-3 (610: N/A, 615: X)
    "13.3": ((535, 570, 580, 590, 595), HIGH),  # high: https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "13.2": ((535, 570, 580, 590), HIGH),  # high: row cuda-compat-13-2 (595: N/A), https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "13.1": ((535, 570, 580), HIGH),  # high: row cuda-compat-13-1 (590: N/A), https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "13.0": ((535, 570), HIGH),  # high: row cuda-compat-13-0 (580: N/A), https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "12.9": ((535, 570), HIGH),  # high: row cuda-compat-12-9, https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "12.8": ((535,), HIGH),  # high: row cuda-compat-12-8 (570: N/A), https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "12.6": ((535,), HIGH),  # high: row cuda-compat-12-6, https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "12.5": ((535,), HIGH),  # high: row cuda-compat-12-5, https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "12.4": ((535,), HIGH),  # high: row cuda-compat-12-4, https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "12.3": ((535,), HIGH),  # high: row cuda-compat-12-3, https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
    "12.2": ((), HIGH),  # high: row cuda-compat-12-2 (535: N/A), https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
}

# Minor-version compatibility floor per CUDA major: (floor driver, confidence).
# Below the floor the toolkit cannot run (except with forward compatibility across majors).
# high: Table 1 of https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
CUDA_MAJOR_FLOORS = {
    # Table 1 (11.1+; 11.0 GA used 450.36.06)
    11: ("450.80.02", HIGH),  # high: https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
    12: ("525.60.13", HIGH),  # high: Table 1, https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
    13: ("580.65.06", HIGH),  # high: Table 1, https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
}
# 11.0 shipped with an earlier driver than the 11.x floor (footnote *** of the release notes).
CUDA_11_0_FLOOR = "450.36.06"  # high: Table 3 footnote, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html

# Compute capability -> (first CUDA that builds for it, last CUDA that does, confidence); None = current.
# high: LLVM NVPTXTargetParser.def + nvcc/ptxas --list-gpu-code of NVIDIA's own wheels,
# https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
CC_CUDA_RANGE = {
    "2.0": ("3.0", "8.0", MEDIUM),  # medium: arch matrix copy, https://www.cnblogs.com/litifeng/p/18236236
    "2.1": ("3.0", "8.0", MEDIUM),  # medium: same, https://www.cnblogs.com/litifeng/p/18236236
    "3.0": ("6.0", "10.2", HIGH),  # high: arch matrix, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    "3.2": ("6.0", "10.2", HIGH),  # high: same, https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
    "3.5": ("6.0", "11.8", HIGH),  # high: ptxas 12.0 lacks sm_35, https://docs.nvidia.com/cuda/archive/12.6.3/cufft/deprecated-functionality.html
    "3.7": ("6.0", "11.8", HIGH),  # high: same, https://docs.nvidia.com/cuda/archive/12.6.3/cufft/deprecated-functionality.html
    # removed in 13.0 (release notes 2.6.2)
    "5.0": ("6.5", "12.9", HIGH),  # high: https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    "5.2": ("6.5", "12.9", HIGH),  # high: same, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    "5.3": ("6.5", "12.9", HIGH),  # high: same, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    "6.0": ("8.0", "12.9", HIGH),  # high: same, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    "6.1": ("8.0", "12.9", HIGH),  # high: same, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    "6.2": ("8.0", "12.9", HIGH),  # high: same, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    "7.0": ("9.0", "12.9", HIGH),  # high: same, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    "7.2": ("9.1", "12.9", HIGH),  # high: same, https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    # LLVM def + nvcc 13.5
    "7.5": ("10.0", None, HIGH),  # high: https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    "8.0": ("11.0", None, HIGH),  # high: same, https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    "8.6": ("11.1", None, HIGH),  # high: same, https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    "8.7": ("11.4", None, HIGH),  # high: same, https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    # nvcc 13.0 --list-gpu-code
    "8.8": ("13.0", None, HIGH),  # high: https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    "8.9": ("11.8", None, HIGH),  # high: same, https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    "9.0": ("11.8", None, HIGH),  # high: same, https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    "10.0": ("12.8", None, HIGH),  # high: same, https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    "10.1": ("12.8", "12.9", HIGH),  # high: renamed sm_110 in 13.0, https://docs.nvidia.com/cuda/curanddx/0.2.4/release_notes.html
    # LLVM def + ptxas 12.9
    "10.3": ("12.9", None, HIGH),  # high: https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    # nvcc 13.4 --list-gpu-code
    "10.7": ("13.4", None, HIGH),  # high: https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    "11.0": ("13.0", None, HIGH),  # high: same, https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    "12.0": ("12.8", None, HIGH),  # high: same, https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
    "12.1": ("12.9", None, HIGH),  # high: same, https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
}

# OS facts per CUDA version: (distribution, version, rule, CUDA bound, confidence)
#   rule "dropped_from": the CUDA version (and later) no longer supports the OS -> refuse at high confidence
#   rule "repo_from": NVIDIA's network repository for the OS starts at that CUDA version -> warn below it
#   rule "supported_from": the first CUDA release whose system requirements list the OS release -> refuse
#     below it (high) or warn (medium: NVIDIA lists the release but does not say an older CUDA fails on it).
#     version "10" = every 10.x; "9.6" = 9.6 and later 9.x point releases (an OS version without the point
#     release, e.g. Debian's os-release VERSION_ID "12", does not match a "12.10" row).
CUDA_OS_FACTS = (
    # CUDA 13 notes 2.6.3
    ("ubuntu", "20.04", "dropped_from", "13.0", HIGH),  # high: https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html
    # repo Packages index
    ("ubuntu", "22.04", "repo_from", "11.7", HIGH),  # high: https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/Packages
    ("debian", "12", "repo_from", "12.3", HIGH),  # high: repo listing, https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/
    ("ubuntu", "24.04", "repo_from", "12.5", MEDIUM),  # medium: key dated 2024-05, https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404/x86_64
    # public scripts (cuda-toolkit-13-3/13-4); re-checked 2026-12-06 (issue 39): neither the CUDA installation
    # guide's distribution table nor a cuDNN matrix listing Ubuntu 26.04 was readable here (medium)
    ("ubuntu", "26.04", "repo_from", "13.3", MEDIUM),  # medium: https://docs.nvidia.com/cuda/cuda-installation-guide-linux/index.html
    # CUDA 13.0 "Added support for the following new operating system distributions: Red Hat Enterprise Linux
    # 10.0 and 9.6, Debian 12.10, Fedora 42, Rocky Linux 10.0 and 9.6" (CUDA 13.0 Features, General CUDA).
    # high for a new major (13.0 is the release that added RHEL/Rocky 10.0); medium for a point release of a
    # major older CUDA supports (NVIDIA does not say it fails) and for RHEL-compatible 10s 13.0 does not name.
    ("rhel", "10", "supported_from", "13.0", HIGH),  # high: new major, https://docs.nvidia.com/cuda/cuda-features-archive/index.html
    ("rocky", "10", "supported_from", "13.0", HIGH),  # high: new major, https://docs.nvidia.com/cuda/cuda-features-archive/index.html
    ("almalinux", "10", "supported_from", "13.0", MEDIUM),  # medium: RHEL-compatible, not named, https://docs.nvidia.com/cuda/cuda-features-archive/index.html
    ("ol", "10", "supported_from", "13.0", MEDIUM),  # medium: RHEL-compatible, not named, https://docs.nvidia.com/cuda/cuda-features-archive/index.html
    ("rhel", "9.6", "supported_from", "13.0", MEDIUM),  # medium: 9.x point release, https://docs.nvidia.com/cuda/cuda-features-archive/index.html
    ("rocky", "9.6", "supported_from", "13.0", MEDIUM),  # medium: 9.x point release, https://docs.nvidia.com/cuda/cuda-features-archive/index.html
    ("debian", "12.10", "supported_from", "13.0", MEDIUM),  # medium: 12.x point release, https://docs.nvidia.com/cuda/cuda-features-archive/index.html
)

# Distributions in NVIDIA's driver installation guides (x86_64): (os-release ID, versions, confidence).
# A distribution may have several rows (one per guide/confidence); the rule takes the union.
# Oracle Linux 10 and Azure Linux 4: the R620 guide's OS table as issue 14 read it; only that guide's table of
# contents was readable here (medium until read; re-checked 2026-12-06 for issue 39: still only the table of
# contents, neither the OS table nor an R620 introduction page with Oracle Linux 10 or Azure Linux 4).
DRIVER_GUIDE_DISTROS = (
    # R580-era "Linux System Requirements"
    ("rhel", ("8", "9", "10"), HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html
    ("rocky", ("8", "9", "10"), HIGH),  # high: same, https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html
    ("almalinux", ("8", "9", "10"), HIGH),  # high: R610 guide, https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/610/introduction.html
    ("ol", ("8", "9"), HIGH),  # high: R580-era guide, https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html
    # R620 OS table (not read here)
    ("ol", ("10",), MEDIUM),  # medium: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/pdf/Driver_Installation_Guide.pdf
    # 15 SP6 R580-era, 16 R610 guide
    ("opensuse-leap", ("15", "16"), HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/610/introduction.html
    # 15 SP6+ R580-era, 16 R610 guide
    ("sles", ("15", "16"), HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/610/introduction.html
    # 26.04 R610 guide
    ("ubuntu", ("22.04", "24.04", "26.04"), HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/610/introduction.html
    ("debian", ("12", "13"), HIGH),  # high: R580-era guide, https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html
    # 42 R580-era, 44 R610 guide
    ("fedora", ("42", "44"), HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/610/introduction.html
    ("amzn", ("2023",), HIGH),  # high: R580-era guide, https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html
    ("azurelinux", ("3.0",), HIGH),  # high: "Azure Linux 3.0 azl3", https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html
    # R620 OS table (not read here)
    ("azurelinux", ("4.0",), MEDIUM),  # medium: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/pdf/Driver_Installation_Guide.pdf
    # V10 SP3 R580-era, V11 2503 R610 guide
    ("kylin", ("10", "11"), HIGH),  # high: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/610/introduction.html
)
# fmt: on
