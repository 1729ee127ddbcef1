"""A streaming writer of valid .xz files whose LZMA2 data is stored, not compressed.

The cuDNN libraries are ~1 GB of mostly precompiled GPU code that LZMA squeezes by only
~20-25 %, at a few MB/s per core on small CI machines. Stored LZMA2 chunks (a part of the
format every xz decoder reads: `tar -xJ`, Python's lzma, Ansible's unarchive) make a
.tar.xz that is written and unpacked at memory speed. Layout (xz file format 1.2.0):
stream header, one block [header, LZMA2 chunks (0x01 = stored + dictionary reset, then
0x02 = stored), end marker 0x00, padding, CRC32 of the data], index, stream footer.
"""

import struct
import zlib

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
