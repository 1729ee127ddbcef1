"""Redist release tables, manifest reading, artifact selection and URLs (plan/redist.py: no I/O)."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import redist

PlanError = redist.RedistPlanError
DATA = Path(__file__).resolve().parents[4] / "data" / "redist"


def load(name):
    return redist.parse_manifest((DATA / name).read_bytes(), name)


@pytest.mark.parametrize(
    ("base", "product", "release", "expected"),
    [
        (
            "https://developer.download.nvidia.com/compute",
            "cudnn",
            "9.14.0",
            "https://developer.download.nvidia.com/compute/cudnn/redist/redistrib_9.14.0.json",
        ),
        (
            "http://gpufleet-mirror/",
            "cuda",
            "13.0.2",
            "http://gpufleet-mirror/cuda/redist/redistrib_13.0.2.json",
        ),
        (
            "/var/cache/gpufleet/redist",
            "cuda",
            "13.0.2",
            "/var/cache/gpufleet/redist/cuda/redist/redistrib_13.0.2.json",
        ),
    ],
)
def test_manifest_url(base, product, release, expected):
    assert redist.manifest_url(base, product, release) == expected


def test_unknown_product_and_empty_base():
    with pytest.raises(PlanError, match="product 'nccl'"):
        redist.manifest_url("http://x", "nccl", "1.0.0")
    with pytest.raises(PlanError, match="base URL is empty"):
        redist.manifest_url("", "cuda", "13.0.2")


@pytest.mark.parametrize("rel", ["../etc/passwd", "/abs/path", "a/../../b", "a b/c", ""])
def test_artifact_url_refuses_odd_paths(rel):
    with pytest.raises(PlanError, match="relative_path"):
        redist.artifact_url("http://m", "cudnn", rel)


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


def test_parse_manifest_rejects_garbage():
    with pytest.raises(PlanError, match="is not JSON"):
        redist.parse_manifest(b"<html>404</html>", "m")
    with pytest.raises(PlanError, match="lists no components"):
        redist.parse_manifest({"release_date": "2025-01-01"}, "m")
    with pytest.raises(PlanError, match="not a redist manifest"):
        redist.parse_manifest("[1, 2]", "m")


def test_select_cudnn_variants():
    man = load("redistrib_9.14.0.json")
    (c13,) = redist.select_artifacts(man, ["cudnn"], platform="linux-x86_64", cuda_variant="13")
    assert c13 == {
        "component": "cudnn",
        "version": "9.14.0.64",
        "relative_path": "cudnn/linux-x86_64/cudnn-linux-x86_64-9.14.0.64_cuda13-archive.tar.xz",
        "sha256": "2" * 64,
        "size": 765432109,
    }
    (c12,) = redist.select_artifacts(man, ["cudnn"], platform="linux-sbsa", cuda_variant=12)
    assert c12["relative_path"].endswith("linux-sbsa-9.14.0.64_cuda12-archive.tar.xz")


def test_select_cudnn_missing_variant_names_what_exists():
    man = load("redistrib_9.14.0.json")
    with pytest.raises(
        redist.RedistPlanError,
        match=r"cudnn_cuda_major: cudnn 9\.14\.0\.64 has no build for CUDA 11 .* CUDA 12, 13",
    ):
        redist.select_artifacts(
            man, ["cudnn"], platform="linux-x86_64", cuda_variant="11", var="cudnn_cuda_major"
        )
    with pytest.raises(PlanError, match="a CUDA major is needed"):
        redist.select_artifacts(man, ["cudnn"], platform="linux-x86_64")


def test_select_cuda_components():
    man = load("redistrib_13.0.2.json")
    arts = redist.select_artifacts(man, redist.TOOLKIT_COMPONENTS[13], platform="linux-x86_64")
    assert [a["component"] for a in arts] == redist.TOOLKIT_COMPONENTS[13]
    assert {a["component"]: a["version"] for a in arts}["cuda_cudart"] == "13.0.96"


def test_select_missing_component_lists_available():
    man = load("redistrib_13.0.2.json")
    with pytest.raises(
        redist.RedistPlanError, match=r"has no component 'cuda_gdb'; it has: cuda_cccl, cuda_crt"
    ):
        redist.select_artifacts(man, ["cuda_nvcc", "cuda_gdb"], platform="linux-x86_64")
    arts = redist.select_artifacts(
        man, ["cuda_nvcc", "cuda_gdb"], platform="linux-x86_64", optional=["cuda_gdb"]
    )
    assert [a["component"] for a in arts] == ["cuda_nvcc"]


def test_select_missing_platform():
    man = load("redistrib_13.0.2.json")
    with pytest.raises(
        redist.RedistPlanError, match="cuda_nvcc 13.0.88 has no linux-sbsa build; it has: linux-x86_64"
    ):
        redist.select_artifacts(man, ["cuda_nvcc"], platform="linux-sbsa")
    with pytest.raises(PlanError, match="platform 'windows-x86_64'"):
        redist.select_artifacts(man, ["cuda_nvcc"], platform="windows-x86_64")


def test_select_rejects_bad_checksum_field():
    man = load("redistrib_13.0.2.json")
    man["cuda_nvcc"]["linux-x86_64"]["sha256"] = "not-a-hash"
    with pytest.raises(PlanError, match="missing relative_path or sha256"):
        redist.select_artifacts(man, ["cuda_nvcc"], platform="linux-x86_64")


def test_default_components_and_file_names():
    assert redist.default_components("cudnn", "9.14.0") == ["cudnn"]
    assert redist.default_components("cuda", "12.9.1")[0] == "cuda_nvcc"
    with pytest.raises(
        redist.RedistPlanError, match="cuda_toolkit_versions: no default components for CUDA 11.8.0"
    ):
        redist.default_components("cuda", "11.8.0", var="cuda_toolkit_versions")
    assert redist.manifest_file("cuda", "13.0.2") == "cuda/redist/redistrib_13.0.2.json"
    assert redist.archive_file("cudnn", "cudnn/x.tar.xz") == "cudnn/redist/cudnn/x.tar.xz"


def test_check_versions_names_the_label():
    arts = [{"component": "cudnn", "version": "9.14.0.64"}]
    redist.check_versions(arts, "9.14.0.64", "cudnn_version", "m")
    redist.check_versions(arts, None, "cudnn_version", "m")
    with pytest.raises(PlanError, match="cudnn_version: cudnn in m is version 9.14.0.64"):
        redist.check_versions(arts, "9.14.0.1", "cudnn_version", "m")
