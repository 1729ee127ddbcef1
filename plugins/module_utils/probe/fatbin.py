# Copyright: gpufleet contributors
# Apache-2.0
"""The GPU compute capabilities a CUDA library was compiled for, read from its ``.nv_fatbin`` ELF section
(never loaded, never imported): the cubin (SASS) and PTX entries of its fatbin blobs.

Stdlib only. Only headers are read (the ELF header, the section header table, the section name table, then
one small ``pread`` per fatbin blob header and per entry header): payloads are skipped, never read (the
fatbin of libtorch_cuda.so is most of its gigabyte). Bounded, see ``Budget``: at most ``MAX_READS`` header
reads and ``MAX_BLOBS`` blobs per file, and a shared deadline; when a bound stops the walk, the result says
``complete: false`` and holds what the blobs read so far carry.

The layout (little-endian; verified against two public parsers: n-eiling/cuda-fatbin-decompression
``fatbin-decompress.h`` (``struct fat_elf_header`` / ``fat_text_header``, loop in ``decompress_fatbin``)
and jiegec/fatbinary ``src/lib.rs`` (``FatBinaryHeader`` / ``FatBinaryEntryHeader``, loop in
``FatBinary::read``), and against a ``fatbinData`` dump whose first quad is ``0x00100001ba55ed50``):
- blob header, 16 bytes: uint32 magic 0xBA55ED50, uint16 version (1), uint16 header_size (16),
  uint64 fat_size (the bytes of entries after the header);
- entry header: uint16 kind (1 PTX, 2 ELF cubin), uint16 version, uint32 header_size (64 for ELF, >= 72
  for PTX), uint64 payload size, uint32 compressed size, uint32 options offset, uint16 minor, uint16 major
  (the entry's format version), uint32 arch at offset 28 (the SM number: 90 for sm_90 / compute_90);
  the next entry starts at entry + header_size + payload size; the next blob at blob + 16 + fat_size,
  rounded up to 8 (the section's ``.align 8``).
The entry header carries no documented mark of NVIDIA's ``a`` (sm_90a) and ``f`` (sm_100f) variants: they
are counted as their plain number.
"""

from __future__ import annotations

import os
import struct
import time

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import describe_error

FATBIN_MAGIC = 0xBA55ED50
SECTION = ".nv_fatbin"
KIND_PTX, KIND_ELF = 1, 2
MAX_SECTIONS = 4096
MAX_SHSTRTAB = 256 * 1024
MAX_READS = 8192  # header reads (pread calls) per file: blob headers and entry headers together
MAX_BLOBS = 16384
MAX_ENTRIES_PER_BLOB = 256
DEADLINE_S = 0.1  # wall time for every fatbin read of one probe run together
ENTRY_READ = 32  # bytes of an entry header read: kind .. arch
BLOB_READ = 16 + ENTRY_READ  # a blob header and its first entry header, in one read


class Budget:
    """What one probe run may spend on fatbin headers: ``seconds`` of wall time for every file together
    (counted from the first fatbin read), and per-file bounds on reads and blobs."""

    def __init__(self, seconds=DEADLINE_S, max_reads=MAX_READS, max_blobs=MAX_BLOBS, clock=time.monotonic):
        self.clock = clock
        self.seconds = seconds
        self.deadline = None
        self.max_reads = max_reads
        self.max_blobs = max_blobs

    def expired(self):
        now = self.clock()
        if self.deadline is None:
            self.deadline = now + self.seconds
        return now >= self.deadline


class _Reader:
    """``pread`` of a file descriptor, counting the calls."""

    def __init__(self, fd, size):
        self.fd = fd
        self.size = size
        self.reads = 0

    def at(self, offset, length):
        self.reads += 1
        data = os.pread(self.fd, length, offset)
        if len(data) < length:
            raise ValueError(
                f"truncated file (wanted {length} bytes at offset {offset}, file has {self.size})"
            )
        return data


