"""lab/gpuhost/mirror_from_host.py: a host's files and links packed as lab/mirror.py packs a wheel's."""

import hashlib
import tarfile

from lab.gpuhost import mirror_from_host


def test_write_archive_packs_files_links_and_the_license(tmp_path):
    lib = tmp_path / "libcudnn.so.9.14.0"
    lib.write_bytes(b"elf")
    lib.chmod(0o600)
    members = mirror_from_host.Members()
    members.add_file("lib/libcudnn.so.9.14.0", str(lib))
    members.add_link("lib/libcudnn.so.9", "libcudnn.so.9.14.0")
    out = tmp_path / "mirror" / "cudnn.tar.xz"
    entry = mirror_from_host.write_archive(members, "top", b"license\n", out, 1700000000)
    data = out.read_bytes()
    assert entry == {
        "relative_path": None,
        "sha256": hashlib.sha256(data).hexdigest(),
        "md5": hashlib.md5(data).hexdigest(),
        "size": str(len(data)),
    }
    with tarfile.open(out, "r:xz") as tar:
        assert tar.getnames() == [
            "top",
            "top/lib",
            "top/lib/libcudnn.so.9",
            "top/lib/libcudnn.so.9.14.0",
            "top/LICENSE",
        ]
        assert tar.getmember("top/lib/libcudnn.so.9.14.0").mode == 0o644
        assert tar.getmember("top/lib/libcudnn.so.9").linkname == "libcudnn.so.9.14.0"
        assert tar.extractfile("top/LICENSE").read() == b"license\n"
