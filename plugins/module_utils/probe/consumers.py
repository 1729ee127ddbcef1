# Copyright: gpufleet contributors
# Apache-2.0
"""What each consumer environment really loads: per environment (the system linker cache, a login shell's
LD_LIBRARY_PATH, each Python venv, each conda env, each CUDA toolkit), which ``libcudnn.so.N`` a process
started there resolves and why; the frameworks installed there (torch, TensorFlow, jax CUDA plugins,
onnxruntime-gpu, cupy) with the cuDNN and CUDA their metadata says they were built for; and the directories
whose ``libcudnn*.so.N`` files do not come from one release.

Everything is read from files (dist-info METADATA and RECORD, torch/version.py, TensorFlow's build_info.py,
onnxruntime's version_info.py, the RPATH/RUNPATH of ELF files); no framework is imported and no Python of an
environment is run. Bounded: at most ``MAX_ENTRIES`` names are read from one directory, ``MAX_ENVS``
environments are described, small files only (METADATA/RECORD 4 MiB, version files 256 KiB).

The loader's order (ld.so(8)): DT_RPATH of the loading object (only when it has no DT_RUNPATH),
LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache, the default directories. torch also preloads
``site-packages/nvidia/*/lib`` itself when its libraries cannot be found (torch/__init__.py
_load_global_deps).
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cudnn as kb_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import elf, fatbin
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import UNKNOWN
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import (
    bounded_names as common_bounded_names,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.ldcache import resolve, trusted_dirs

MAX_ENTRIES = 20000
MAX_ENVS = 64
MAX_META = 4 * 1024 * 1024
MAX_SMALL = 256 * 1024
ENVIRONMENT_FILE = "/etc/environment"
PROFILE_DIR = "/etc/profile.d"
CUDNN_SONAME = re.compile(r"^libcudnn\.so\.(\d+)$")
CUDNN_FILE = re.compile(r"^(libcudnn(?:_[a-z_]+)?)\.so\.(\d+)(?:\.(\d+\.\d+(?:\.\d+)?))?$")
DIST_INFO = re.compile(r"^([A-Za-z0-9_.]+)-([^-]+)\.dist-info$")
REQUIRES_CUDNN = re.compile(r"^nvidia[-_]cudnn(?:[-_]cu(\d+))?\s*(\(?[^;]*\)?)?", re.IGNORECASE)
LD_ASSIGN = re.compile(r"^\s*(?:export\s+)?LD_LIBRARY_PATH\s*=\s*(.*?)\s*(?:;.*)?$")
LD_SELF_FORMS = (
    "${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}",
    "${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}",
    "${LD_LIBRARY_PATH}",
    "$LD_LIBRARY_PATH",
)
VIA_WORDS = {
    "rpath": "DT_RPATH of {anchor}",
    "ld_library_path": "LD_LIBRARY_PATH ({sources})",
    "runpath": "DT_RUNPATH of {anchor}",
    "preload": "{name}'s own preload of site-packages/nvidia/*/lib",
    "conda_lib": "conda's lib directory (conda's binaries carry DT_RPATH $ORIGIN/../lib)",
    "ld_cache": "the loader cache (ldconfig)",
    "default_dirs": "glibc's trusted directories (searched after the loader cache, which does not list it)",
}

# Frameworks: dist name (normalized, lower case) -> (name, anchors: the ELF files that load cuDNN, relative to
# site-packages, first existing wins; whether the framework preloads site-packages/nvidia/*/lib itself).
# torch: libtorch_cuda.so NEEDs libcudnn.so.N with RUNPATH $ORIGIN/../../nvidia/cudnn/lib (wheels >= 2.1);
# tensorflow: libtensorflow_cc.so.2 dlopens libcudnn.so.N (RUNPATH $ORIGIN/../nvidia/cudnn/lib);
# jax: xla_cuda_plugin.so of jax_cuda1X_plugin; onnxruntime-gpu: libonnxruntime_providers_cuda.so.
FRAMEWORKS = {
    "torch": ("torch", ("torch/lib/libtorch_cuda.so", "torch/lib/libtorch_global_deps.so"), True),
    "tensorflow": ("tensorflow", ("tensorflow/libtensorflow_cc.so.2",
                                  "tensorflow/libtensorflow_framework.so.2"), False),
    "jax_cuda12_plugin": ("jax", ("jax_plugins/xla_cuda12/xla_cuda_plugin.so",), False),
    "jax_cuda13_plugin": ("jax", ("jax_plugins/xla_cuda13/xla_cuda_plugin.so",), False),
    "onnxruntime_gpu": ("onnxruntime-gpu", ("onnxruntime/capi/libonnxruntime_providers_cuda.so",), False),
    "cupy_cuda12x": ("cupy", (), False),
    "cupy_cuda13x": ("cupy", (), False),
    "cupy_cuda11x": ("cupy", (), False),
}  # fmt: skip
# The library holding a framework's own CUDA kernels (its ``.nv_fatbin``: probe/fatbin.py), relative to
# site-packages. torch 2.x wheels: libtorch_cuda.so; onnxruntime-gpu: its CUDA execution provider. Not read:
# jax (XLA compiles most kernels at run time), cupy (compiles its kernels at run time with NVRTC), TensorFlow
# (its build_info.py names its compute capabilities: ``compute_capabilities``).
KERNEL_LIBRARIES = {
    "torch": "torch/lib/libtorch_cuda.so",
    "onnxruntime-gpu": "onnxruntime/capi/libonnxruntime_providers_cuda.so",
}


# ---------------------------------------------------------------- bounded reads
def bounded_names(root, inner, limit=None):
    """(sorted names, reason): at most ``limit`` (MAX_ENTRIES) entries of a directory."""
    return common_bounded_names(root, inner, MAX_ENTRIES if limit is None else limit)


def _exists(root, inner):
    real, reason = root.realpath(inner)
    return (real if reason is None and root.isfile(real) else None), reason


# ---------------------------------------------------------------- LD_LIBRARY_PATH of a login
def parse_ld_library_path(text, before):
    """The LD_LIBRARY_PATH after the assignments of one shell or pam_env file, starting from ``before``."""
    current = list(before)
    for line in (text or "").splitlines():
        match = None if line.lstrip().startswith("#") else LD_ASSIGN.match(line)
        if not match:
            continue
        value = match.group(1).strip().strip("\"'")
        for form in LD_SELF_FORMS:
            value = value.replace(form, ":\0" if ":+:" in form else "\0")
        dirs = []
        for item in value.split(":"):
            if item == "\0":
                dirs.extend(current)
            elif item.startswith("/") and "$" not in item:
                dirs.append(elf.normalize(item))
        current = list(dict.fromkeys(dirs))
    return current


def login_ld_library_path(root):
    """({dirs, sources}, reasons): LD_LIBRARY_PATH as a login shell gets it (/etc/environment through
    pam_env, then /etc/profile.d/*.sh in glob order), conditionals taken as if they applied."""
    dirs, sources, reasons = [], [], []
    files = [ENVIRONMENT_FILE] if root.exists(ENVIRONMENT_FILE) else []
    if root.isdir(PROFILE_DIR):
        names, reason = bounded_names(root, PROFILE_DIR, limit=1000)
        files += [f"{PROFILE_DIR}/{n}" for n in names or () if n.endswith(".sh")]
        if reason:
            reasons.append(reason)
    for path in files:
        text, reason = root.read_text(path, limit=MAX_SMALL)
        if text is None:
            reasons.append(reason)
            continue
        after = parse_ld_library_path(text, dirs)
        if after != dirs or "LD_LIBRARY_PATH" in text:
            sources.append(path)
        dirs = after
    return {"dirs": dirs, "sources": sources}, reasons


# ---------------------------------------------------------------- dist-info
def parse_requires(text):
    """(name, version, [(cuda major or None, spec)]) of a METADATA: its Name, Version and the
    nvidia-cudnn requirements (markers ignored: they only pick the platform or the CUDA extra)."""
    name = version = None
    requires = []
    for line in (text or "").splitlines():
        if not line.strip():
            break
        key, _sep, value = line.partition(":")
        value = value.strip()
        if key == "Name":
            name = value
        elif key == "Version":
            version = value
        elif key == "Requires-Dist":
            match = REQUIRES_CUDNN.match(value)
            if match:
                spec = (match.group(2) or "").strip().strip("()").replace(" ", "")
                requires.append((int(match.group(1)) if match.group(1) else None, spec))
    return name, version, requires


def dists(names):
    """{normalized dist name: (dist-info dir name, version)} of a site-packages listing."""
    found = {}
    for entry in names:
        match = DIST_INFO.match(entry)
        if match:
            found[match.group(1).lower().replace("-", "_").replace(".", "_")] = (entry, match.group(2))
    return found


def _version_parts(text):
    parts = []
    for part in re.split(r"[.+]", str(text)):
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def _clause_ok(version, clause):
    match = re.match(r"^(===|==|!=|~=|>=|<=|>|<)(.+)$", clause)
    if not match:
        return None
    op, want = match.groups()
    if want.endswith(".*") and op in ("==", "!="):
        prefix = _version_parts(want[:-2])
        same = _version_parts(version)[: len(prefix)] == prefix
        return same if op == "==" else not same
    have, want_t = _version_parts(version), _version_parts(want)
    width = max(len(have), len(want_t))
    have_p, want_p = have + (0,) * (width - len(have)), want_t + (0,) * (width - len(want_t))
    if op == "~=":
        return have_p >= want_p and have[: len(want_t) - 1] == want_t[:-1]
    return {
        "===": version == want, "==": have_p == want_p, "!=": have_p != want_p, ">=": have_p >= want_p,
        "<=": have_p <= want_p, ">": have_p > want_p, "<": have_p < want_p,
    }[op]  # fmt: skip


def spec_ok(version, spec):
    """True/False whether a version satisfies a PEP 440 specifier set such as ``==9.19.0.56`` or
    ``>=9.8,<10.0``; None when either is unknown or the specifier is not understood."""
    if not version or version == UNKNOWN or not _version_parts(version):
        return None
    if not spec:
        return True
    results = [_clause_ok(version, clause) for clause in spec.split(",") if clause]
    return None if None in results else all(results)


# ---------------------------------------------------------------- frameworks' own version files
def _match(pattern, text):
    found = re.search(pattern, text or "", re.MULTILINE)
    return found.group(1) if found else None


def torch_version_file(text):
    """{version, cuda_version} of torch/version.py (``cuda`` is None for a CPU build)."""
    return {
        "version": _match(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text),
        "cuda_version": _match(r"^cuda\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", text),
    }


def tensorflow_build_info(text):
    """{cuda_version, cudnn_version, compute_capabilities} of tensorflow/python/platform/build_info.py."""
    caps = _match(r"['\"]cuda_compute_capabilities['\"]\s*[:,]\s*\[([^\]]*)\]", text)
    return {
        "cuda_version": _match(r"['\"]cuda_version['\"]\s*[:,]\s*['\"]([^'\"]+)['\"]", text),
        "cudnn_version": _match(r"['\"]cudnn_version['\"]\s*[:,]\s*['\"]([^'\"]+)['\"]", text),
        "compute_capabilities": re.findall(r"['\"]((?:sm|compute)_\d+[a-z]?)['\"]", caps) if caps else None,
    }


def onnxruntime_version_info(text):
    """{cuda_version, cudnn_version} of onnxruntime/capi/version_info.py."""
    return {
        "cuda_version": _match(r"^cuda_version\s*=\s*['\"]([^'\"]+)['\"]", text),
        "cudnn_version": _match(r"^cudnn_version\s*=\s*['\"]([^'\"]+)['\"]", text),
    }


VERSION_FILES = {
    "torch": ("torch/version.py", torch_version_file),
    "tensorflow": ("tensorflow/python/platform/build_info.py", tensorflow_build_info),
    "onnxruntime-gpu": ("onnxruntime/capi/version_info.py", onnxruntime_version_info),
}


def new_framework(name, dist, version):
    return {
        "name": name,
        "dist": dist,
        "version": version,
        "cuda_version": None,
        "cudnn_version_built": None,
        "requires_cudnn": None,
        "installed_cudnn": None,
        "pin_satisfied": None,
        "cudnn_soname": None,
        "anchor": None,
        "compute_capabilities": None,
        "compiled_for": None,
        "loads": None,
        "reasons": {},
    }


def _framework_metadata(root, sp, fw, installed):
    """Fill the cuDNN requirement of a framework's METADATA and what the environment has of it."""
    text, reason = root.read_text(f"{sp}/{fw['dist']}/METADATA", limit=MAX_META)
    if text is None:
        fw["reasons"]["requires_cudnn"] = reason
        return
    name, version, requires = parse_requires(text)
    if not name or not version:
        fw["reasons"]["requires_cudnn"] = (
            f"{sp}/{fw['dist']}/METADATA has no usable Name/Version (truncated?)"
        )
    if version:
        fw["version"] = version
    if not requires:
        fw["reasons"].setdefault("requires_cudnn", "its METADATA requires no nvidia-cudnn wheel")
        return
    cuda_major, spec = requires[0]
    package = f"nvidia-cudnn-cu{cuda_major}" if cuda_major else "nvidia-cudnn"
    fw["requires_cudnn"] = {"package": package, "spec": spec}
    key = package.replace("-", "_")
    if key in installed:
        fw["installed_cudnn"] = {"package": package, "version": installed[key][1]}
        fw["pin_satisfied"] = spec_ok(installed[key][1], spec)
    else:
        fw["pin_satisfied"] = False
        fw["reasons"]["installed_cudnn"] = f"{package} is not installed in this environment"


def _framework_version_file(root, sp, fw):
    rel, parse = VERSION_FILES.get(fw["name"], (None, None))
    if rel is None:
        return
    text, reason = root.read_text(f"{sp}/{rel}", limit=MAX_SMALL)
    if text is None:
        fw["reasons"]["cuda_version"] = reason
        return
    info = parse(text)
    fw["cuda_version"] = info.get("cuda_version")
    fw["cudnn_version_built"] = info.get("cudnn_version")
    fw["compute_capabilities"] = info.get("compute_capabilities")
    if fw["name"] == "torch" and info.get("version"):
        fw["version"] = info["version"]
    if not fw["cuda_version"]:
        fw["reasons"]["cuda_version"] = f"{sp}/{rel} names no CUDA version (a CPU build?)"


def spec_major(spec):
    """The cuDNN major a requirement pins: ==/~=/>= (or >) gives it; an upper bound alone does not
    (jax_cuda13_plugin 0.11.2 asks for ``<10.0,>=9.12.0.46``: cuDNN 9, not 10, as the H200 showed)."""
    clauses = [c.strip() for c in (spec or "").split(",") if c.strip()]
    for pattern in (r"^===?\s*(\d+)", r"^~=\s*(\d+)", r"^>=?\s*(\d+)"):
        for clause in clauses:
            found = re.match(pattern, clause)
            if found:
                return int(found.group(1))
    return None


def _expected_major(fw, needed_major):
    """The cuDNN major a framework loads: its libraries' DT_NEEDED, else its pin, else its build info."""
    if needed_major is not None:
        return needed_major
    pinned = spec_major((fw["requires_cudnn"] or {}).get("spec"))
    if pinned is not None:
        return pinned
    found = re.search(r"(\d+)", fw["cudnn_version_built"] or "")
    return int(found.group(1)) if found else None


def _anchor(root, sp, fw, anchors):
    """(dynamic section, needed cuDNN major) of the first anchor library that exists."""
    for rel in anchors:
        path = f"{sp}/{rel}"
        if not root.exists(path):
            continue
        dynamic, reason = elf.read_dynamic(root, path)
        fw["anchor"] = path
        if dynamic is None:
            fw["reasons"]["anchor"] = reason
            return None, None
        majors = [int(m.group(1)) for m in map(CUDNN_SONAME.match, dynamic["needed"]) if m]
        return dynamic, (majors[0] if majors else None)
    if anchors:
        fw["reasons"]["anchor"] = "none of {} exists".format(", ".join(anchors))
    return None, None


def _compiled_for(root, sp, fw, budget):
    """The compute capabilities the framework's kernel library was compiled for (probe/fatbin.py)."""
    rel = KERNEL_LIBRARIES.get(fw["name"])
    if rel is None or not root.exists(f"{sp}/{rel}"):
        return
    compiled, reason = fatbin.read_compiled_for(root, f"{sp}/{rel}", budget)
    if reason:
        fw["reasons"]["compiled_for"] = reason
        return
    fw["compiled_for"] = dict(compiled, path=f"{sp}/{rel}")


def framework(root, sp, key, installed, budget=None):
    """(framework fact, anchor dynamic section or None) of one installed framework (``budget``: the
    fatbin.Budget of this probe run)."""
    name, anchors, _preload = FRAMEWORKS[key]
    dist, version = installed[key]
    fw = new_framework(name, dist, version)
    _framework_metadata(root, sp, fw, installed)
    _framework_version_file(root, sp, fw)
    if name == "cupy" and fw["cuda_version"] is None:
        fw["cuda_version"] = _match(r"cuda(\d+)", key) + ".x"
    dynamic, needed = _anchor(root, sp, fw, anchors)
    _compiled_for(root, sp, fw, budget)
    major = _expected_major(fw, needed)
    fw["cudnn_soname"] = f"libcudnn.so.{major}" if major is not None else None
    if major is None:
        fw["reasons"]["cudnn_soname"] = "neither its libraries nor its metadata name a cuDNN major"
    return fw, dynamic


# ---------------------------------------------------------------- what the loader picks
class Context:
    """What every environment shares: the root, the loader cache, the login LD_LIBRARY_PATH, the copies."""

    def __init__(self, root, ld_entries, login, copies):
        self.root = root
        self.ld_entries = ld_entries
        self.trusted = list(trusted_dirs(root))
        self.login = login
        self.copies = copies
        self.by_library = {c.get("library"): c for c in copies if c.get("library")}
        self.budget = fatbin.Budget()

    def version_of(self, real):
        copy = self.by_library.get(real)
        if copy and copy.get("version") not in (None, UNKNOWN):
            return copy["version"], copy["path"]
        found = re.search(r"\.so\.(\d+\.\d+\.\d+)$", real or "")
        return (found.group(1) if found else UNKNOWN), None


def _why(via, directory, words):
    text = VIA_WORDS[via].format(**words)
    return f"{text}: {directory}" if directory else text


def _hit(ctx, soname, path, via, words):
    real, _reason = ctx.root.realpath(path)
    version, copy_path = ctx.version_of(real)
    return {
        "soname": soname,
        "for": words.get("name", "process"),
        "path": path,
        "real_path": real,
        "dir": os.path.dirname(real),
        "version": version,
        "copy_path": copy_path,
        "via": via,
        "why": _why(via, os.path.dirname(path) if via != "ld_cache" else "", words),
    }


def resolve_soname(ctx, soname, order, words):
    """The first match of ``soname`` along ``order`` ([(via, [dirs])]; via ``ld_cache`` has no dirs)."""
    for via, dirs in order:
        if via == "ld_cache":
            path = resolve(ctx.ld_entries, soname)
            if path is not None:
                return _hit(ctx, soname, path, via, words)
            continue
        for directory in dirs:
            real, _reason = _exists(ctx.root, f"{directory}/{soname}")
            if real:
                return _hit(ctx, soname, f"{directory}/{soname}", via, words)
    searched = ", ".join(via for via, _dirs in order)
    return {
        "soname": soname, "for": words.get("name", "process"), "path": None, "real_path": None, "dir": None,
        "version": None, "copy_path": None, "via": "none", "why": f"not found (searched: {searched})",
    }  # fmt: skip


def load_order(dynamic, anchor_dir, ctx, *, preload=None, exe_rpath=()):
    """[(via, dirs)] the loader walks for a library that ``dynamic`` (the object at ``anchor_dir``) needs."""
    order = []
    runpath = elf.search_dirs((dynamic or {}).get("runpath"), anchor_dir)
    if not runpath:
        rpath = elf.search_dirs((dynamic or {}).get("rpath"), anchor_dir)
        order.append(("rpath", [*rpath, *exe_rpath]))
    order.append(("ld_library_path", ctx.login["dirs"]))
    order.append(("runpath", runpath))
    order.append(("ld_cache", []))
    if preload:
        order.append(("preload", [preload]))
    order.append(("default_dirs", ctx.trusted))
    return [(via, dirs) for via, dirs in order if dirs or via == "ld_cache"]


# ---------------------------------------------------------------- directories of mixed releases
def _dir_files(root, directory):
    """([{soname, base, major, real_path, name_version, size}], reason) of the libcudnn*.so.N of a dir."""
    names, reason = bounded_names(root, directory)
    files = []
    for name in names or ():
        match = CUDNN_FILE.match(name)
        if not match or match.group(3):
            continue
        real, broken = root.realpath(f"{directory}/{name}")
        if broken:
            reason = f"{directory}/{name}: {broken}"
            continue
        try:
            size = os.stat(root.outer(real)).st_size
        except OSError:
            size = None
        version = _match(r"\.so\.(\d+\.\d+\.\d+)$", os.path.basename(real))
        files.append(
            {"soname": name, "base": match.group(1), "major": int(match.group(2)), "real_path": real,
             "name_version": version, "size": size}
        )  # fmt: skip
    return files, reason


def parse_record(text, prefix):
    """{file name: size} of a wheel RECORD's entries under ``prefix`` (e.g. ``nvidia/cudnn/lib/``)."""
    sizes = {}
    for line in (text or "").splitlines():
        parts = line.rsplit(",", 2)
        if len(parts) == 3 and parts[0].startswith(prefix) and parts[2].isdigit():
            sizes[parts[0][len(prefix) :]] = int(parts[2])
    return sizes


def _assign_versions(files, record, known):
    """Version and its evidence of each file: its name, the wheel's RECORD, or the size of a known file."""
    for f in files:
        if f["name_version"]:
            f["version"], f["from"] = f["name_version"], "file_name"
        elif record and record["sizes"].get(f["soname"]) == f["size"] and f["size"] is not None:
            f["version"], f["from"] = record["version"], "record"
        elif (f["base"], f["size"]) in known:
            f["version"], f["from"] = known[(f["base"], f["size"])], "size_of_a_known_file"
        else:
            f["version"], f["from"] = UNKNOWN, "unknown"
        if record and f["from"] != "record" and f["soname"] in record["sizes"]:
            f["differs_from_record"] = True


def _dir_verdict(directory, files, record, reason):
    majors = sorted({f["major"] for f in files})
    versions = sorted({f["version"] for f in files if f["version"] != UNKNOWN})
    foreign = [f["soname"] for f in files if f.get("differs_from_record")]
    present = {f["base"] for f in files}
    missing = [
        f"{base}.so.{major}"
        for major in majors
        for base in kb_cudnn.SUB_LIBRARIES.get(major, ())
        if base not in present
    ]
    return {
        "dir": directory,
        "majors": majors,
        "files": [{k: f.get(k) for k in ("soname", "real_path", "version", "from")} for f in files],
        "versions": versions,
        "mixed": len(versions) > 1 or bool(foreign),
        "differs_from_record": foreign,
        "record": record["path"] if record else None,
        "missing": missing,
        "reason": reason,
    }


def library_dirs(root, dirs, records):
    """{dir: verdict} for every directory holding libcudnn*.so.N files (``records``: {dir: wheel RECORD})."""
    real_dirs = {}
    for directory in dirs:
        real_dirs.setdefault(root.realpath(directory)[0], directory)
    listed = {d: _dir_files(root, d) for d in real_dirs}
    known = {}
    for files, _reason in listed.values():
        for f in files:
            if f["name_version"] and f["size"] is not None:
                known.setdefault((f["base"], f["size"]), f["name_version"])
    out = {}
    for directory, (files, reason) in listed.items():
        if not files:
            continue
        _assign_versions(files, records.get(directory), known)
        out[directory] = _dir_verdict(directory, files, records.get(directory), reason)
    return out


def wheel_record(root, copy):
    """(lib dir, {path, version, sizes}) of a pip cuDNN copy's RECORD, or (lib dir, None)."""
    lib = copy["path"] + "/lib"
    package = copy.get("package") or {}
    sp = os.path.dirname(os.path.dirname(copy["path"]))
    dist = "{}-{}.dist-info".format(str(package.get("name", "")).replace("-", "_"), package.get("version"))
    text, _reason = root.read_text(f"{sp}/{dist}/RECORD", limit=MAX_META)
    if text is None:
        return lib, None
    version = ".".join(str(package.get("version")).split(".")[:3])
    return lib, {
        "path": f"{sp}/{dist}/RECORD",
        "version": version,
        "sizes": parse_record(text, "nvidia/cudnn/lib/"),
    }


# ---------------------------------------------------------------- environments
def python_env(sp):
    """The environment holding a site-packages dir: <env>/lib/pythonX.Y/site-packages -> <env>."""
    parts = sp.rstrip("/").split("/")
    if len(parts) >= 4 and parts[-2].startswith("python") and parts[-3] in ("lib", "lib64"):
        return "/".join(parts[:-3]) or "/"
    return os.path.dirname(sp)


def new_env(kind, path):
    return {
        "kind": kind,
        "path": path,
        "python": None,
        "site_packages": None,
        "frameworks": [],
        "cudnn": [],
        "libcuda": None,
        "reasons": {},
    }


def _python(root, env, sp):
    """{executable, exists, real_path, version} of an environment's python (read, never run)."""
    info = {"executable": None, "exists": False, "real_path": None, "version": None}
    cfg, _reason = root.read_text(env + "/pyvenv.cfg", limit=65536)
    info["version"] = _match(r"^version(?:_info)?\s*=\s*(\d+\.\d+)", cfg) or _match(
        r"/python(\d+\.\d+)t?/", sp + "/"
    )
    for name in ("python", "python3"):
        exe = f"{env}/bin/{name}"
        if root.islink(exe) or root.exists(exe):
            real, reason = root.realpath(exe)
            info.update(executable=exe, real_path=real, exists=reason is None and root.isfile(real))
            if not info["exists"]:
                info["reason"] = (
                    f"{exe} -> {real}: the environment's python is gone ({reason or 'not a file'})"
                )
            return info
    info["reason"] = f"no {env}/bin/python"
    return info


def _conda_lib(ctx, env_fact):
    """[(conda_lib, [env/lib])] for a conda env whose python has RPATH $ORIGIN/../lib (or is unreadable)."""
    if env_fact["kind"] != "conda":
        return []
    lib = env_fact["path"] + "/lib"
    python = env_fact["python"] or {}
    if python.get("exists"):
        dynamic, _reason = elf.read_dynamic(ctx.root, python["executable"])
        if dynamic is not None:
            origin = os.path.dirname(python["real_path"])
            rpath = [] if dynamic["runpath"] else elf.search_dirs(dynamic["rpath"], origin)
            return [("conda_lib", [lib])] if lib in rpath else []
    return [("conda_lib", [lib])]


def _framework_loads(ctx, env_fact, sp, key, installed):
    fw, dynamic = framework(ctx.root, sp, key, installed, ctx.budget)
    if fw["cudnn_soname"]:
        _name, _anchors, preload = FRAMEWORKS[key]
        anchor_dir = os.path.dirname(fw["anchor"]) if fw["anchor"] else sp  # $ORIGIN: the path as opened
        order = load_order(dynamic, anchor_dir, ctx, preload=f"{sp}/nvidia/cudnn/lib" if preload else None)
        if not (dynamic or {}).get("runpath"):
            order = (
                order[:1] + _conda_lib(ctx, env_fact) + order[1:]
                if order[0][0] == "rpath"
                else (_conda_lib(ctx, env_fact) + order)
            )
        words = {"name": fw["name"], "anchor": fw["anchor"], "sources": ", ".join(ctx.login["sources"])}
        fw["loads"] = resolve_soname(ctx, fw["cudnn_soname"], order, words)
        env_fact["cudnn"].append(fw["loads"])
    return fw


def _conda_majors(ctx, env):
    """The cuDNN majors conda installed into <env> (in its lib/, whether or not the env has a Python)."""
    return {
        int(c["major"])
        for c in ctx.copies
        if c.get("source") == "conda" and c.get("path") == env and str(c.get("major") or "").isdigit()
    }


def python_environment(ctx, env, sp, kind):
    """The consumer fact of one Python environment (venv, conda env, other interpreter prefix)."""
    env_fact = new_env(kind, env)
    env_fact["site_packages"] = sp
    names, reason = bounded_names(ctx.root, sp)
    if reason:
        env_fact["reasons"]["site_packages"] = reason
    installed = dists(names or ())
    env_fact["python"] = _python(ctx.root, env, sp)
    if env_fact["python"].get("reason"):
        env_fact["reasons"]["python"] = env_fact["python"].pop("reason")
    for key in sorted(k for k in installed if k in FRAMEWORKS):
        env_fact["frameworks"].append(_framework_loads(ctx, env_fact, sp, key, installed))
    if not env_fact["cudnn"]:
        majors = sorted(
            {
                int(v.split(".")[0])
                for k, (_entry, v) in installed.items()
                if k.startswith("nvidia_cudnn") and v[:1].isdigit()
            }
            | _conda_majors(ctx, env)
        )
        order = [
            *_conda_lib(ctx, env_fact), ("ld_library_path", ctx.login["dirs"]), ("ld_cache", []),
            ("default_dirs", ctx.trusted),
        ]  # fmt: skip
        order = [(via, dirs) for via, dirs in order if dirs or via == "ld_cache"]
        words = {"sources": ", ".join(ctx.login["sources"])}
        env_fact["cudnn"] = [resolve_soname(ctx, f"libcudnn.so.{m}", order, words) for m in majors]
        if majors:
            env_fact["reasons"]["cudnn"] = (
                "no framework here preloads the wheel: a process gets what the loader finds"
            )
    return env_fact


def _relevant(root, sp, conda_copies):
    names, _reason = bounded_names(root, sp)
    installed = dists(names or ())
    return (
        any(k in FRAMEWORKS or k.startswith("nvidia_cudnn") for k in installed)
        or python_env(sp) in conda_copies
    )


def _majors_in(ctx, dirs):
    """The cuDNN majors whose libcudnn.so.N one of ``dirs`` holds."""
    return {
        int(m.group(1))
        for d in dirs
        for m in map(CUDNN_SONAME.match, bounded_names(ctx.root, d, limit=5000)[0] or ())
        if m
    }


def system_environments(ctx):
    """The system linker cache (a service or a program started without LD_LIBRARY_PATH), and a login
    shell when /etc/environment or /etc/profile.d set LD_LIBRARY_PATH."""
    majors = {int(m.group(1)) for m in (CUDNN_SONAME.match(e[0]) for e in ctx.ld_entries) if m}
    majors = sorted(majors | _majors_in(ctx, ctx.trusted))
    system = new_env("system", "/")
    order = [("ld_cache", []), ("default_dirs", ctx.trusted)]
    system["cudnn"] = [resolve_soname(ctx, f"libcudnn.so.{m}", order, {}) for m in majors]
    envs = [system]
    if ctx.login["sources"]:
        login = new_env("login", "/")
        order = [("ld_library_path", ctx.login["dirs"]), ("ld_cache", []), ("default_dirs", ctx.trusted)]
        words = {"sources": ", ".join(ctx.login["sources"])}
        found = _majors_in(ctx, ctx.login["dirs"])
        login["cudnn"] = [
            resolve_soname(ctx, f"libcudnn.so.{m}", order, words) for m in sorted(found | set(majors))
        ]
        envs.append(login)
    return envs


def toolkit_environment(ctx, toolkit, copies):
    """A program built with a CUDA toolkit (no RPATH): the cuDNN and the libcuda.so.1 it gets."""
    env_fact = new_env("cuda_toolkit", toolkit)
    majors = {int(m.group(1)) for m in (CUDNN_SONAME.match(e[0]) for e in ctx.ld_entries) if m}
    majors |= {c["major"] for c in copies if str(c.get("path", "")).startswith(toolkit) and c.get("major")}
    order = [("ld_library_path", ctx.login["dirs"]), ("ld_cache", []), ("default_dirs", ctx.trusted)]
    order = [(via, dirs) for via, dirs in order if dirs or via == "ld_cache"]
    words = {"sources": ", ".join(ctx.login["sources"])}
    env_fact["cudnn"] = [resolve_soname(ctx, f"libcudnn.so.{m}", order, words) for m in sorted(majors)]
    libcuda = resolve_soname(ctx, "libcuda.so.1", order, words)
    libcuda["version"] = (
        _match(r"\.so\.(\d+\.\d+(?:\.\d+)?)$", libcuda["real_path"] or "") or libcuda["version"]
    )
    libcuda["compat"] = bool(libcuda["real_path"] and "/compat/" in libcuda["real_path"] + "/")
    env_fact["libcuda"] = libcuda
    return env_fact


def _attach_dirs(envs, dirs):
    for env_fact in envs:
        for item in env_fact["cudnn"]:
            verdict = dirs.get(item.get("dir"))
            item["mixed"] = verdict["mixed"] if verdict else None
            item["missing_sub_libraries"] = verdict["missing"] if verdict else []


def probe(root, ld_entries, copies, *, site_packages=(), conda_envs=(), toolkits=()):
    """The ``consumers`` fact: {ld_library_path, environments, library_dirs, reasons}."""
    login, reasons = login_ld_library_path(root)
    ctx = Context(root, ld_entries, login, copies)
    envs = system_environments(ctx)
    conda = {c["path"] for c in copies if c.get("source") == "conda"}
    seen = set()
    for sp in sorted(set(site_packages)):
        env = python_env(sp)
        if env in seen or not _relevant(root, sp, conda):
            continue
        if len(seen) >= MAX_ENVS:
            reasons.append(f"more than {MAX_ENVS} Python environments: the others are not described")
            break
        seen.add(env)
        kind = (
            "conda"
            if root.isdir(env + "/conda-meta")
            else "venv"
            if root.exists(env + "/pyvenv.cfg")
            else "python"
        )
        envs.append(python_environment(ctx, env, sp, kind))
    for env in sorted(conda - seen):
        envs.append(new_env("conda", env))
        envs[-1]["cudnn"] = [
            resolve_soname(
                ctx,
                f"libcudnn.so.{c['major']}",
                [("conda_lib", [env + "/lib"]), ("ld_cache", []), ("default_dirs", ctx.trusted)],
                {},
            )
            for c in copies
            if c.get("path") == env and c.get("major")
        ]
    envs += [toolkit_environment(ctx, t, copies) for t in toolkits]
    pip = [c for c in copies if c.get("source") == "pip" and c.get("package")]
    records = {root.realpath(lib)[0]: record for lib, record in (wheel_record(root, c) for c in pip)}
    lib_dirs = [os.path.dirname(c["library"]) for c in copies if c.get("library")]
    lib_dirs += [item["dir"] for e in envs for item in e["cudnn"] if item.get("dir")]
    dirs = library_dirs(root, lib_dirs, records)
    _attach_dirs(envs, dirs)
    return {
        "ld_library_path": login,
        "environments": envs,
        "library_dirs": list(dirs.values()),
        "reasons": reasons,
    }
