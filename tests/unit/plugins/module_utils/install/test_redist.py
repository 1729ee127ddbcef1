"""Redist manifest reading, artifact selection, URLs, archive safety, pruning."""

import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import redist

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
    with pytest.raises(redist.RedistError, match="product 'nccl'"):
        redist.manifest_url("http://x", "nccl", "1.0.0")
    with pytest.raises(redist.RedistError, match="base URL is empty"):
        redist.manifest_url("", "cuda", "13.0.2")


@pytest.mark.parametrize("rel", ["../etc/passwd", "/abs/path", "a/../../b", "a b/c", ""])
def test_artifact_url_refuses_odd_paths(rel):
    with pytest.raises(redist.RedistError, match="relative_path"):
        redist.artifact_url("http://m", "cudnn", rel)


def test_cuda_release_mapping():
    assert redist.cuda_release("13.0") == "13.0.2"
    assert redist.cuda_release("12.9") == "12.9.1"
    assert redist.cuda_release("13.0.1") == "13.0.1"
    assert redist.cuda_release("13.0", {"13.0": "13.0.0"}) == "13.0.0"


@pytest.mark.parametrize("bad", ["13.x", "thirteen", "", "13"])
def test_cuda_release_bad_input_names_variable(bad):
    with pytest.raises(redist.RedistError, match="cuda_toolkit_versions"):
        redist.cuda_release(bad)


def test_cuda_release_unknown_lists_known():
    with pytest.raises(redist.RedistError, match=r"CUDA 11\.2 has no known redist release; known: 12\.4,"):
        redist.cuda_release("11.2")


def test_cudnn_release():
    assert redist.cudnn_release("9.14.0") == ("9.14.0", None)
    assert redist.cudnn_release("9.14.0.64") == ("9.14.0", "9.14.0.64")
    with pytest.raises(redist.RedistError, match="cudnn_version"):
        redist.cudnn_release("9.x")
    with pytest.raises(redist.RedistError, match=r"cudnn_version: '9\.14' needs at least X\.Y\.Z"):
        redist.cudnn_release("9.14")


def test_parse_manifest_rejects_garbage():
    with pytest.raises(redist.RedistError, match="is not JSON"):
        redist.parse_manifest(b"<html>404</html>", "m")
    with pytest.raises(redist.RedistError, match="lists no components"):
        redist.parse_manifest({"release_date": "2025-01-01"}, "m")
    with pytest.raises(redist.RedistError, match="not a redist manifest"):
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
        redist.RedistError,
        match=r"cudnn_cuda_major: cudnn 9\.14\.0\.64 has no build for CUDA 11 .* CUDA 12, 13",
    ):
        redist.select_artifacts(
            man, ["cudnn"], platform="linux-x86_64", cuda_variant="11", var="cudnn_cuda_major"
        )
    with pytest.raises(redist.RedistError, match="a CUDA major is needed"):
        redist.select_artifacts(man, ["cudnn"], platform="linux-x86_64")


def test_select_cuda_components():
    man = load("redistrib_13.0.2.json")
    arts = redist.select_artifacts(man, redist.TOOLKIT_COMPONENTS[13], platform="linux-x86_64")
    assert [a["component"] for a in arts] == redist.TOOLKIT_COMPONENTS[13]
    assert {a["component"]: a["version"] for a in arts}["cuda_cudart"] == "13.0.96"


def test_select_missing_component_lists_available():
    man = load("redistrib_13.0.2.json")
    with pytest.raises(redist.RedistError, match=r"has no component 'cuda_gdb'; it has: cuda_cccl, cuda_crt"):
        redist.select_artifacts(man, ["cuda_nvcc", "cuda_gdb"], platform="linux-x86_64")
    arts = redist.select_artifacts(
        man, ["cuda_nvcc", "cuda_gdb"], platform="linux-x86_64", optional=["cuda_gdb"]
    )
    assert [a["component"] for a in arts] == ["cuda_nvcc"]


def test_select_missing_platform():
    man = load("redistrib_13.0.2.json")
    with pytest.raises(
        redist.RedistError, match="cuda_nvcc 13.0.88 has no linux-sbsa build; it has: linux-x86_64"
    ):
        redist.select_artifacts(man, ["cuda_nvcc"], platform="linux-sbsa")
    with pytest.raises(redist.RedistError, match="platform 'windows-x86_64'"):
        redist.select_artifacts(man, ["cuda_nvcc"], platform="windows-x86_64")


