"""Redist release tables and default components (plan/redist.py: decided on the controller, no I/O).

Manifest reading, artifact selection and URLs are the target's: tests/unit/plugins/module_utils/install/
test_manifest.py."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import redist

PlanError = redist.RedistPlanError


def test_cuda_release_mapping():
    assert redist.cuda_release("13.0") == "13.0.2"
    assert redist.cuda_release("12.9") == "12.9.1"
    assert redist.cuda_release("13.0.1") == "13.0.1"
    assert redist.cuda_release("13.0", {"13.0": "13.0.0"}) == "13.0.0"


@pytest.mark.parametrize("bad", ["13.x", "thirteen", "", "13"])
def test_cuda_release_bad_input_names_variable(bad):
    with pytest.raises(PlanError, match="cuda_toolkit_versions"):
        redist.cuda_release(bad)


def test_cuda_release_unknown_lists_known():
    with pytest.raises(
        redist.RedistPlanError, match=r"CUDA 11\.2 has no known redist release; known: 12\.4,"
    ):
        redist.cuda_release("11.2")


def test_cudnn_release():
    assert redist.cudnn_release("9.14.0") == ("9.14.0", None)
    assert redist.cudnn_release("9.14.0.64") == ("9.14.0", "9.14.0.64")
    with pytest.raises(PlanError, match="cudnn_version"):
        redist.cudnn_release("9.x")
    with pytest.raises(PlanError, match=r"cudnn_version: '9\.14' needs at least X\.Y\.Z"):
        redist.cudnn_release("9.14")


def test_default_components():
    assert redist.default_components("cudnn", "9.14.0") == ["cudnn"]
    assert redist.default_components("cuda", "12.9.1")[0] == "cuda_nvcc"
    with pytest.raises(
        redist.RedistPlanError, match="cuda_toolkit_versions: no toolkit components known for CUDA 11.8.0"
    ):
        redist.default_components("cuda", "11.8.0", var="cuda_toolkit_versions")


COMPILER_13 = ["cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cudart", "cuda_cccl", "cuda_nvrtc"]


def test_the_toolkit_set_is_the_whole_toolkit_and_only_the_compiler_and_verified_libraries_are_required():
    """Issue 36: the default redist CUDA had nvcc, cudart, cccl and nvrtc only: no cuBLAS, cuFFT, cuRAND..."""
    chosen = redist.toolkit_components(["toolkit"], "13.0.2")
    names = chosen["components"]
    for library in ("libcublas", "libcufft", "libcurand", "libcusolver", "libcusparse", "libnpp", "libnvjpeg",
                    "cuda_cupti", "libnvjitlink", "cuda_nvtx", "cuda_gdb", "nsight_compute",
                    "cuda_documentation"):  # fmt: skip
        assert library in names, library
    assert names[:6] == COMPILER_13
    required = [n for n in names if n not in chosen["optional"]]
    assert required == [*COMPILER_13, "libcublas", "libcurand"]
    assert "cuda_opencl" in chosen["optional"]  # linux-x86_64 only: skipped where NVIDIA has no build
    for driver_piece in ("nvidia_driver", "nvidia_fs", "fabricmanager", "imex", "libnvidia_nscq"):
        assert driver_piece not in names


def test_the_toolkit_set_follows_the_cuda_major():
    names = redist.toolkit_components(["toolkit"], "12.9.1")["components"]
    assert "cuda_crt" not in names and "libnvvm" not in names  # inside cuda_nvcc on CUDA 12
    assert "cuda_demo_suite" in names and "cuda_culibos" not in names


def test_the_compiler_set_and_named_components_are_all_required():
    assert redist.toolkit_components(["compiler"], "13.0.2") == {"components": COMPILER_13, "optional": []}
    chosen = redist.toolkit_components(["compiler", "libcublas", "cuda_nvcc"], "13.0.2")
    assert chosen == {"components": [*COMPILER_13, "libcublas"], "optional": []}
    # a component named besides the toolkit set must be there even where the set would skip it
    chosen = redist.toolkit_components(["toolkit", "cuda_opencl"], "13.0.2")
    assert "cuda_opencl" in chosen["components"] and "cuda_opencl" not in chosen["optional"]


def test_verified_libraries_are_those_the_components_hold():
    assert redist.verified_libraries() == ["cublas", "curand"]
    assert redist.verified_libraries(COMPILER_13) == []
    assert redist.verified_libraries([*COMPILER_13, "libcurand"]) == ["curand"]
