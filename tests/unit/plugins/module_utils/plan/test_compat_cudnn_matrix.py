"""cuDNN against what NVIDIA's support matrix of the release lists (issue 39), at the boundaries.

Each case names its NVIDIA source:
  M917   https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html ("cuDNN 9.17.0 for
         CUDA 13.x: 13.1, 13.0"; CC "12.0, 10.0, 9.0, 8.9, 8.6, 8.0, 7.5"; "cuDNN 9.17.0 for CUDA 12.x: 12.9
         ... 12.0")
  M9102  https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html (9.10.2: "12.9, 12.8"
         with CC 12.0 and 10.0; "12.9 ... 12.0" with CC 9.0 ... 5.0)
  M950   https://docs.nvidia.com/deeplearning/cudnn/v9.5.0/reference/support-matrix.html ("cuDNN 9.5.0 for
         CUDA 12.x: 12.6, 12.5, 12.4, 12.3, 12.2, 12.1, 12.0")
  M900   https://docs.nvidia.com/deeplearning/cudnn/backend/v9.0.0/reference/support-matrix.html ("cuDNN 9.0.0
         for CUDA 12.x: 12.3" and "12.2, 12.1, 12.0"; CC 9.0 ... 5.0)
  LLVM   kb/cuda.py CC_CUDA_RANGE: the first CUDA per compute capability (Rubin 10.7: 13.4, Thor 11.0: 13.0,
         Blackwell 10.0: 12.8)
"""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cudnn as kb_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat as compat_rules
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import parse_version

from tests.unit.plugins.module_utils.plan.compat_cases import B200, H200, RUBIN, THOR, VOLTA, run


def matrix_warnings(result):
    return [w for w in result["warnings"] if "support matrix lists CUDA" in w]


# ---------------------------------------------------------------------------------------------------
# A CUDA minor newer than the release's matrix: warned (never refused); the newest listed minor passes
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cudnn", "cuda", "newest"),
    [
        ("9.17.0", "13.1", None),  # M917: 13.1 is the newest CUDA 13 minor listed
        ("9.17.0.29", "13.0", None),  # M917: a patch build of 9.17.0 (the wheel's four-part version)
        ("9.17", "13.2", "13.1"),  # M917: 13.2 is not listed
        ("9.17.0", "13.5", "13.1"),  # M917: the newest known CUDA
        ("9.17.0", "12.9", None),  # M917: the CUDA 12 build lists 12.0 to 12.9
        ("9.5.0", "12.6", None),  # M950: 12.6 is the newest listed
        ("9.5.0", "12.8", "12.6"),  # M950: 12.8 came after 9.5.0
        ("9.0.0", "12.3", None),  # M900: 12.3 is the newest listed
        ("9.0.0", "12.4", "12.3"),  # M900
        ("9.10.2", "12.9", None),  # M9102: the last CUDA 12 minor is listed
        ("9.17.1", "13.2", None),  # no matrix read for 9.17.1: not checked (a patch release is not 9.17.0)
        ("9.14.0", "13.5", None),  # no matrix read for 9.14.0: not checked
    ],
)
def test_cuda_minor_newer_than_the_matrix_warns(cudnn, cuda, newest):
    result = run(gpus=[H200], cuda_version=cuda, cudnn_version=cudnn)
    assert result["errors"] == []
    hits = matrix_warnings(result)
    if newest is None:
        assert hits == []
        return
    (hit,) = hits
    major = cuda.split(".")[0]
    assert hit.startswith(f"CUDA {cuda} is newer than cuDNN {cudnn} for CUDA {major}: ")
    assert f"support matrix lists CUDA {major}.x up to {newest}" in hit
    assert hit.endswith(
        f"set cuda_version <= {newest}, or a cudnn_version whose support matrix lists CUDA {cuda}"
    )


