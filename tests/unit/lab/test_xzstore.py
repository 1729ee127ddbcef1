import hashlib
import io
import lzma
import os
import shutil
import subprocess
import tarfile

import pytest

from lab.xzstore import CHUNK, StoredXZWriter, add_bytes, add_dirs, add_link, write_tar_xz


def _stored(data, piece=7777):
    buf = io.BytesIO()
    writer = StoredXZWriter(buf)
    for i in range(0, len(data), piece):
        writer.write(data[i : i + piece])
    writer.close()
    return buf.getvalue()


@pytest.mark.parametrize("size", [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 5 * CHUNK + 123])
def test_python_lzma_reads_it(size):
    data = os.urandom(size)
    assert lzma.decompress(_stored(data)) == data


def test_xz_binary_verifies_it():
    assert shutil.which("xz"), "xz (xz-utils, priority required on Debian) is needed"
    data = os.urandom(3 * CHUNK + 5)
    blob = _stored(data)
    assert subprocess.run(["xz", "-t", "-"], input=blob, check=False).returncode == 0
    out = subprocess.run(["xz", "-dc"], input=blob, capture_output=True, check=True).stdout
    assert out == data


def test_size_is_data_plus_small_overhead():
    data = b"\0" * (10 * CHUNK)
    blob = _stored(data)
    assert len(data) < len(blob) < len(data) + 3 * 10 + 100


@pytest.mark.parametrize("opts", [["store"], ["-0"]])
def test_write_tar_xz_writes_the_tar_and_returns_its_sums(tmp_path, opts):
    def fill(tar):
        add_dirs(tar, "top", "lib/libx.so.1", set(), 1700000000)
        add_bytes(tar, "top/lib/libx.so.1", b"elf", 1700000000)
        add_link(tar, "top/lib/libx.so", "libx.so.1", 1700000000)

    path = tmp_path / "a" / "x.tar.xz"
    size, sha256, md5 = write_tar_xz(path, fill, opts)
    data = path.read_bytes()
    assert (size, sha256, md5) == (len(data), hashlib.sha256(data).hexdigest(), hashlib.md5(data).hexdigest())
    assert not path.with_name("x.tar.xz.part").exists()
    with tarfile.open(path, "r:xz") as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert list(members) == ["top", "top/lib", "top/lib/libx.so.1", "top/lib/libx.so"]
        assert members["top/lib"].isdir() and members["top/lib"].mode == 0o755
        assert members["top/lib/libx.so"].linkname == "libx.so.1"
        assert {(m.uname, m.mtime) for m in members.values()} == {("root", 1700000000)}
        assert tar.extractfile("top/lib/libx.so.1").read() == b"elf"
