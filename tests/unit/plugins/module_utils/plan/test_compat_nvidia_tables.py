"""Rules from NVIDIA's own tables (issue 14), at their boundaries; each case names its NVIDIA source.

Sources:
  FWD   https://docs.nvidia.com/deploy/cuda-compatibility/forward-compatibility.html
        ("Use the Right CUDA Forward Compatibility Package", edition with cuda-compat-13-4 / R615)
  CUTL  https://github.com/NVIDIA/cutlass/discussions/3555 (CUTLASS 4.8.0dev: Rubin needs R615)
  GPUS  https://developer.nvidia.com/cuda-gpus (B300/GB300 10.3, GB10 12.1)
  BWCG  https://docs.nvidia.com/cuda/blackwell-compatibility-guide (older applications with PTX run)
  CDNN  https://docs.nvidia.com/deeplearning/cudnn/v9.5.0/reference/support-matrix.html and
        https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html (9.10.2)
  RDST  https://developer.download.nvidia.com/compute/cudnn/redist/redistrib_8.8.0.json
"""

import re
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import arch as kb_arch
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cuda as kb_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver as kb_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat as compat_rules
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import parse_version

from tests.unit.plugins.module_utils.plan.compat_cases import B200, H200, RTX5090, RUBIN, run

ROOT = Path(__file__).resolve().parents[5]


def fwd(cuda, branch, gpus=(H200,)):
    return run(gpus=list(gpus), cuda_version=cuda, driver_branch=branch, cuda_forward_compat=True)


# ---------------------------------------------------------------------------------------------------
# 1. Forward compatibility: the base branches of NVIDIA's table (FWD)
# ---------------------------------------------------------------------------------------------------
def test_forward_compat_table_matches_nvidias_rule():
    """FWD: a package is C on every listed base older than it, X on newer ones, N/A on its own branch."""
    for package, (compatible, conf) in kb_cuda.FORWARD_COMPAT.items():
        assert conf == "high"
        assert set(compatible) <= set(kb_cuda.FORWARD_COMPAT_BASE_BRANCHES)
        for base in kb_cuda.FORWARD_COMPAT_BASE_BRANCHES:
            native = compat_rules.branch_native_cuda(base)
            assert (base in compatible) is (native < parse_version(package)), (package, base)


@pytest.mark.parametrize(
    ("cuda", "branch"),
    [
        ("13.0", "535"),  # FWD row cuda-compat-13-0: 535 C (first listed base)
        ("13.0", "570"),  # FWD: 570 C (last base older than CUDA 13)
        ("13.4", "535"),  # FWD row cuda-compat-13-4 (newest row): 535 C
        ("13.4", "570"),  # FWD row cuda-compat-13-4: 570 C
    ],
)
def test_forward_compat_listed_base_accepted(cuda, branch):
    result = fwd(cuda, branch)
    assert result["errors"] == []
    assert any(f"install cuda-compat-{cuda.replace('.', '-')}" in w for w in result["warnings"])
    assert not any("forward-compatibility table" in w for w in result["warnings"])


@pytest.mark.parametrize(
    ("cuda", "branch", "why", "instead"),
    [
        # FWD: "Branches not listed in the table above are end of life and are not supported targets"
        ("13.0", "525", "end of life", "set driver_branch R535 or R570, or driver_branch >= 580"),
        ("13.0", "550", "end of life", "set driver_branch R535 or R570, or driver_branch >= 580"),
        # FWD: "New Feature Branches are not supported targets for CUDA Forward Compatibility"
        ("13.0", "575", "New Feature Branches", "set driver_branch R535 or R570, or driver_branch >= 580"),
        ("13.4", "565", "New Feature Branches", "set driver_branch R535 or R570, or driver_branch >= 580"),
        # FWD: no CUDA 11 base (R450/R470) is listed for any cuda-compat-12-x
        ("12.8", "470", "end of life", "set driver_branch >= 525"),
        ("12.2", "450", "end of life", "set driver_branch >= 525"),
    ],
)
def test_forward_compat_unlisted_base_refused(cuda, branch, why, instead):
    result = fwd(cuda, branch)
    assert result["compatible"] is False
    package = f"cuda-compat-{cuda.replace('.', '-')}"
    (error,) = [e for e in result["errors"] if package in e]
    assert error.startswith(f"{package} does not support driver branch R{branch} as its base (")
    assert why in error
    assert error.endswith(instead + " (CUDA " + cuda.split(".")[0] + " without forward compatibility)")
    assert not any("install cuda-compat" in w for w in result["warnings"])


