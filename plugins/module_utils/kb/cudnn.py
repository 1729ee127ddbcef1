# Copyright: gpufleet contributors
# Apache-2.0
"""Knowledge base: cuDNN builds per CUDA major, their minimum driver and compute capability.

Pure data (stdlib only); every row carries its confidence and a source comment.
"""

from __future__ import annotations

HIGH, MEDIUM, LOW = "high", "medium", "low"

SUPPORT_MATRIX_URL = "https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html"

# fmt: off
# Newest cuDNN releases known (2026-11-30); anything newer is "not known yet" (warning).
NEWEST_KNOWN = "9.28.1"  # high: nvidia-cudnn-cu13 9.28.1.4 on PyPI, https://pypi.org/project/nvidia-cudnn-cu13/
# Oldest cuDNN this knowledge base has details for.
OLDEST_DETAILED = "8.9.0"  # high: 8.9.x support matrix, https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-896/support-matrix

# CUDA-major builds ("variants") per cuDNN version: (cuda major, first cuDNN, last cuDNN, confidence).
# last None = still built.
VARIANTS = (
    # last cu11 wheel 9.10.2.21 + 9.10.2 matrix
    (11, "8.0.0", "9.10.2", HIGH),  # high: https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html
    (12, "8.8.0", None, HIGH),  # high: 8.8.0.121_cuda12 archive, https://developer.download.nvidia.com/compute/cudnn/redist/redistrib_8.8.0.json
    # redistrib_9.12.0.json cuda_variant [12,13]
    (13, "9.12.0", None, HIGH),  # high: https://developer.download.nvidia.com/compute/cudnn/redist/redistrib_9.12.0.json
)

# Minimum driver per variant: (cuda major, minimum driver, confidence).
MIN_DRIVER = (
    (11, "450.80.02", HIGH),  # high: 9.0.0/9.10.2 matrices, https://docs.nvidia.com/deeplearning/cudnn/backend/v9.0.0/reference/support-matrix.html
    (12, "525.60.13", HIGH),  # high: 9.0.0..9.17.0 matrices, https://docs.nvidia.com/deeplearning/cudnn/backend/v9.0.0/reference/support-matrix.html
    (13, "580.65.06", HIGH),  # high: 9.17.0 matrix, https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html
)

# The CUDA minors a cuDNN build supports, as NVIDIA's support matrices list them: (cuda major of the build,
# first cuDNN, last cuDNN, first CUDA minor listed, confidence). A CUDA minor below the row's first is refused
# (NVIDIA lists an older cuDNN for it); minors newer than a read matrix are warned (MATRIX_LISTS below).
CUDA_MINORS = (
    # 8.9.6 and 9.0.0 list 11.0-11.8; the 9.5.0 matrix lists "cuDNN 9.4.0 for CUDA 11.x" for 11.0-11.7
    (11, "8.9.0", "9.4.0", "11.0", HIGH),  # high: 9.4.0 row, https://docs.nvidia.com/deeplearning/cudnn/v9.5.0/reference/support-matrix.html
    (11, "9.5.0", "9.10.2", "11.8", HIGH),  # high: 11.8 only, https://docs.nvidia.com/deeplearning/cudnn/v9.5.0/reference/support-matrix.html
    (12, "8.9.0", None, "12.0", HIGH),  # high: from 12.0, https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html
    (13, "9.12.0", None, "13.0", HIGH),  # high: 9.17.0 matrix, https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html
)

# Compute capabilities a build supports only from a later CUDA minor and driver: (cuda major of the build,
# first cuDNN, last cuDNN or None, compute capabilities, first CUDA minor, minimum driver, confidence).
ARCH_CUDA_MINORS = (
    # 9.10.2 matrix: Blackwell 10.0/12.0 only in the "12.9, 12.8 / >=570.26" row of the CUDA 12.x build
    (12, "9.10.2", None, ("10.0", "12.0"), "12.8", "570.26", HIGH),  # high: https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html
)