def test_select_rejects_bad_checksum_field():
    man = load("redistrib_13.0.2.json")
    man["cuda_nvcc"]["linux-x86_64"]["sha256"] = "not-a-hash"
    with pytest.raises(redist.RedistError, match="missing relative_path or sha256"):
        redist.select_artifacts(man, ["cuda_nvcc"], platform="linux-x86_64")


def _tar(path, members):
    with tarfile.open(path, "w:xz") as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                data = payload.encode()
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
            elif kind == "sym":
                info.type = tarfile.SYMTYPE
                info.linkname = payload
                tar.addfile(info)
            elif kind == "hard":
                info.type = tarfile.LNKTYPE
                info.linkname = payload
                tar.addfile(info)


def test_unpack_strips_top_directory_and_keeps_relative_links(tmp_path):
    arc = tmp_path / "a.tar.xz"
    _tar(
        arc,
        [
            ("top/lib/libx.so.9.1", "file", "x"),
            ("top/lib/libx.so.9", "sym", "libx.so.9.1"),
            ("top/include/x.h", "file", "#define X 1"),
        ],
    )
    out = tmp_path / "out"
    out.mkdir()
    redist.unpack(str(arc), str(out))
    assert (out / "lib" / "libx.so.9.1").read_text() == "x"
    assert os.readlink(out / "lib" / "libx.so.9") == "libx.so.9.1"
    assert (out / "include" / "x.h").exists()


@pytest.mark.parametrize(
    "members",
    [
        [("top/../../evil", "file", "x")],
        [("top/lib/l", "sym", "/etc/passwd")],
        [("top/lib/l", "sym", "../../../etc/passwd")],
        [("top/lib/a", "file", "x"), ("top/lib/b", "hard", "top/lib/a")],
    ],
)
def test_unpack_refuses_escaping_members(tmp_path, members):
    arc = tmp_path / "bad.tar.xz"
    _tar(arc, members)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(redist.RedistError):
        redist.unpack(str(arc), str(out))


def test_unpack_corrupt_archive_is_a_clear_error(tmp_path):
    arc = tmp_path / "c.tar.xz"
    arc.write_bytes(b"\xfd7zXZ\x00garbage")
    with pytest.raises(redist.RedistError, match="cannot unpack c.tar.xz"):
        redist.unpack(str(arc), str(tmp_path))


def test_install_tree_marker_and_idempotence(tmp_path):
    arc = tmp_path / "a.tar.xz"
    _tar(arc, [("top/lib/libx.so", "file", "x")])
    arts = [{"component": "x", "version": "1.0", "sha256": "a" * 64}]
    dest = tmp_path / "opt" / "x-1.0"
    assert not redist.is_installed(str(dest), arts)
    redist.install_tree(str(dest), [str(arc)], arts, lib64_link=True)
    assert redist.is_installed(str(dest), arts)
    assert os.readlink(dest / "lib64") == "lib"
    assert json.loads((dest / redist.MARKER).read_text())["artifacts"][0]["sha256"] == "a" * 64
    assert not redist.is_installed(str(dest), [dict(arts[0], sha256="b" * 64)])
    assert sorted(os.listdir(tmp_path / "opt")) == ["x-1.0"]


def test_switch_link(tmp_path):
    link = tmp_path / "current"
    assert redist.switch_link(str(link), "/a") is True
    assert redist.switch_link(str(link), "/a") is False
    assert redist.switch_link(str(link), "/b") is True
    assert os.readlink(link) == "/b"
    (tmp_path / "dir").mkdir()
    with pytest.raises(redist.RedistError, match="not a symlink"):
        redist.switch_link(str(tmp_path / "dir"), "/a")


def test_prune_plan_keeps_newest_and_protected(tmp_path):
    for name in [
        "9.10.2.21-cuda12",
        "9.12.0.46-cuda12",
        "9.14.0.64-cuda12",
        "9.28.0.42-cuda12",
        "9.14.0.64-cuda13",
    ]:
        (tmp_path / name).mkdir()
        (tmp_path / name / redist.MARKER).write_text("{}")
    (tmp_path / "9.1.0.70-cuda12").mkdir()  # not ours (no marker): never touched
    victims = redist.prune_plan(str(tmp_path), r"^[0-9.]+-cuda12$", 1, [str(tmp_path / "9.14.0.64-cuda12")])
    assert sorted(os.path.basename(v) for v in victims) == ["9.10.2.21-cuda12", "9.12.0.46-cuda12"]
    assert redist.prune_plan(str(tmp_path), r"^[0-9.]+-cuda12$", 5, []) == []