# ---------------------------------------------------------------------------------------------------
# A GPU newer than the release's matrix (no listed CUDA builds for it): warned; a listed GPU passes
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("gpu", "cudnn", "major", "warned"),
    [
        (RUBIN, "9.17", "13", True),  # M917 + LLVM: Rubin 10.7 (first CUDA 13.4) is newer than 13.0-13.1
        (RUBIN, "9.17.0", "12", True),  # M917 + LLVM: the CUDA 12 build (12.0-12.9) neither
        (THOR, "9.17.0", "13", False),  # M917 + LLVM: 11.0 is not listed, but CUDA 13.0 (listed) builds it
        (B200, "9.17.0", "13", False),  # M917: 10.0 listed
        (H200, "9.17.0", "13", False),  # M917: 9.0 listed
        (B200, "9.10.2", "12", False),  # M9102: 10.0 listed ("12.9, 12.8" row)
        (B200, "9.0.0", "12", True),  # M900 + LLVM: Blackwell (first CUDA 12.8) is newer than 12.0-12.3
        (RUBIN, "9.14.0", "13", False),  # no matrix read for 9.14.0: not checked
    ],
)
def test_gpu_newer_than_the_matrix_warns(gpu, cudnn, major, warned):
    result = run(gpus=[gpu], cudnn_version=cudnn, cudnn_cuda_major=major)
    hits = [w for w in result["warnings"] if f"is newer than cuDNN {cudnn} for CUDA {major}" in w]
    assert bool(hits) is warned, result["warnings"]
    assert not [e for e in result["errors"] if "support matrix lists" in e]
    if warned:
        assert hits[0].endswith("set a cudnn_version whose support matrix lists it")


def test_rubin_with_cudnn_9_17_is_warned_not_ok():
    """Issue 39's example: cuDNN 9.17 with Rubin on CUDA 13.4 is warned twice (CUDA minor and GPU), not
    refused (M917: CUDA 13.0-13.1, no 10.7)."""
    result = run(gpus=[RUBIN], cuda_version="13.4", cudnn_version="9.17", driver_branch="615")
    assert result["compatible"] is True
    assert len(matrix_warnings(result)) == 2


# ---------------------------------------------------------------------------------------------------
# The table agrees with itself and with the other cuDNN and CUDA tables
# ---------------------------------------------------------------------------------------------------
def test_matrix_rows_are_consistent():
    variants = {(major, first, last) for major, first, last, _conf in kb_cudnn.VARIANTS}
    for major, release, newest_cuda, ccs, conf in kb_cudnn.MATRIX_LISTS:
        assert conf == "high"  # each row is a matrix read
        newest = parse_version(newest_cuda)
        assert newest.major == major
        version = parse_version(release)
        built = [
            (m, f, last)
            for m, f, last in variants
            if m == major and version >= parse_version(f) and (last is None or version <= parse_version(last))
        ]
        assert built, (major, release)  # the release has a build for that CUDA major (VARIANTS)
        for cc in ccs:  # a listed compute capability is built by a listed CUDA (M917, M9102, LLVM)
            first, _last, _conf = compat_rules.cc_cuda_range(cc)
            assert first <= newest, (release, major, cc)


# ---------------------------------------------------------------------------------------------------
# cuDNN on Volta: allowed up to 9.10.2 (M9102 lists 7.0); refused from 9.11.0 (NVIDIA's nvidia-cudnn-cu12
# 9.11.0.98 wheel has device code for sm_75 and up only, cuobjdump --list-elf; M917 lists CUDA 12 from 7.5)
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cudnn", "outcome"),
    [
        ("9.10.2", None),  # M9102: CC 7.0 listed
        ("9.10.2.21", None),  # the last patch build with sm_70 device code
        ("9.11.0", "error"),  # nvidia-cudnn-cu12 9.11.0.98: sm_75+ only
        ("9.16.0", "error"),
        ("9.17.0", "error"),  # M917: CUDA 12 build CC 7.5-12.0
    ],
)
def test_volta_cudnn_cut_over(cudnn, outcome):
    result = run(gpus=[VOLTA], cudnn_version=cudnn, cudnn_cuda_major="12")
    errors = [e for e in result["errors"] if "needs compute capability >= 7.5" in e]
    warnings = [w for w in result["warnings"] if "needs compute capability >= 7.5" in w]
    assert bool(errors) is (outcome == "error")
    assert bool(warnings) is (outcome == "warning")
    for text in errors:
        assert "set cudnn_version <= 9.10.2" in text
