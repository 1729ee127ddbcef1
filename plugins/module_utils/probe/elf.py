# Copyright: gpufleet contributors
# Apache-2.0
"""The dynamic section of an ELF shared object, read from the file (never loaded): DT_NEEDED, DT_SONAME,
DT_RPATH and DT_RUNPATH, which decide where the loader looks for a library's dependencies.

Stdlib only. Reads are bounded (the ELF header, the program headers, the dynamic segment and its string
table: never the whole file, which is a gigabyte for libtorch_cuda.so). A file that is not ELF, is truncated
or is 32-bit gives a reason, never an exception.
"""

from __future__ import annotations

import struct

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import describe_error, open_file

ELF_MAGIC = b"\x7fELF"
PT_LOAD, PT_DYNAMIC = 1, 2
DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
MAX_PHNUM = 256
MAX_DYNAMIC = 64 * 1024
MAX_STRING = 64 * 1024


def _read_at(handle, offset, size):
    handle.seek(offset)
    data = handle.read(size)
    if len(data) < size:
        raise ValueError(f"truncated ELF file (wanted {size} bytes at offset {offset})")
    return data


def _header(handle):
    """(endian prefix, phoff, phentsize, phnum) of a 64-bit ELF file; raises ValueError otherwise."""
    ident = handle.read(64)
    if not ident.startswith(ELF_MAGIC):
        raise ValueError("not an ELF file")
    if len(ident) > 4 and ident[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    if len(ident) < 64:
        raise ValueError("truncated ELF header")
    endian = "<" if ident[5] == 1 else ">"
    phoff, _shoff = struct.unpack_from(endian + "QQ", ident, 32)
    phentsize, phnum = struct.unpack_from(endian + "HH", ident, 54)
    if phnum > MAX_PHNUM or (phnum and phentsize < 56):
        raise ValueError(f"implausible program header table ({phnum} entries of {phentsize} bytes)")
    return endian, phoff, phentsize, phnum


def _segments(handle, endian, phoff, phentsize, phnum):
    """[(p_type, offset, vaddr, filesz)] of the program headers."""
    table = _read_at(handle, phoff, phentsize * phnum)
    out = []
    for i in range(phnum):
        p_type, _flags, offset, vaddr, _paddr, filesz = struct.unpack_from(
            endian + "IIQQQQ", table, i * phentsize
        )
        out.append((p_type, offset, vaddr, filesz))
    return out


def _file_offset(segments, vaddr):
    for p_type, offset, start, filesz in segments:
        if p_type == PT_LOAD and start <= vaddr < start + filesz:
            return offset + (vaddr - start)
    raise ValueError(f"string table address {vaddr:#x} is in no loaded segment")


def _dynamic_entries(handle, endian, segments):
    dynamic = [s for s in segments if s[0] == PT_DYNAMIC]
    if not dynamic:
        return None
    _type, offset, _vaddr, filesz = dynamic[0]
    data = _read_at(handle, offset, min(filesz, MAX_DYNAMIC))
    entries = []
    for i in range(len(data) // 16):
        tag, value = struct.unpack_from(endian + "qQ", data, i * 16)
        if tag == DT_NULL:
            break
        entries.append((tag, value))
    return entries


def _string(handle, table, at):
    """The NUL-terminated string at offset ``at`` of the string table at file offset ``table`` (read alone:
    the .dynstr of libtorch_cuda.so is tens of MiB)."""
    handle.seek(table + at)
    data = handle.read(MAX_STRING)
    end = data.find(b"\0")
    if end < 0:
        raise ValueError("unterminated or truncated dynamic string")
    return data[:end].decode("utf-8", "replace")


def parse_dynamic(handle):
    """{needed, soname, rpath, runpath} of an open ELF file; raises ValueError when it cannot be read."""
    endian, phoff, phentsize, phnum = _header(handle)
    segments = _segments(handle, endian, phoff, phentsize, phnum)
    entries = _dynamic_entries(handle, endian, segments)
    result = {"needed": [], "soname": None, "rpath": None, "runpath": None}
    if entries is None:
        return result  # a static executable or an object without a dynamic section
    tags = dict(entries)
    if DT_STRTAB not in tags:
        raise ValueError("dynamic section without a string table")
    table = _file_offset(segments, tags[DT_STRTAB])
    size = tags.get(DT_STRSZ)
    for tag, value in entries:
        if tag not in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH):
            continue
        if size is not None and value >= size:
            raise ValueError("dynamic string offset beyond the string table")
        text = _string(handle, table, value)
        if tag == DT_NEEDED:
            result["needed"].append(text)
        else:
            result[{DT_SONAME: "soname", DT_RPATH: "rpath", DT_RUNPATH: "runpath"}[tag]] = text
    return result


def read_dynamic(root, inner):
    """({needed, soname, rpath, runpath}, None) of an ELF file inside ``root``, or (None, reason)."""
    real, reason = root.realpath(inner)
    if reason:
        return None, f"{inner}: {reason}"
    try:
        with open_file(root.outer(real), "rb") as handle:
            return parse_dynamic(handle), None
    except (ValueError, struct.error) as exc:
        return None, f"{inner}: {exc}"
    except Exception as exc:  # a probe never raises for what it observes
        return None, f"{inner}: {describe_error(exc)}"


def search_dirs(value, origin):
    """The directories of an RPATH/RUNPATH value, ``$ORIGIN`` expanded to ``origin`` (the object's dir)."""
    dirs = []
    for raw in (value or "").split(":"):
        item = raw.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
        if item and "$" not in item:  # $LIB, $PLATFORM: not used by the libraries gpufleet reads
            dirs.append(normalize(item))
    return dirs


def normalize(path):
    """``/a/b/../c`` -> ``/a/c`` (lexically, as the loader does for $ORIGIN paths)."""
    parts = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)
