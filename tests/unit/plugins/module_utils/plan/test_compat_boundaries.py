"""The rules at their exact boundaries (issue 14), table-driven; every case names its NVIDIA source.

FEAT  https://docs.nvidia.com/cuda/cuda-features-archive/index.html (CUDA 13.0 "Added support for ...
      Red Hat Enterprise Linux 10.0 and 9.6, Debian 12.10, Fedora 42, Rocky Linux 10.0 and 9.6")
RN    https://docs.nvidia.com/cuda/archive/13.2.2/cuda-toolkit-release-notes/index.html (Table 3, 2.6.2/2.6.3)
MVC   https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html (Table 1 floors)
ARCH  https://docs.nvidia.com/datacenter/tesla/drivers/cuda-toolkit-driver-and-architecture-matrix.html
LLVM  https://github.com/llvm/llvm-project/blob/main/llvm/include/llvm/TargetParser/NVPTXTargetParser.def
KMOD  https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html
R620  https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/620/pdf/Driver_Installation_Guide.pdf
CDNN  https://docs.nvidia.com/deeplearning/sdk/cudnn-support-matrix/index.html (9.17.0),
      https://docs.nvidia.com/deeplearning/cudnn/latest/support-matrix/index.html (9.10.2)
"""

import pytest

from tests.unit.plugins.module_utils.plan.compat_cases import H200, run


def os_run(dist, version, cuda):
    return run(gpus=[H200], cuda_version=cuda, os_info={"distribution": dist, "version": version})


# ---------------------------------------------------------------------------------------------------
# OS support added per release (FEAT): refuse a new major below its first CUDA, warn for point releases
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("dist", "version", "cuda"),
    [
        ("RedHat", "10.0", "12.9"),  # FEAT: RHEL 10.0 first in 13.0; 12.9 = last CUDA before it
        ("rhel", "10.1", "12.0"),  # FEAT: any 10.x, first CUDA 12 minor
        ("Rocky", "10.0", "12.9"),  # FEAT: Rocky Linux 10.0 first in 13.0
        ("rocky", "10", "11.8"),  # FEAT: major only still matches a major row
    ],
)
def test_new_os_major_before_its_first_cuda_is_refused(dist, version, cuda):
    result = os_run(dist, version, cuda)
    (error,) = [e for e in result["errors"] if "does not support" in e]
    assert error.startswith(f"CUDA {cuda} does not support ")
    assert f" {version}: NVIDIA added it in CUDA 13.0" in error
    assert "set cuda_version >= 13.0" in error


@pytest.mark.parametrize(
    ("dist", "version", "cuda"),
    [
        ("RedHat", "10.0", "13.0"),  # FEAT: first supported CUDA
        ("Rocky", "10.0", "13.5"),  # FEAT: newest known CUDA
        ("rhel", "9.5", "12.9"),  # FEAT: 9.5 predates the 9.6 row
        ("rhel", "9", "12.9"),  # no point release given: the 9.6 row cannot apply
        ("debian", "12", "12.9"),  # Debian's os-release VERSION_ID has no point release
        ("debian", "12.9", "12.9"),  # FEAT: below the 12.10 row
    ],
)
def test_os_at_or_below_the_boundary_passes(dist, version, cuda):
    result = os_run(dist, version, cuda)
    assert result["errors"] == []
    assert not [w for w in result["warnings"] if "qualified by NVIDIA" in w]


@pytest.mark.parametrize(
    ("dist", "version", "cuda"),
    [
        ("rhel", "9.6", "12.9"),  # FEAT: RHEL 9.6 first listed in 13.0 (RHEL 9 itself much earlier)
        ("Rocky", "9.7", "12.8"),  # FEAT: later point releases of 9 too
        ("debian", "12.10", "12.9"),  # FEAT: Debian 12.10 first listed in 13.0
        ("debian", "12.11", "12.3"),  # FEAT: first CUDA of NVIDIA's debian12 repository
        ("OracleLinux", "10.0", "12.9"),  # RHEL-compatible 10 (not named in FEAT): medium
        ("AlmaLinux", "10.1", "12.9"),  # RHEL-compatible 10 (not named in FEAT): medium
    ],
)
def test_os_point_release_before_its_first_cuda_warns(dist, version, cuda):
    result = os_run(dist, version, cuda)
    assert result["errors"] == []
    (warning,) = [w for w in result["warnings"] if "qualified by NVIDIA" in w]
    assert warning.startswith(f"CUDA {cuda} is not qualified by NVIDIA for ")
    assert "set cuda_version >= 13.0" in warning
    assert warning.endswith("(medium-confidence fact: verify)")
    assert os_run(dist, version, "13.0")["warnings"] == [
        w for w in os_run(dist, version, "13.0")["warnings"] if "qualified by NVIDIA" not in w
    ]


@pytest.mark.parametrize(
    ("dist", "version", "listed"),
    [
        ("ol", "10", True),  # R620 guide's OS table: Oracle Linux 10
        ("azurelinux", "4.0", True),  # R620 guide's OS table: Azure Linux 4
        ("azurelinux", "3.0", True),  # R580-era guide: Azure Linux 3.0 (azl3)
        ("azurelinux", "5.0", False),
        ("ol", "7", False),
    ],
)
def test_driver_guide_distributions(dist, version, listed):
    result = run(gpus=[H200], driver_branch="580", os_info={"distribution": dist, "version": version})
    hits = [w for w in result["warnings"] if "is not in NVIDIA's driver installation guide" in w]
    assert bool(hits) is not listed