# Minimum compute capability: (cuda major or None = any, first, last cuDNN or None, minimum CC, confidence).
# The first matching row wins; rows are most specific first.
MIN_CC = (
    (13, "9.12.0", None, "7.5", HIGH),  # high: 9.17.0 matrix CUDA 13 CC 7.5+, https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html
    (12, "9.17.0", None, "7.5", HIGH),  # high: 9.17.0 matrix CUDA 12 CC 7.5-12.0, https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html
    # cut-over at 9.11.0, read in NVIDIA's own binaries (2026-12-06, issue 39): `cuobjdump --list-elf` of the
    # nvidia-cudnn-cu12 wheels: 9.10.2.21's libcudnn_ops/cnn/adv/engines_runtime_compiled carry sm_50, 60, 61,
    # 70 and up; 9.11.0.98's (and 9.14.0.64's) sm_75 and up only, and PTX for sm_120 alone, so nothing JITs
    # for Volta. NVIDIA's 9.10.2 matrix lists CC 7.0 for CUDA 12, its 9.17.0 matrix 7.5+; conda-forge
    # (tensorflow-feedstock#457) and pytorch/pytorch#165773 say 9.11 too (9.11-9.16 matrices not read here).
    (12, "9.11.0", "9.16.99", "7.5", HIGH),  # high: nvidia-cudnn-cu12 9.11.0.98 sm_75+ only, https://pypi.org/project/nvidia-cudnn-cu12/9.11.0.98/
    # 9.0.0..9.10.2 matrices CC 5.0+
    (None, "9.0.0", "9.10.2", "5.0", HIGH),  # high: https://docs.nvidia.com/deeplearning/cudnn/backend/v9.0.0/reference/support-matrix.html
    (None, "8.9.0", "8.9.7", "5.0", HIGH),  # high: 8.9.x matrix CC 5.0+, https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-896/support-matrix
    # 8.5.0 matrix SM 3.5+
    (None, "8.5.0", "8.5.0", "3.5", HIGH),  # high: https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-850/pdf/cuDNN-Support-Matrix.pdf
)

# The newest cuDNN usable per minimum compute capability band: (CC at least, newest cuDNN, confidence).
NEWEST_FOR_CC = (
    ("7.5", NEWEST_KNOWN, HIGH),  # high: 9.17.0 matrix, https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html
    ("5.0", "9.10.2", HIGH),  # high: 9.10.2 matrix (last with CC 5.0-7.2), https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html
    # 8.5.0 is the last read matrix listing SM 3.5
    ("3.5", "8.5.0", MEDIUM),  # medium: https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-850/pdf/cuDNN-Support-Matrix.pdf
)

# What NVIDIA's support matrix of one cuDNN release lists for one build: (cuda major of the build, the cuDNN
# release the matrix is for, newest CUDA minor listed, compute capabilities listed, confidence). A CUDA minor
# newer than the newest listed, or a GPU whose compute capability is not listed and which no listed CUDA
# builds for (its first CUDA, kb/cuda.py CC_CUDA_RANGE, is newer than the newest listed), is newer than the
# matrix: warned, never refused (the release predates it; NVIDIA does not say it fails, and cuDNN 9's
# graphs are partly hardware forward compatible). A release without a row here (matrix not read) is not
# checked. The release matches its patch builds (9.17.0 = 9.17.0.29), not the next patch (9.17.1).