def test_forward_compat_package_newer_than_the_table_warns():
    """FWD (edition up to cuda-compat-13-4): cuda-compat-13-5 is not in it: a warning, not a guess."""
    result = fwd("13.5", "535")
    assert result["errors"] == []
    assert any("does not list cuda-compat-13-5 yet" in w for w in result["warnings"])
    refused = fwd("13.5", "550")  # an unlisted (end-of-life) base stays refused
    assert any("cuda-compat-13-5 does not support driver branch R550" in e for e in refused["errors"])


@pytest.mark.parametrize(
    ("cuda", "branch", "expect"),
    [
        ("13.2", "580", None),  # FWD row cuda-compat-13-2: 580 C (long-term support)
        ("13.2", "590", "New Feature Branches are not supported targets"),  # FWD 590 C, but an NFB
        ("13.4", "610", "New Feature Branches are not supported targets"),  # FWD 610 C, but an NFB
        ("12.6", "550", "NVIDIA provides no cuda-compat-12-6 for driver branch R550"),  # FWD: 550 not listed
        ("12.9", "570", None),  # FWD row cuda-compat-12-9: 570 C
    ],
)
def test_forward_compat_within_a_major_only_warns(cuda, branch, expect):
    """Same major: minor-version compatibility applies anyway (FWD: "X" does not remove it)."""
    result = fwd(cuda, branch)
    assert result["errors"] == []
    assert any("minor-version compatibility" in w for w in result["warnings"])
    table = [w for w in result["warnings"] if "forward-compatibility table" in w]
    assert [w for w in table if expect and expect in w] == table
    assert bool(table) is bool(expect)


def test_forward_compat_not_asked_changes_nothing():
    result = run(gpus=[H200], cuda_version="13.0", driver_branch="575")
    (error,) = result["errors"]
    assert "or (data-center GPUs only) cuda_forward_compat: true" in error


# ---------------------------------------------------------------------------------------------------
# 4. Rubin needs R615 (CUTL), R615 is the CUDA 13.4 driver (FWD: cuda-compat-13-4 built from 615)
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("branch", "refused"), [("610", True), ("615", False), ("620", False)])
def test_rubin_needs_r615(branch, refused):
    result = run(gpus=[RUBIN], driver_branch=branch)
    hits = [e for e in result["errors"] if "needs driver branch R615 or newer" in e]
    assert bool(hits) is refused
    if refused:
        assert hits[0].endswith("set driver_branch >= 615")
    assert not [w for w in result["warnings"] if "needs driver branch" in w]


def test_r615_is_the_cuda_13_4_driver():
    assert kb_driver.DRIVER_BRANCHES[615][2:] == ("13.4", "high")
    assert kb_cuda.UNKNOWN_MIN_BRANCH_HINT["13.4"] == (615, "high")
    assert kb_arch.ARCHITECTURES["Rubin"]["min_branch"] == (615, "high")
    result = run(gpus=[H200], cuda_version="13.4", driver_branch="610")
    assert result["errors"] == []
    assert any("R615 is its native branch (high confidence)" in w for w in result["warnings"])
    assert run(gpus=[H200], cuda_version="13.4", driver_branch="615")["warnings"] == [
        "R615 is a short-lived new feature branch: for production choose a long-term support or production "
        "branch"
    ]


# ---------------------------------------------------------------------------------------------------
# 5. Published compute capabilities (GPUS)
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("chip", "cc"), [("GB110", "10.3"), ("GB10", "12.1")])
def test_b300_and_gb10_compute_capabilities_are_nvidias(chip, cc):
    assert kb_arch.chip_info(chip) == ("Blackwell", cc, "high")


# ---------------------------------------------------------------------------------------------------
# 6. Blackwell with CUDA < 12.8: cannot build for sm_100/sm_120; older applications with PTX run (BWCG)
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("gpu", "sm", "name"), [(B200, "sm_100", "NVIDIA B200"), (RTX5090, "sm_120", None)])
def test_blackwell_before_cuda_12_8_cannot_build(gpu, sm, name):
    result = run(gpus=[gpu], cuda_version="12.6")
    (error,) = result["errors"]
    assert error.startswith(f"CUDA 12.6 cannot build for {sm} (")
    assert name is None or f"({name}, Blackwell)" in error
    assert "applications built with an older CUDA still run on it when they carry PTX" in error
    assert error.endswith("set cuda_version >= 12.8")
    assert run(gpus=[gpu], cuda_version="12.8")["errors"] == []


