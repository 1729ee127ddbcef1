# Copyright: gpufleet contributors
# Apache-2.0
"""The dynamic loader's cache: /etc/ld.so.cache read directly (any root), or `ldconfig -p` on `/`.

Format (glibc elf/cache.c): an optional old header ``ld.so-1.7.0`` + nlibs + 12-byte entries, then the new
header ``glibc-ld.so.cache1.1`` (20 bytes), nlibs (u32), len_strings (u32), flags (u8) + 3 pad,
extension_offset (u32), 3 unused u32 = 48 bytes, then nlibs 24-byte entries
(flags i32, key u32, value u32, osversion u32, hwcap u64). Key/value are string offsets from the start of
the new header (glibc >= 2.32 writes only the new format, where that is also the start of the file).
"""

from __future__ import annotations

import platform
import re
import struct

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import run_command, which
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import owned_by

NVML_SONAME = "libnvidia-ml.so.1"  # the driver's NVML library: where the loader finds it locates the driver
OLD_MAGIC = b"ld.so-1.7.0"
NEW_MAGIC = b"glibc-ld.so.cache1.1"
CACHE = "/etc/ld.so.cache"

# flag values from glibc's ldconfig.h: FLAG_ELF_LIBC6 = 3, arch bits in 0xff00
ARCH_FLAGS = {"x86_64": 0x0300, "aarch64": 0x0A00, "ppc64le": 0x0500}
ARCH_NAMES = {"x86_64": "x86-64", "aarch64": "AArch64", "ppc64le": "64bit"}


def parse_ld_cache(data):
    """[(soname, path, flags)] in cache order; raises ValueError on a malformed cache."""
    if not data:
        raise ValueError("empty loader cache")
    offset = 0
    if data.startswith(OLD_MAGIC):
        (nlibs,) = struct.unpack_from("<I", data, 12)
        offset = 16 + nlibs * 12
        offset = (offset + 7) & ~7  # the new header is aligned to 8 bytes
        found = data.find(NEW_MAGIC, offset - 8 if offset >= 8 else 0)
        if found < 0:
            raise ValueError("old-format loader cache without the new format (not supported)")
        offset = found
    elif not data.startswith(NEW_MAGIC):
        raise ValueError("not a loader cache (bad magic)")
    if len(data) < offset + 48:
        raise ValueError("truncated loader cache header")
    nlibs, _len_strings = struct.unpack_from("<II", data, offset + 20)
    entries_at = offset + 48
    if entries_at + nlibs * 24 > len(data):
        raise ValueError(f"truncated loader cache ({nlibs} entries announced)")
    result = []
    for i in range(nlibs):
        flags, key, value, _osv, _hwcap = struct.unpack_from("<iIIIQ", data, entries_at + i * 24)
        result.append((_cstr(data, offset + key), _cstr(data, offset + value), flags))
    return result


def _cstr(data, at):
    if at >= len(data):
        raise ValueError("string offset beyond the end of the loader cache")
    end = data.find(b"\0", at)
    if end < 0:
        end = len(data)
    return data[at:end].decode("utf-8", "replace")


LDCONFIG_LINE = re.compile(r"^\s+(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")


def parse_ldconfig_p(text):
    """[(soname, path, flags_text)] from `ldconfig -p` output."""
    result = []
    for line in (text or "").splitlines():
        match = LDCONFIG_LINE.match(line)
        if match:
            result.append((match.group(1), match.group(3), match.group(2)))
    return result


def arch_ok(flags, machine):
    """Whether a cache entry (binary flags or `ldconfig -p` text) is of this machine's ABI."""
    if isinstance(flags, str):  # ldconfig -p form: "libc6,x86-64"
        name = ARCH_NAMES.get(machine)
        return name is None or name in flags
    wanted = ARCH_FLAGS.get(machine)
    return wanted is None or (flags & 0xFF00) == wanted


