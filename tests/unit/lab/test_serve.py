"""The mirror server's config hash: what makes `lab mirror serve` start the server again."""

import shutil

from lab import serve


def _cfg(path):
    return {"image": serve.SERVER_IMAGE, "command": ["x"], "volumes": {str(path): {"bind": "/srv/mirror"}}}


def test_same_directory_same_hash(tmp_path):
    d = tmp_path / "mirror"
    d.mkdir()
    assert serve._config_hash(_cfg(d)) == serve._config_hash(_cfg(d))


def test_directory_made_again_at_the_same_path_changes_the_hash(tmp_path):
    # a new clone in the same folder: a running server would still serve the deleted directory
    d = tmp_path / "mirror"
    d.mkdir()
    (d / "keep").write_text("x")  # hold the old inode number in use while the new directory is made
    before = serve._config_hash(_cfg(d))
    moved = tmp_path / "old-mirror"
    shutil.move(str(d), str(moved))
    d.mkdir()
    assert serve._config_hash(_cfg(d)) != before


def test_other_path_changes_the_hash(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert serve._config_hash(_cfg(a)) != serve._config_hash(_cfg(b))