# The compute capabilities those matrices list, Turing to Hopper ("9.0, 8.9, 8.6, 8.0, 7.5"), Maxwell to Volta
# before 9.11 ("7.0, 6.1, 6.0, 5.0") and Blackwell ("12.0, 10.0"; 9.10.2 and 9.17.0 only).
# high: https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html
_TURING_ON = ("7.5", "8.0", "8.6", "8.9", "9.0")
# high: https://docs.nvidia.com/deeplearning/cudnn/backend/v9.0.0/reference/support-matrix.html
_MAXWELL_ON = ("5.0", "6.0", "6.1", "7.0", *_TURING_ON)
# high: https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html
_BLACKWELL = ("10.0", "12.0")
MATRIX_LISTS = (
    # "cuDNN 9.17.0 for CUDA 13.x: 13.1, 13.0 / >=580.65.06 / 12.0, 10.0, 9.0, 8.9, 8.6, 8.0, 7.5"
    (13, "9.17.0", "13.1", _TURING_ON + _BLACKWELL, HIGH),  # high: https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html
    # "cuDNN 9.17.0 for CUDA 12.x: 12.9, 12.8, 12.6 ... 12.0 / >=525.60.13 / 12.0 [3], 10.0 [3], 9.0 ... 7.5"
    (12, "9.17.0", "12.9", _TURING_ON + _BLACKWELL, HIGH),  # high: https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html
    # "cuDNN 9.10.2 for CUDA 12.x: 12.9, 12.8 / >=570.26 / 12.0, 10.0, 9.0 ... 5.0" and "12.9 ... 12.0"
    (12, "9.10.2", "12.9", _MAXWELL_ON + _BLACKWELL, HIGH),  # high: https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html
    # "cuDNN 9.10.2 for CUDA 11.x: 11.8 / >= 450.80.02 / 9.0 ... 5.0"
    (11, "9.10.2", "11.8", _MAXWELL_ON, HIGH),  # high: https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html
    # "cuDNN 9.5.1 for CUDA 12.x: 12.6, 12.5 ... 12.0 / 9.0 ... 5.0"; "cuDNN 9.5.1 for CUDA 11.x: 11.8"
    (12, "9.5.1", "12.6", _MAXWELL_ON, HIGH),  # high: https://docs.nvidia.com/deeplearning/cudnn/backend/v9.5.1/reference/support-matrix.html
    (11, "9.5.1", "11.8", _MAXWELL_ON, HIGH),  # high: same, https://docs.nvidia.com/deeplearning/cudnn/backend/v9.5.1/reference/support-matrix.html
    # "cuDNN 9.5.0 for CUDA 12.x: 12.6, 12.5 ... 12.0 / 9.0 ... 5.0"; "cuDNN 9.5.0 for CUDA 11.x: 11.8"
    (12, "9.5.0", "12.6", _MAXWELL_ON, HIGH),  # high: https://docs.nvidia.com/deeplearning/cudnn/v9.5.0/reference/support-matrix.html
    (11, "9.5.0", "11.8", _MAXWELL_ON, HIGH),  # high: same, https://docs.nvidia.com/deeplearning/cudnn/v9.5.0/reference/support-matrix.html
    # "cuDNN 9.0.0 for CUDA 12.x: 12.3" and "12.2, 12.1, 12.0 / 9.0 ... 5.0"; "... for CUDA 11.x: 11.8"
    (12, "9.0.0", "12.3", _MAXWELL_ON, HIGH),  # high: https://docs.nvidia.com/deeplearning/cudnn/backend/v9.0.0/reference/support-matrix.html
    (11, "9.0.0", "11.8", _MAXWELL_ON, HIGH),  # high: same, https://docs.nvidia.com/deeplearning/cudnn/backend/v9.0.0/reference/support-matrix.html
    # "cuDNN 8.9.6 for CUDA 12.x: 12.2, 12.1, 12.0"; "for CUDA 11.x: 11.8 ... 11.0" / 9.0 ... 5.0
    (12, "8.9.6", "12.2", _MAXWELL_ON, HIGH),  # high: https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-896/support-matrix
    (11, "8.9.6", "11.8", _MAXWELL_ON, HIGH),  # high: same, https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-896/support-matrix
)
# fmt: on

# fmt: off
# The sub-libraries the libcudnn.so.N front end loads from its own directory, per cuDNN major.
SUB_LIBRARIES = {
    # cuDNN 9 is split into these (the nvidia-cudnn-cu13 9.19.0.56 wheel's lib/ holds exactly them)
    # high: https://docs.nvidia.com/deeplearning/cudnn/latest/api/overview.html
    9: ("libcudnn_graph", "libcudnn_engines_precompiled", "libcudnn_engines_runtime_compiled",
        "libcudnn_heuristic", "libcudnn_ops", "libcudnn_cnn", "libcudnn_adv"),
    # high: cuDNN 8's six sub-libraries, https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-897/api/index.html
    8: ("libcudnn_ops_infer", "libcudnn_ops_train", "libcudnn_cnn_infer", "libcudnn_cnn_train",
        "libcudnn_adv_infer", "libcudnn_adv_train"),
}
# fmt: on

# fmt: off
# CPU platforms (NVIDIA's redist names) whose cuDNN builds lack a CUDA variant that linux-x86_64 has:
# (platform, cuda major, first cuDNN, last cuDNN or None, confidence). Empty: for every release from
# OLDEST_DETAILED, NVIDIA's cuDNN redist manifests give linux-sbsa the variants linux-x86_64 has (8.9.7,
# 9.3.0, 9.7.1: cuda11 and cuda12; 9.12.0 on: cuda12 and cuda13); scripts/kb_refresh.py compares each
# manifest's linux-sbsa entries with linux-x86_64's and reports a gap as a row to add here, which compat.py
# then refuses.
# medium: NVIDIA's manifests as nixpkgs copies them (cudnn/releases.nix, linux-sbsa), https://developer.download.nvidia.com/compute/cudnn/redist/
PLATFORM_GAPS = ()
# fmt: on
