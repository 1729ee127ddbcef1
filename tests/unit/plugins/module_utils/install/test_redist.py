"""Redist archives: archive safety, atomic install trees, links, pruning (install/redist.py)."""

import io
import json
import os
import tarfile
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import redist

DATA = Path(__file__).resolve().parents[4] / "data" / "redist"


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


def test_an_upgrade_keeps_files_added_by_hand_in_a_dated_backup(tmp_path):
    """A cuDNN copied into gpufleet's toolkit tree (NVIDIA's old tarball guide) survives an upgrade."""
    arts = [{"component": "x", "version": "1.0", "sha256": "a" * 64}]
    old, new = tmp_path / "old.tar.xz", tmp_path / "new.tar.xz"
    _tar(old, [("top/lib/libx.so.1.0", "file", "x1")])
    _tar(new, [("top/lib/libx.so.1.1", "file", "x2")])
    dest = tmp_path / "opt" / "x"
    redist.install_tree(str(dest), [str(old)], arts)
    assert (
        redist.install_tree(str(dest), [str(old)], [dict(arts[0], sha256="c" * 64)]) is None
    )  # nothing added
    (dest / "lib" / "libcudnn.so.9").write_text("a hand copy")
    backup = redist.install_tree(str(dest), [str(new)], [dict(arts[0], sha256="b" * 64)])
    assert backup is not None and backup.startswith(str(dest) + redist.BACKUP_TAG)
    assert (Path(backup) / "lib" / "libcudnn.so.9").read_text() == "a hand copy"
    assert sorted(os.listdir(dest / "lib")) == ["libx.so.1.1"]
    assert redist.added_files(backup, str(dest)) == ["lib/libcudnn.so.9", "lib/libx.so.1.0"]


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
