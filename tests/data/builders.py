"""Synthetic host files for tests and benchmarks: ELF shared objects, fatbin sections, loader caches.

These write what the readers in plugins/module_utils/probe/ parse (elf.py, fatbin.py, ldcache.py), with the
readers' own constants, so a layout change shows here too. They live under tests/ so that no builder rides
in the nvidia_facts payload.
"""

from __future__ import annotations

import struct

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.elf import (
    DT_NEEDED,
    DT_NULL,
    DT_RPATH,
    DT_RUNPATH,
    DT_SONAME,
    DT_STRSZ,
    DT_STRTAB,
    ELF_MAGIC,
    PT_DYNAMIC,
    PT_LOAD,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.fatbin import (
    FATBIN_MAGIC,
    KIND_ELF,
    SECTION,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.ldcache import NEW_MAGIC


def build_elf(needed=(), soname=None, rpath=None, runpath=None, padding=0):
    """Bytes of a minimal 64-bit little-endian ELF shared object with these dynamic entries."""
    strtab = bytearray(b"\0")
    entries = []

    def add(tag, text):
        entries.append((tag, len(strtab)))
        strtab.extend(text.encode() + b"\0")

    for name in needed:
        add(DT_NEEDED, name)
    for tag, text in ((DT_SONAME, soname), (DT_RPATH, rpath), (DT_RUNPATH, runpath)):
        if text is not None:
            add(tag, text)
    phoff, phnum = 64, 2
    strtab_at = phoff + 56 * phnum
    dynamic_at = strtab_at + len(strtab)
    entries += [(DT_STRTAB, strtab_at), (DT_STRSZ, len(strtab)), (DT_NULL, 0)]
    dynamic = b"".join(struct.pack("<qQ", tag, value) for tag, value in entries)
    total = dynamic_at + len(dynamic)
    header = ELF_MAGIC + bytes([2, 1, 1]) + bytes(9)
    header += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, phoff, 0, 0, 64, 56, phnum, 64, 0, 0)
    load = struct.pack("<IIQQQQQQ", PT_LOAD, 4, 0, 0, 0, total, total, 0x1000)
    dyn = struct.pack("<IIQQQQQQ", PT_DYNAMIC, 4, dynamic_at, dynamic_at, dynamic_at, len(dynamic), 0, 8)
    return header + load + dyn + bytes(strtab) + dynamic + bytes(padding)


def build_fatbin(blobs):
    """Bytes of fatbin blobs: ``blobs`` is [[(kind, arch, payload size), ...], ...]."""
    out = bytearray()
    for entries in blobs:
        body = bytearray()
        for kind, arch, payload in entries:
            header_size = 64 if kind == KIND_ELF else 72
            head = struct.pack("<HHIQIIHHI", kind, 0x0101, header_size, payload, 0, 0, 7, 1, arch)
            body += head.ljust(header_size, b"\0") + bytes(payload)
        out += struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body
        out += bytes(-len(out) % 8)
    return bytes(out)


def add_section(elf_bytes, data, name=SECTION):
    """Bytes of ``elf_bytes`` (an ELF64 little-endian file without section headers, e.g. build_elf())
    with one section ``name`` holding ``data``, a section name table and the section header table appended."""
    body = bytearray(elf_bytes) + bytes(-len(elf_bytes) % 8)
    data_at = len(body)
    body += data
    names = b"\0" + name.encode() + b"\0.shstrtab\0"
    names_at = len(body)
    body += names + bytes(-(len(body) + len(names)) % 8)
    shoff = len(body)
    body += bytes(64)  # SHN_UNDEF
    body += struct.pack("<IIQQQQIIQQ", 1, 1, 2, 0, data_at, len(data), 0, 0, 8, 0)  # PROGBITS, ALLOC
    body += struct.pack("<IIQQQQIIQQ", len(name) + 2, 3, 0, 0, names_at, len(names), 0, 0, 1, 0)  # STRTAB
    struct.pack_into("<Q", body, 40, shoff)
    struct.pack_into("<HHH", body, 58, 64, 3, 2)
    return bytes(body)


def build_ld_cache(entries):
    """Bytes of a new-format loader cache (glibc-ld.so.cache1.1) from [(soname, path, flags)]."""
    strings = bytearray()
    offsets = []
    header_len = 48 + 24 * len(entries)
    for soname, path, _flags in entries:
        key = header_len + len(strings)
        strings += soname.encode() + b"\0"
        value = header_len + len(strings)
        strings += path.encode() + b"\0"
        offsets.append((key, value))
    head = NEW_MAGIC + struct.pack("<IIB3xI3I", len(entries), len(strings), 2, 0, 0, 0, 0)
    body = b"".join(
        struct.pack("<iIIIQ", flags, key, value, 0, 0)
        for (_soname, _path, flags), (key, value) in zip(entries, offsets)
    )
    return bytes(head + body + strings)
