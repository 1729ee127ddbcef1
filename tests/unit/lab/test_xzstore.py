import io
import lzma
import os
import shutil
import subprocess

import pytest

from lab.xzstore import CHUNK, StoredXZWriter


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
