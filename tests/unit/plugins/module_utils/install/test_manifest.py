"""Redist manifests on the target (install/manifest.py: no I/O): URLs and file names, the release's grammar,
manifest reading, artifact selection per platform and CUDA major, the exact version check."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import manifest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cuda_redist as kb_redist

ManifestError = manifest.ManifestError
DATA = Path(__file__).resolve().parents[4] / "data" / "redist"


def load(name):
    return manifest.parse_manifest((DATA / name).read_bytes(), name)


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
    assert manifest.manifest_url(base, product, release) == expected


def test_unknown_product_and_empty_base():
    with pytest.raises(ManifestError, match="product 'nccl'"):
        manifest.manifest_url("http://x", "nccl", "1.0.0")
    with pytest.raises(ManifestError, match="base URL is empty"):
        manifest.manifest_url("", "cuda", "13.0.2")


@pytest.mark.parametrize("rel", ["../etc/passwd", "/abs/path", "a/../../b", "a b/c", ""])
def test_artifact_url_refuses_odd_paths(rel):
    with pytest.raises(ManifestError, match="relative_path"):
        manifest.artifact_url("http://m", "cudnn", rel)


def test_file_names():
    assert manifest.manifest_file("cuda", "13.0.2") == "cuda/redist/redistrib_13.0.2.json"
    assert manifest.archive_file("cudnn", "cudnn/x.tar.xz") == "cudnn/redist/cudnn/x.tar.xz"


@pytest.mark.parametrize("release", ["13.0.2", "9.14.0"])
def test_a_resolved_release_passes(release):
    assert manifest.check_release(release, "cuda_toolkit_versions") == release


@pytest.mark.parametrize("release", ["13.0", "9.14.0.64", "13", "", None, "13.0.2/../../x", "13.0.2\n"])
def test_anything_but_a_manifest_release_is_refused(release):
    """The plan resolves X.Y (and X.Y.Z.B) to X.Y.Z; the target takes nothing else into a URL."""
    with pytest.raises(ManifestError, match=r"^cudnn_version: .* is not a redist manifest release X\.Y\.Z"):
        manifest.check_release(release, "cudnn_version")


def test_parse_manifest_rejects_garbage():
    with pytest.raises(ManifestError, match="is not JSON"):
        manifest.parse_manifest(b"<html>404</html>", "m")
    with pytest.raises(ManifestError, match="lists no components"):
        manifest.parse_manifest({"release_date": "2025-01-01"}, "m")
    with pytest.raises(ManifestError, match="not a redist manifest"):
        manifest.parse_manifest("[1, 2]", "m")


def test_select_cudnn_variants():
    man = load("redistrib_9.14.0.json")
    (c13,) = manifest.select_artifacts(man, ["cudnn"], platform="linux-x86_64", cuda_variant="13")
    assert c13 == {
        "component": "cudnn",
        "version": "9.14.0.64",
        "relative_path": "cudnn/linux-x86_64/cudnn-linux-x86_64-9.14.0.64_cuda13-archive.tar.xz",
        "sha256": "2" * 64,
        "size": 765432109,
    }
    (c12,) = manifest.select_artifacts(man, ["cudnn"], platform="linux-sbsa", cuda_variant=12)
    assert c12["relative_path"].endswith("linux-sbsa-9.14.0.64_cuda12-archive.tar.xz")


def test_select_cudnn_missing_variant_names_what_exists():
    man = load("redistrib_9.14.0.json")
    with pytest.raises(
        manifest.ManifestError,
        match=r"cudnn_cuda_major: cudnn 9\.14\.0\.64 has no build for CUDA 11 .* CUDA 12, 13",
    ):
        manifest.select_artifacts(
            man, ["cudnn"], platform="linux-x86_64", cuda_variant="11", var="cudnn_cuda_major"
        )
    with pytest.raises(ManifestError, match="a CUDA major is needed"):
        manifest.select_artifacts(man, ["cudnn"], platform="linux-x86_64")


def test_select_cuda_components():
    man = load("redistrib_13.0.2.json")
    compiler = list(kb_redist.COMPILER[13])
    arts = manifest.select_artifacts(man, compiler, platform="linux-x86_64")
    assert [a["component"] for a in arts] == compiler
    assert {a["component"]: a["version"] for a in arts}["cuda_cudart"] == "13.0.96"


def test_optional_components_without_a_build_for_the_platform_are_skipped():
    """The toolkit set takes cuda_opencl where NVIDIA builds it (linux-x86_64 in redistrib_13.0.2.json): on
    linux-sbsa it is skipped; named as required it is refused, naming the platforms it has."""
    man = load("redistrib_13.0.2.json")
    x86 = man["cuda_nvcc"]["linux-x86_64"]
    man["cuda_opencl"] = {"name": "CUDA OpenCL", "version": "13.0.85", "linux-x86_64": x86}
    man["cuda_nvcc"]["linux-sbsa"] = man["cuda_nvcc"]["linux-x86_64"]
    names = ["cuda_nvcc", "cuda_opencl"]
    arts = manifest.select_artifacts(man, names, platform="linux-sbsa", optional=["cuda_opencl"])
    assert [a["component"] for a in arts] == ["cuda_nvcc"]
    arts = manifest.select_artifacts(man, names, platform="linux-x86_64", optional=["cuda_opencl"])
    assert [a["component"] for a in arts] == names
    with pytest.raises(ManifestError, match="cuda_opencl 13.0.85 has no linux-sbsa build; it has: linux-x86"):
        manifest.select_artifacts(man, names, platform="linux-sbsa")


def test_select_missing_component_lists_available():
    man = load("redistrib_13.0.2.json")
    with pytest.raises(
        manifest.ManifestError, match=r"has no component 'cuda_gdb'; it has: cuda_cccl, cuda_crt"
    ):
        manifest.select_artifacts(man, ["cuda_nvcc", "cuda_gdb"], platform="linux-x86_64")
    arts = manifest.select_artifacts(
        man, ["cuda_nvcc", "cuda_gdb"], platform="linux-x86_64", optional=["cuda_gdb"]
    )
    assert [a["component"] for a in arts] == ["cuda_nvcc"]


def test_select_missing_platform():
    man = load("redistrib_13.0.2.json")
    with pytest.raises(
        manifest.ManifestError, match="cuda_nvcc 13.0.88 has no linux-sbsa build; it has: linux-x86_64"
    ):
        manifest.select_artifacts(man, ["cuda_nvcc"], platform="linux-sbsa")
    with pytest.raises(ManifestError, match="platform 'windows-x86_64'"):
        manifest.select_artifacts(man, ["cuda_nvcc"], platform="windows-x86_64")


def test_select_rejects_bad_checksum_field():
    man = load("redistrib_13.0.2.json")
    man["cuda_nvcc"]["linux-x86_64"]["sha256"] = "not-a-hash"
    with pytest.raises(ManifestError, match="missing relative_path or sha256"):
        manifest.select_artifacts(man, ["cuda_nvcc"], platform="linux-x86_64")


def test_check_versions_names_the_label():
    arts = [{"component": "cudnn", "version": "9.14.0.64"}]
    manifest.check_versions(arts, "9.14.0.64", "cudnn_version", "m")
    manifest.check_versions(arts, None, "cudnn_version", "m")
    with pytest.raises(ManifestError, match="cudnn_version: cudnn in m is version 9.14.0.64"):
        manifest.check_versions(arts, "9.14.0.1", "cudnn_version", "m")
