"""The lab's one way to write a .tar.xz: a tar streamed into a valid .xz whose LZMA2 data is stored, not
compressed (or, with GPUFLEET_XZ options, into `xz`), hashed on the way; lab/mirror.py (from NVIDIA's
wheels) and lab/gpuhost/mirror_from_host.py (from a host's packages) both write through ``write_tar_xz``.

The cuDNN libraries are ~1 GB of mostly precompiled GPU code that LZMA squeezes by only
~20-25 %, at a few MB/s per core on small CI machines. Stored LZMA2 chunks (a part of the
format every xz decoder reads: `tar -xJ`, Python's lzma, Ansible's unarchive) make a
.tar.xz that is written and unpacked at memory speed. Layout (xz file format 1.2.0):
stream header, one block [header, LZMA2 chunks (0x01 = stored + dictionary reset, then
0x02 = stored), end marker 0x00, padding, CRC32 of the data], index, stream footer.
"""

import hashlib
import io
import os
import struct
import subprocess
import tarfile
import threading
import zlib

from lab import LabError

# "store": valid .xz with stored (uncompressed) LZMA2 chunks, written and unpacked at memory
# speed (the cuDNN trees shrink only ~20 % under LZMA at a few MB/s per core; numbers in
# lab/README.md). GPUFLEET_XZ="-T0 -0" (any `xz` options) compresses instead.
XZ_OPTS = os.environ.get("GPUFLEET_XZ", "store").split()

MAGIC = b"\xfd7zXZ\x00"
FLAGS = b"\x00\x01"  # check type 1 = CRC32
CHUNK = 1 << 16  # the largest stored LZMA2 chunk
# block header: size byte, flags (1 filter, no sizes), LZMA2 filter 0x21 with 1 property byte
# (dictionary 1 MiB = 0x10), padding to 8 bytes, then its CRC32.
_BLOCK_HEADER = bytes([0x02, 0x00, 0x21, 0x01, 0x10, 0x00, 0x00, 0x00])
BLOCK_HEADER = _BLOCK_HEADER + struct.pack("<I", zlib.crc32(_BLOCK_HEADER))


def _varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _crc(data):
    return struct.pack("<I", zlib.crc32(data))


class StoredXZWriter:
    """File-like: write() bytes, close() finishes the .xz stream on the underlying file."""

    def __init__(self, fileobj):
        self._out = fileobj
        self._buf = bytearray()
        self._crc = 0
        self._size = 0  # uncompressed bytes
        self._data = 0  # LZMA2 bytes written
        self._first = True
        self.closed = False
        self._out.write(MAGIC + FLAGS + _crc(FLAGS))
        self._out.write(BLOCK_HEADER)

    def write(self, data):
        self._buf += data
        while len(self._buf) >= CHUNK:
            self._chunk(bytes(self._buf[:CHUNK]))
            del self._buf[:CHUNK]
        return len(data)

    def _chunk(self, data):
        control = 0x01 if self._first else 0x02
        self._first = False
        self._out.write(bytes([control]) + struct.pack(">H", len(data) - 1))
        self._out.write(data)
        self._crc = zlib.crc32(data, self._crc)
        self._size += len(data)
        self._data += 3 + len(data)

    def flush(self):
        return None

    def close(self):
        if self.closed:
            return
        if self._buf:
            self._chunk(bytes(self._buf))
            self._buf.clear()
        self._out.write(b"\x00")  # LZMA2 end marker
        self._data += 1
        unpadded = len(BLOCK_HEADER) + self._data + 4
        self._out.write(b"\x00" * (-(len(BLOCK_HEADER) + self._data) % 4))
        self._out.write(struct.pack("<I", self._crc))
        index = b"\x00" + _varint(1) + _varint(unpadded) + _varint(self._size)
        index += b"\x00" * (-len(index) % 4)
        index += _crc(index)
        self._out.write(index)
        backward = struct.pack("<I", len(index) // 4 - 1)
        self._out.write(_crc(backward + FLAGS) + backward + FLAGS + b"YZ")
        self.closed = True


class _HashingFile:
    """Writes through to a file, hashing (sha256, md5) and counting on the way."""

    def __init__(self, fileobj):
        self._out = fileobj
        self.sha256 = hashlib.sha256()
        self.md5 = hashlib.md5()
        self.size = 0

    def write(self, data):
        self._out.write(data)
        self.sha256.update(data)
        self.md5.update(data)
        self.size += len(data)
        return len(data)


def _pump(src, dst):
    for block in iter(lambda: src.read(1 << 20), b""):
        dst.write(block)


def write_tar_xz(path, fill, opts):
    """Write ``path`` (through ``path``.part) as the tar that ``fill(tar)`` fills, packed as stored xz when
    ``opts`` is ["store"], else by `xz OPTS -c`; returns (size, sha256, md5) of the file."""
    tmp = path.with_name(path.name + ".part")
    tmp.parent.mkdir(parents=True, exist_ok=True)
    with open(tmp, "wb") as raw:
        out = _HashingFile(raw)
        if opts == ["store"]:
            xz = StoredXZWriter(out)
            with tarfile.open(fileobj=xz, mode="w|", format=tarfile.PAX_FORMAT, bufsize=1 << 20) as tar:
                fill(tar)
            xz.close()
        else:
            proc = subprocess.Popen(["xz", *opts, "-c"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            pump = threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True)
            pump.start()
            try:
                with tarfile.open(fileobj=proc.stdin, mode="w|", format=tarfile.PAX_FORMAT) as tar:
                    fill(tar)
            finally:
                proc.stdin.close()
                rc = proc.wait()
                pump.join()
            if rc != 0:
                raise LabError(f"xz {' '.join(opts)} failed ({rc}) on {path}: check disk space")
    os.replace(tmp, path)
    return out.size, out.sha256.hexdigest(), out.md5.hexdigest()


def tar_info(name, mtime, mode=0o644):
    """A root-owned member of the archives: ``name`` dated ``mtime``."""
    ti = tarfile.TarInfo(name)
    ti.mtime, ti.mode, ti.uid, ti.gid, ti.uname, ti.gname = mtime, mode, 0, 0, "root", "root"
    return ti


def add_dirs(tar, top, rel, seen, mtime):
    """The folders above ``top``/``rel`` not yet in ``seen`` (which they join), as NVIDIA lists them."""
    parts = [top, *rel.split("/")[:-1]]
    for i in range(1, len(parts) + 1):
        name = "/".join(parts[:i])
        if name in seen:
            continue
        seen.add(name)
        ti = tar_info(name, mtime, 0o755)
        ti.type = tarfile.DIRTYPE
        tar.addfile(ti)


def add_link(tar, name, target, mtime):
    ti = tar_info(name, mtime, 0o777)
    ti.type, ti.linkname = tarfile.SYMTYPE, target
    tar.addfile(ti)


def add_bytes(tar, name, data, mtime):
    ti = tar_info(name, mtime)
    ti.size = len(data)
    tar.addfile(ti, io.BytesIO(data))
