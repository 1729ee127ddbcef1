"""probe/fatbin.py: the compute capabilities a CUDA library was compiled for, from synthetic ELF files with a
.nv_fatbin section; bad input gives a reason, never an exception; bounds stop the walk (complete: false)."""

import struct

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import elf, fatbin
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.fatbin import KIND_ELF, KIND_PTX

from tests.data.builders import add_section, build_elf, build_fatbin
from tests.data.facts import fakeroot

# two blobs: sm_80 and sm_90 cubins and a compute_90 PTX, then sm_80 and sm_90 again
TWO_BLOBS = [
    [(KIND_ELF, 80, 100), (KIND_ELF, 90, 200), (KIND_PTX, 90, 333)],
    [(KIND_ELF, 80, 8), (KIND_ELF, 90, 9)],
]


def library(blobs=TWO_BLOBS, data=None):
    return add_section(
        build_elf(["libcudart.so.13"], "libx.so"), build_fatbin(blobs) if data is None else data
    )


def read(tmp_path, data, budget=None):
    fakeroot.write(tmp_path, "/lib/libx.so", data)
    return fatbin.read_compiled_for(Root(str(tmp_path)), "/lib/libx.so", budget)


def section_at(data):
    """(offset, size) of the .nv_fatbin section of a library built by ``library``."""
    shoff = struct.unpack_from("<Q", data, 40)[0]
    _name, _type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", data, shoff + 64)
    return offset, size


def test_two_blobs_sm80_sm90_and_compute90(tmp_path):
    result, reason = read(tmp_path, library())
    assert reason is None
    assert result == {
        "sm": ["8.0", "9.0"], "ptx": ["9.0"], "sm_some_blobs": [], "ptx_some_blobs": [], "sampled_blobs": 2,
        "complete": True,
    }  # fmt: skip


def test_the_build_list_is_what_half_the_blobs_carry(tmp_path):
    """As libtorch_cuda.so of torch 2.11.0+cu130 on the H200: every blob has the build's list (= its
    torch.cuda.get_arch_list()), some kernels also sm_103, one also sm_89 and sm_121."""
    main = [(KIND_ELF, arch, 16) for arch in (75, 80, 86, 90, 100, 120)]
    blobs = [main] * 6 + [[*main, (KIND_ELF, 103, 8)]] * 3 + [[*main, (KIND_ELF, 89, 8), (KIND_ELF, 121, 8)]]
    result, _reason = read(tmp_path, library(blobs))
    assert result["sm"] == ["7.5", "8.0", "8.6", "9.0", "10.0", "12.0"]
    assert result["sm_some_blobs"] == ["8.9", "10.3", "12.1"]
    assert result["ptx"] == result["ptx_some_blobs"] == []


def test_the_dynamic_section_still_reads_with_the_fatbin_added(tmp_path):
    fakeroot.write(tmp_path, "/lib/libx.so", library())
    dynamic, reason = elf.read_dynamic(Root(str(tmp_path)), "/lib/libx.so")
    assert reason is None
    assert dynamic["needed"] == ["libcudart.so.13"]


def test_blackwell_numbers_and_padding_between_blobs(tmp_path):
    blobs = [[(KIND_ELF, 100, 5), (KIND_ELF, 103, 3)], [(KIND_ELF, 120, 1), (KIND_PTX, 120, 7)]]
    result, reason = read(tmp_path, library(blobs))
    assert reason is None
    assert result["sm"] == ["10.0", "10.3", "12.0"]
    assert result["ptx"] == ["12.0"]


def test_a_library_without_kernels(tmp_path):
    result, reason = read(tmp_path, add_section(build_elf(["libc.so.6"]), b"x" * 8, name=".data"))
    assert result is None
    assert reason == "/lib/libx.so: no .nv_fatbin section (no CUDA kernels compiled in)"


def _corrupt(data, at, fmt, value):
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


def _bad_inputs():
    good = library()
    offset, size = section_at(good)
    first_entry = offset + 16
    return [
        (b"", "not an ELF file"),
        (b"MZ" + bytes(100), "not an ELF file"),
        (b"\x7fELF\x02\x01", "truncated ELF header"),
        (b"\x7fELF\x01\x01" + bytes(58), "not a 64-bit little-endian ELF file"),
        (build_elf(["libc.so.6"]), "no section header table (its .nv_fatbin section cannot be found)"),
        (_corrupt(good, 60, "<H", 60000), "implausible section header table (60000 entries"),
        (good[: offset + 20], "truncated file"),  # the section header table is gone with the tail
        (_corrupt(good, offset, "<I", 0xDEADBEEF), "no fatbin header (magic 0xBA55ED50) at offset"),
        (_corrupt(good, offset + 8, "<Q", 1 << 40), "ends past its section"),
        (_corrupt(good, first_entry + 4, "<I", 1 << 30), "points past its blob"),
        (_corrupt(good, first_entry + 8, "<Q", 1 << 62), "points past its blob"),
        (_corrupt(good, section_header(good) + 32, "<Q", 1 << 50), "section ends past the end of the file"),
        (_corrupt(good, offset + 6, "<H", 999), "bad fatbin header at offset"),
        (library(data=bytes(16)), ".nv_fatbin holds no fatbin blob"),
        (library(data=bytes(size)), "no fatbin header (magic 0xBA55ED50) at offset"),
    ]