def load_ld_cache(root, machine=None):
    """([(soname, path, flags)], reason) for a root: the cache file, else `ldconfig -p` when root is /."""
    data, reason = root.read_bytes(CACHE, limit=64 * 1024 * 1024)
    if data is not None:
        try:
            return parse_ld_cache(data), None
        except (ValueError, struct.error) as exc:
            reason = f"cannot parse {CACHE}: {exc}"
    if root.is_slash:
        ldconfig = which("ldconfig")
        if ldconfig:
            rc, out, _err, cmd_reason = run_command([ldconfig, "-p"], timeout=10)
            if rc == 0:
                return parse_ldconfig_p(out), None
            reason = f"{reason}; {cmd_reason}"
    return [], reason


def resolve(entries, soname, machine=None):
    """Path the loader picks for `soname` (first cache entry of this machine's ABI), or None."""
    machine = machine or platform.machine()
    for name, path, flags in entries:
        if name == soname and arch_ok(flags, machine):
            return path
    return None


# glibc's trusted directories, searched after the loader cache for a library it does not list (ld.so(8);
# `ld.so --help` prints them as "system search path"): Debian's and Ubuntu's multiarch glibc searches
# /lib/<triplet>, /usr/lib/<triplet>, /lib, /usr/lib (Debian 12 x86_64's ld.so --help); RHEL's 64-bit glibc
# /lib64, /usr/lib64.
MULTIARCH = {"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu", "ppc64le": "powerpc64le-linux-gnu"}
LIB64_DIRS = ("/lib64", "/usr/lib64")


def trusted_dirs(root, machine=None):
    """glibc's trusted directories on this root, in its search order: the multiarch ones where the tree has
    /usr/lib/<triplet> (Debian, Ubuntu), else /lib64 and /usr/lib64 (the RHEL family)."""
    triplet = MULTIARCH.get(machine or platform.machine())
    if triplet and root.isdir(f"/usr/lib/{triplet}"):
        return (f"/lib/{triplet}", f"/usr/lib/{triplet}", "/lib", "/usr/lib")
    return LIB64_DIRS


def locate(root, entries, soname, machine=None):
    """(path, via) where the loader finds ``soname``: its cache entry (via "ld_cache"), else the first trusted
    directory holding it (via "default_dirs"); (None, None) when neither has it."""
    path = resolve(entries, soname, machine)
    if path is not None:
        return path, "ld_cache"
    for directory in trusted_dirs(root, machine):
        candidate = f"{directory}/{soname}"
        if root.exists(candidate):
            return candidate, "default_dirs"
    return None, None


def nvml_location(root, entries, packages):
    """(loader path, real inner path, owning package or None) of libnvidia-ml.so.1, or None when absent."""
    path, _via = locate(root, entries, NVML_SONAME)
    if path is None:
        return None
    real, _reason = root.realpath(path)
    owner = owned_by(packages, path) or owned_by(packages, real)
    return path, real, owner


def sonames(entries, pattern, machine=None):
    """{soname: path} of every soname matching a regex, first entry (what the loader picks) each."""
    machine = machine or platform.machine()
    regex = re.compile(pattern)
    picked = {}
    for name, path, flags in entries:
        if name not in picked and regex.match(name) and arch_ok(flags, machine):
            picked[name] = path
    return picked


USERSPACE_SONAMES = (NVML_SONAME, "libcuda.so.1")
_LIB_VERSION = re.compile(r"\.so\.(\d{3}\.\d+(?:\.\d+)?)$")


def userspace_driver(root, entries):
    """{soname: {path, real_path, version, via}} of the driver's user-space libraries (libnvidia-ml.so.1,
    libcuda.so.1) where the loader finds them (its cache, else glibc's trusted directories: ``via``);
    ``version`` from the real file name (libcuda.so.580.126.09), None when the name carries no version."""
    found = {}
    for soname in USERSPACE_SONAMES:
        path, via = locate(root, entries, soname)
        if path is None:
            continue
        real, _reason = root.realpath(path)
        match = _LIB_VERSION.search(real)
        found[soname] = {
            "path": path, "real_path": real, "version": match.group(1) if match else None, "via": via,
        }  # fmt: skip
    return found
