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
        redist.RedistPlanError, match="cuda_toolkit_versions: no default components for CUDA 11.8.0"
    ):
        redist.default_components("cuda", "11.8.0", var="cuda_toolkit_versions")