# ---------------------------------------------------------------------------------------------------
# CUDA vs compute capability: first/last CUDA per CC (ARCH, RN 2.6.2, LLVM)
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cc", "cuda", "ok"),
    [
        ("3.5", "11.8", True),  # ARCH: Kepler sm_35 last in 11.8
        ("3.5", "12.0", False),
        ("5.0", "12.9", True),  # RN 2.6.2: Maxwell removed in 13.0; 12.9 = last
        ("5.0", "13.0", False),
        ("7.0", "12.9", True),  # RN 2.6.2: Volta last in 12.9
        ("7.0", "13.0", False),
        ("7.5", "13.5", True),  # LLVM + nvcc 13.5: Turing still built by the newest known CUDA
        ("8.9", "11.8", True),  # LLVM: sm_89 first in 11.8
        ("8.9", "11.7", False),
        ("10.0", "12.8", True),  # LLVM: sm_100 first in 12.8
        ("10.0", "12.6", False),
        ("12.1", "12.9", True),  # LLVM: sm_121 first in 12.9
        ("12.1", "12.8", False),
        ("10.7", "13.4", True),  # nvcc 13.4: Rubin sm_107 first in 13.4
        ("10.7", "13.3", False),
    ],
)
def test_cuda_per_compute_capability_boundaries(cc, cuda, ok):
    result = run(gpus=[{"compute_capability": cc}], cuda_version=cuda)
    assert (result["errors"] == []) is ok, result["errors"]


# ---------------------------------------------------------------------------------------------------
# CUDA vs driver: the minor-version floors of each major (MVC Table 1), first and last minor
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cuda", "driver", "ok"),
    [
        ("12.0", "525.60.13", True),  # MVC: CUDA 12.x floor
        ("12.0", "525.60.12", False),
        ("12.9", "525.60.13", True),  # MVC: last 12 minor still runs on the floor (warned)
        ("13.0", "580.65.06", True),  # MVC: CUDA 13.x floor
        ("13.0", "575.57.08", False),
        ("13.5", "580.65.06", True),  # MVC: newest known 13 minor on the floor (warned)
        ("11.1", "450.80.02", True),  # MVC: CUDA 11.x floor (11.1+)
        ("11.1", "450.80.01", False),
    ],
)
def test_cuda_major_floor_boundaries(cuda, driver, ok):
    result = run(gpus=[], cuda_version=cuda, driver_version=driver)  # no GPU: only the driver rule
    assert (result["errors"] == []) is ok, result["errors"]


# ---------------------------------------------------------------------------------------------------
# Driver branch vs GPU and kernel modules: first/last branch (ARCH legacy branches, KMOD, R620)
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("gpu", "branch", "module", "ok"),
    [
        ({"pci_device_id": "0x1DB5"}, "580", "proprietary", True),  # ARCH: Volta legacy branch R580 (last)
        ({"pci_device_id": "0x1DB5"}, "590", "proprietary", False),
        ({"compute_capability": "3.7"}, "470", "proprietary", True),  # ARCH: Kepler legacy R470 (last)
        ({"compute_capability": "3.7"}, "525", "proprietary", False),
        ({"pci_device_id": "0x2901"}, "570", "open", True),  # ARCH: Blackwell first branch R570
        ({"pci_device_id": "0x2901"}, "565", "open", False),
        (H200, "515", "open", True),  # KMOD: open modules from R515 (first)
        (H200, "510", "open", False),
        (H200, "615", "proprietary", True),  # R620: R615 is the last branch with proprietary modules
        (H200, "620", "proprietary", False),  # R620: "Proprietary Kernel Modules Removed"
    ],
)
def test_driver_branch_boundaries(gpu, branch, module, ok):
    result = run(gpus=[gpu], driver_branch=branch, kernel_module=module)
    assert (result["errors"] == []) is ok, result["errors"]


# ---------------------------------------------------------------------------------------------------
# cuDNN: minimum compute capability per build (CDNN), first/last CC
# ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cc", "cudnn", "major", "ok"),
    [
        ("7.5", "9.17.0", "13", True),  # CDNN 9.17.0: CUDA 13 build CC 7.5+ (first)
        ("7.0", "9.17.0", "13", False),
        ("12.0", "9.17.0", "13", True),  # CDNN 9.17.0: 12.0 listed (last read)
        ("7.5", "9.17.0", "12", True),  # CDNN 9.17.0: CUDA 12 build CC 7.5-12.0
        ("7.0", "9.17.0", "12", False),
        ("5.0", "9.10.2", "12", True),  # CDNN 9.10.2: CC 5.0+ (last release with Maxwell)
        ("3.7", "9.10.2", "12", False),
    ],
)
def test_cudnn_compute_capability_boundaries(cc, cudnn, major, ok):
    result = run(gpus=[{"compute_capability": cc}], cudnn_version=cudnn, cudnn_cuda_major=major)
    assert (result["errors"] == []) is ok, result["errors"]