def _section(reader):
    """(offset, size) of the ``.nv_fatbin`` section, or None when the file has none; ValueError when the
    file is not a readable 64-bit little-endian ELF file."""
    ident = os.pread(reader.fd, 64, 0)
    if not ident.startswith(b"\x7fELF"):
        raise ValueError("not an ELF file")
    if len(ident) < 64:
        raise ValueError("truncated ELF header")
    if ident[4] != 2 or ident[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", ident, 40)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 58)
    if shnum == 0:
        raise ValueError("no section header table (its .nv_fatbin section cannot be found)")
    if shnum > MAX_SECTIONS or shentsize < 64 or shstrndx >= shnum:
        raise ValueError(f"implausible section header table ({shnum} entries of {shentsize} bytes)")
    table = reader.at(shoff, shnum * shentsize)
    headers = [struct.unpack_from("<IIQQQQ", table, i * shentsize) for i in range(shnum)]
    _name, _type, _flags, _addr, str_off, str_size = headers[shstrndx]
    names = reader.at(str_off, min(str_size, MAX_SHSTRTAB))
    for name_at, sh_type, _flags, _addr, offset, size in headers:
        end = names.find(b"\0", name_at)
        if names[name_at:end] == SECTION.encode():
            if sh_type == 8:  # SHT_NOBITS
                return None
            if offset + size > reader.size:
                raise ValueError(f"{SECTION} section ends past the end of the file")
            return offset, size
    return None


def _entries(reader, blob, end, first, found):
    """Walk one blob's entries (``first``: its first entry header, already read); adds (kind, arch) pairs to
    the set ``found``."""
    at, header = blob + 16, first
    for _count in range(MAX_ENTRIES_PER_BLOB):
        kind, _version, header_size, size = struct.unpack_from("<HHIQ", header, 0)
        arch = struct.unpack_from("<I", header, 28)[0]
        if header_size < ENTRY_READ or at + header_size + size > end:
            raise ValueError(f"fatbin entry at offset {at} points past its blob")
        if kind in (KIND_PTX, KIND_ELF) and 10 <= arch < 1000:
            found.add(("ptx" if kind == KIND_PTX else "sm", arch))
        at += header_size + size
        if at + ENTRY_READ > end:
            return
        header = reader.at(at, ENTRY_READ)
    raise ValueError(f"fatbin blob at offset {blob} has more than {MAX_ENTRIES_PER_BLOB} entries")


def _next_blob(reader, at, end):
    """(offset, first bytes) of the next blob at or after ``at`` (8-aligned, after up to 56 bytes of zero
    padding), or None at the end of the section; ValueError when something else is there."""
    at = (at + 7) & ~7
    if at + 16 > end:
        return None
    window = reader.at(at, min(64, end - at))
    for skip in range(0, len(window) - 15, 8):
        if struct.unpack_from("<I", window, skip)[0] == FATBIN_MAGIC:
            head = window[skip : skip + BLOB_READ]
            if len(head) < BLOB_READ and at + skip + len(head) < end:
                head = reader.at(at + skip, min(BLOB_READ, end - at - skip))
            return at + skip, head
        if window[skip : skip + 8].strip(b"\0"):
            break
    if not window.strip(b"\0") and at + len(window) >= end:
        return None
    raise ValueError(f"no fatbin header (magic 0xBA55ED50) at offset {at}")


def _blob(reader, at, head, end, found):
    """Read the blob at ``at`` (``head``: its first bytes) and its entries' headers into the set ``found``;
    returns where the blob ends."""
    magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", head, 0)
    if magic != FATBIN_MAGIC or header_size != 16:
        raise ValueError(f"bad fatbin header at offset {at}")
    blob_end = at + 16 + fat_size
    if blob_end > end:
        raise ValueError(f"fatbin blob at offset {at} ({fat_size} bytes) ends past its section")
    if fat_size >= ENTRY_READ:
        if len(head) < BLOB_READ:
            raise ValueError(f"truncated fatbin blob at offset {at}")
        _entries(reader, at, blob_end, head[16:BLOB_READ], found)
    return blob_end


def _names(counts, blobs, common):
    """["9.0", ...] of the arch numbers found in at least half of ``blobs`` (``common``), or in fewer."""
    return [f"{a // 10}.{a % 10}" for a in sorted(counts) if (2 * counts[a] >= blobs) == common]


def walk(reader, offset, size, budget):
    """{sm, ptx, sm_some_blobs, ptx_some_blobs, sampled_blobs, complete[, stopped]} of the fatbin section at
    ``offset``. A bad blob after good ones stops the walk (``complete: false``, ``stopped`` says why); a bad
    first blob raises.

    ``sm``/``ptx``: the archs that at least half of the blobs read carry (the build's arch list: on the H200,
    libtorch_cuda.so of torch 2.11.0+cu130 has 444 blobs, each with sm_75 sm_80 sm_86 sm_90 sm_100 sm_120 =
    torch.cuda.get_arch_list(), and sm_103 in 59, sm_89 and sm_121 in one: kernels built for more archs);
    ``*_some_blobs``: the archs of fewer blobs."""
    counts = {"sm": {}, "ptx": {}}
    end, blobs, stopped = offset + size, 0, None
    nxt = _next_blob(reader, offset, end)
    if nxt is None:
        raise ValueError(f"{SECTION} holds no fatbin blob")
    while nxt is not None:
        if blobs >= budget.max_blobs or reader.reads + 2 > budget.max_reads or budget.expired():
            stopped = f"stopped after {blobs} blobs and {reader.reads} header reads (a bound was reached)"
            break
        found = set()
        try:
            blob_end = _blob(reader, nxt[0], nxt[1], end, found)
        except (ValueError, struct.error) as exc:
            if not blobs:
                raise
            stopped = f"stopped after {blobs} blobs: {exc}"
            break
        blobs += 1
        for kind, arch in found:
            counts[kind][arch] = counts[kind].get(arch, 0) + 1
        try:
            nxt = _next_blob(reader, blob_end, end)
        except (ValueError, struct.error) as exc:
            stopped = f"stopped after {blobs} blobs: {exc}"
            break
    result = {
        "sm": _names(counts["sm"], blobs, True),
        "ptx": _names(counts["ptx"], blobs, True),
        "sm_some_blobs": _names(counts["sm"], blobs, False),
        "ptx_some_blobs": _names(counts["ptx"], blobs, False),
        "sampled_blobs": blobs,
        "complete": stopped is None,
    }
    if stopped:
        result["stopped"] = stopped
    return result


def _no_readahead(fd):
    """Tell the kernel not to read ahead: the reads are small and far apart (on the H200 this halves a cold
    read of libtorch_cuda.so: 206 -> 94 ms). Only a hint: where it fails, nothing changes."""
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
    except (AttributeError, OSError):
        return


def compute_capabilities(path, budget=None):
    """({sm, ptx, sampled_blobs, complete}, None) of the file at ``path`` (outer path), or (None, reason).

    ``sm``/``ptx``: the compute capabilities ("9.0") of its cubin and PTX entries; ``sampled_blobs``: the
    blobs read; ``complete``: false when a bound of ``budget`` (a ``Budget``) stopped the walk early.
    A file without a ``.nv_fatbin`` section gives (None, reason)."""
    budget = budget or Budget()
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        return None, describe_error(exc)
    try:
        _no_readahead(fd)
        reader = _Reader(fd, os.fstat(fd).st_size)
        section = _section(reader)
        if section is None:
            return None, f"no {SECTION} section (no CUDA kernels compiled in)"
        return walk(reader, section[0], section[1], budget), None
    except (ValueError, struct.error, IndexError) as exc:
        return None, str(exc)
    except Exception as exc:  # a probe never raises for what it observes
        return None, describe_error(exc)
    finally:
        os.close(fd)


def read_compiled_for(root, inner, budget=None):
    """compute_capabilities() of a file inside ``root`` (symlinks resolved inside it)."""
    real, reason = root.realpath(inner)
    if reason:
        return None, f"{inner}: {reason}"
    result, reason = compute_capabilities(root.outer(real), budget)
    return result, (f"{inner}: {reason}" if reason else None)