def section_header(data):
    return struct.unpack_from("<Q", data, 40)[0] + 64


@pytest.mark.parametrize(("index", "reason"), list(enumerate(r for _d, r in _bad_inputs())))
def test_bad_input_gives_a_reason(tmp_path, index, reason):
    data = _bad_inputs()[index][0]
    result, why = read(tmp_path, data)
    assert result is None
    assert reason in why
    assert why.startswith("/lib/libx.so: ")


def test_a_bad_blob_after_good_ones_keeps_what_was_read(tmp_path):
    blobs = [[(KIND_ELF, 80, 8)], [(KIND_ELF, 90, 8)]]
    good = library(blobs)
    offset, _size = section_at(good)
    second = offset + 16 + 64 + 8
    result, reason = read(tmp_path, _corrupt(good, second, "<I", 0x12345678))
    assert reason is None
    assert result["sm"] == ["8.0"]
    assert result["complete"] is False
    assert result["sampled_blobs"] == 1
    assert "no fatbin header" in result["stopped"]


def test_broken_symlink_directory_and_unreadable_file(tmp_path):
    root = Root(str(tmp_path))
    fakeroot.link(tmp_path, "/lib/libgone.so", "nowhere.so")
    result, reason = fatbin.read_compiled_for(root, "/lib/libgone.so")
    assert result is None
    assert reason.startswith("/lib/libgone.so: ")
    fakeroot.write(tmp_path, "/lib/dir.so/x", "")
    result, reason = fatbin.read_compiled_for(root, "/lib/dir.so")
    assert result is None
    assert reason.startswith("/lib/dir.so: ")


def test_too_many_entries_in_one_blob(tmp_path, monkeypatch):
    monkeypatch.setattr(fatbin, "MAX_ENTRIES_PER_BLOB", 4)
    result, reason = read(tmp_path, library([[(KIND_ELF, 80, 0)] * 10]))
    assert result is None
    assert "has more than 4 entries" in reason


def test_bounds_stop_the_walk_and_say_so(tmp_path):
    blobs = [[(KIND_ELF, 80, 0), (KIND_ELF, 90, 0)]] * 50 + [[(KIND_ELF, 120, 0)]]
    result, _reason = read(tmp_path, library(blobs), fatbin.Budget(max_blobs=10))
    assert result["sampled_blobs"] == 10
    assert result["complete"] is False
    assert result["sm"] == ["8.0", "9.0"]  # sm_120 is in the last blob, not read
    assert "stopped after 10 blobs" in result["stopped"]
    result, _reason = read(tmp_path, library(blobs), fatbin.Budget(max_reads=30))
    assert result["complete"] is False
    assert result["sampled_blobs"] < 20
    result, _reason = read(tmp_path, library(blobs))
    assert result["complete"] is True
    assert result["sampled_blobs"] == 51
    assert result["sm"] == ["8.0", "9.0"]
    assert result["sm_some_blobs"] == ["12.0"]


def test_the_deadline_is_shared_and_counted_from_the_first_read(tmp_path):
    now = [100.0]
    budget = fatbin.Budget(seconds=1.0, clock=lambda: now[0])
    now[0] = 500.0  # time spent before the first fatbin read does not count
    result, _reason = read(tmp_path, library(), budget)
    assert result["complete"] is True
    now[0] = 501.5
    result, _reason = read(tmp_path, library(), budget)
    assert result == {
        "sm": [], "ptx": [], "sm_some_blobs": [], "ptx_some_blobs": [], "sampled_blobs": 0, "complete": False,
        "stopped": "stopped after 0 blobs and 3 header reads (a bound was reached)",
    }  # fmt: skip


def test_huge_counts_are_bounded(tmp_path):
    """100000 empty blobs: the walk stops at the read bound, with no exception."""
    data = build_fatbin([[]] * 100000)
    result, reason = read(tmp_path, library(data=data))
    assert reason is None
    assert result["complete"] is False
    assert result["sampled_blobs"] <= fatbin.MAX_READS