# ---------------------------------------------------------------------------------------------------
# 7. cuDNN per CUDA minor (CDNN)
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cudnn", "cuda", "error"),
    [
        ("9.4.0", "11.0", None),  # CDNN 9.5.0 matrix: "cuDNN 9.4.0 for CUDA 11.x" 11.0 (first minor)
        ("9.4.0.58", "11.7", None),  # CDNN: 9.4.0 11.7 (last minor before 11.8)
        ("8.9.7", "11.0", None),  # 8.9.x matrices: 11.0-11.8
        ("9.5.0", "11.7", "cudnn_version <= 9.4.0 or cuda_version >= 11.8"),  # CDNN: 9.5.0 lists 11.8 only
        ("9.10.2", "11.0", "cudnn_version <= 9.4.0 or cuda_version >= 11.8"),  # CDNN 9.10.2 (last cu11): 11.8
        ("9.5.0", "11.8", None),
        ("9.10.2", "11.8", None),
        ("9.14.0", "12.0", None),  # CDNN: the CUDA 12 build starts at 12.0
        ("9.14.0", "13.0", None),
    ],
)
def test_cudnn_cuda_minor(cudnn, cuda, error):
    result = run(gpus=[], cuda_version=cuda, cudnn_version=cudnn)
    hits = [e for e in result["errors"] if "NVIDIA's cuDNN support matrix" in e]
    if error is None:
        assert hits == []
    else:
        (hit,) = hits
        assert hit.startswith(f"cuDNN {cudnn} for CUDA 11 supports CUDA 11.8 and newer only")
        assert f"not CUDA {cuda}: set {error}" in hit


@pytest.mark.parametrize(
    ("gpu", "cudnn", "cuda", "driver", "errors"),
    [
        (B200, "9.10.2", "12.8", "570.26", []),  # CDNN 9.10.2: Blackwell row "12.9, 12.8 / >=570.26"
        (B200, "9.14.0", "12.9", None, []),
        (B200, "9.10.2", "12.6", None, ["only with CUDA 12.8 or newer"]),
        (RTX5090, "9.10.2", "12.0", None, ["only with CUDA 12.8 or newer"]),
        (B200, "9.10.2", "12.8", "570.25.01", ["only with driver >= 570.26"]),
        (H200, "9.10.2", "12.0", "525.60.13", []),  # Hopper: the "12.0-12.9 / >=525.60.13" row
        (B200, "9.14.0", "13.0", None, []),  # the CUDA 13 build has no such row
    ],
)
def test_cudnn_blackwell_on_the_cuda_12_build(gpu, cudnn, cuda, driver, errors):
    result = run(gpus=[gpu], cuda_version=cuda, cudnn_version=cudnn, driver_version=driver)
    hits = [e for e in result["errors"] if "is supported by cuDNN" in e]
    assert len(hits) == len(errors)
    for hit, text in zip(hits, errors):
        assert text in hit
        assert f"for CUDA {cuda.split('.')[0]}" in hit


# ---------------------------------------------------------------------------------------------------
# 3. cuDNN 8.8 had CUDA 12 builds (RDST: cudnn-linux-x86_64-8.8.0.121_cuda12 / 8.8.1.3_cuda12)
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("cudnn", "ok"), [("8.7.0", False), ("8.8.0", True), ("8.8.1.3", True)])
def test_first_cudnn_for_cuda_12_is_8_8(cudnn, ok):
    result = run(gpus=[], cudnn_version=cudnn, cudnn_cuda_major="12")
    hits = [e for e in result["errors"] if "has no build for CUDA 12" in e]
    assert (hits == []) is ok
    if not ok:
        assert "(the first is 8.8.0): set cudnn_version >= 8.8.0 or cudnn_cuda_major 11" in hits[0]


# ---------------------------------------------------------------------------------------------------
# 8. The CUDA 12.3 Update 2 row cites what exists (Table 3 has no 12.3 Update 2 row)
# ---------------------------------------------------------------------------------------------------
def test_cuda_12_3_2_row_cites_the_runfile_not_table_3():
    rows = (ROOT / "plugins/module_utils/kb/cuda.py").read_text(encoding="utf-8").splitlines()
    i = next(i for i, row in enumerate(rows) if row.strip().startswith('("12.3.2"'))
    # the row and the comment line above it (the runfile's URL does not fit on the row's line)
    line = rows[i] + " " + rows[i - 1]
    assert "Table 3" not in line.split("#", 1)[1].split("https://")[0] or "not in Table 3" in line
    assert re.search(
        r"https://developer\.download\.nvidia\.com/compute/cuda/12\.3\.2/\S+_545\.23\.08_linux\.run", line
    )
