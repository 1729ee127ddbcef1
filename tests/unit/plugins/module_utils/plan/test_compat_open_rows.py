"""Issue 39's rows left as they were (NVIDIA's page not readable here): their boundaries are pinned, so that
raising one to high (an error instead of a warning) is a visible change. Each case names its source:

  R620   https://docs.nvidia.com/datacenter/tesla/drivers/620/supported-drivers-and-cuda-toolkit-versions.html
         ("R580 / R595 / R620"; "Only Long Term Support and Production branches are listed"): no R616
  RDST   https://developer.download.nvidia.com/compute/nvidia-driver/redist/redistrib_620.70.06.json
         (cuda_compat "cuda13.5": R620 is the CUDA 13.5 branch; the 13.5 minimum itself is not known, low)
  U2604  kb/cuda.py CUDA_OS_FACTS ("ubuntu", "26.04", "repo_from", "13.3", medium)
"""

import pytest

from tests.unit.plugins.module_utils.plan.compat_cases import H200, run


@pytest.mark.parametrize(
    ("branch", "unknown"),
    [("615", False), ("616", True), ("620", False)],  # R620: no R616 on NVIDIA's page; 615 and 620 known
)
def test_r616_is_not_a_known_branch(branch, unknown):
    result = run(gpus=[H200], driver_branch=branch)
    assert result["errors"] == []
    hits = [w for w in result["warnings"] if "is not a branch the knowledge base knows" in w]
    assert bool(hits) is unknown


@pytest.mark.parametrize(
    ("driver", "minor_compat"),
    [
        ("620", False),  # RDST: R620 is the 13.5 branch (native)
        ("615", True),  # RDST: below it, CUDA 13.5 runs through minor-version compatibility (warned)
        ("580.65.06", True),  # the CUDA 13 floor: warned, not refused (13.5's own minimum is not known)
    ],
)
def test_cuda_13_5_minimum_driver_stays_a_warning(driver, minor_compat):
    kwargs = {"driver_version": driver} if "." in driver else {"driver_branch": driver}
    result = run(gpus=[H200], cuda_version="13.5", **kwargs)
    assert result["errors"] == []
    hits = [w for w in result["warnings"] if w.startswith("CUDA 13.5: its minimum driver is not known")]
    assert bool(hits) is minor_compat
    if hits:
        assert "R620 is its native branch (high confidence)" in hits[0]


@pytest.mark.parametrize(("cuda", "warned"), [("13.2", True), ("13.3", False)])  # U2604: repo from 13.3
def test_ubuntu_26_04_repository_stays_a_warning(cuda, warned):
    result = run(gpus=[H200], cuda_version=cuda, os_info={"distribution": "ubuntu", "version": "26.04"})
    assert result["errors"] == []
    hits = [w for w in result["warnings"] if "ubuntu 26.04 repository starts at CUDA 13.3" in w]
    assert bool(hits) is warned
    if hits:
        assert "(medium-confidence fact)" in hits[0]
        assert "set cuda_version >= 13.3" in hits[0]
