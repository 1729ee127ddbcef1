# Copyright: gpufleet contributors
# Apache-2.0
"""Every cuDNN copy under a root: system packages, tarball trees, pip wheels, conda envs; and which copy
the dynamic loader resolves for libcudnn.so.N.

The filesystem walk is bounded (depth, deadline, pruned pseudo/network filesystems and big non-library trees,
directory symlinks never followed, each directory visited once). Libraries are loaded only in a forked
child (probe_common.run_isolated).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import time

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import owners as probe_owners
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import (
    UNKNOWN,
    bounded_names,
    run_isolated,
    scandir,
    version_tuple,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.ldcache import sonames

DEFAULT_SEARCH_PATHS = ("/usr", "/usr/local", "/opt", "/srv", "/home", "/root")
SKIP_PATHS = frozenset(
    (
        "/proc",
        "/sys",
        "/dev",
        "/run",
        "/tmp",
        "/var/tmp",
        "/var/lib/docker",
        "/var/lib/containers",
        "/usr/share",
        "/usr/src",
        "/usr/lib/debug",
        "/usr/lib/modules",
        "/usr/lib/firmware",
        "/usr/lib/jvm",
        "/usr/libexec",
        "/snap",
        "/lost+found",
    )
)
SKIP_NAMES = frozenset(
    (
        "__pycache__",
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".cache",
        ".npm",
        ".m2",
        ".gradle",
        ".cargo",
        ".rustup",
        "man",
        "locale",
        "doc",
        "docs",
        "icons",
        "fonts",
        "pkgs",
    )
)
NETWORK_FS = frozenset(
    (
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ncpfs",
        "afs",
        "ceph",
        "glusterfs",
        "lustre",
        "gpfs",
        "beegfs",
        "davfs",
        "sshfs",
        "fuse.sshfs",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "fuse.rclone",
        "autofs",
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "debugfs",
        "tracefs",
        "securityfs",
        "pstore",
        "bpf",
        "configfs",
        "fusectl",
        "mqueue",
        "hugetlbfs",
        "binfmt_misc",
        "efivarfs",
    )
)
MULTIARCH = frozenset(("x86_64-linux-gnu", "aarch64-linux-gnu", "powerpc64le-linux-gnu", "sbsa-linux"))
LIB_NAME = re.compile(r"^libcudnn\.so(\.\d+)*$")
HEADER_NAMES = ("cudnn_version.h", "cudnn.h")
PIP_DIST = re.compile(r"^nvidia_cudnn_cu(\d+)-([^-]+)\.dist-info$", re.IGNORECASE)
PIP_DIST_PLAIN = re.compile(r"^nvidia_cudnn-([^-]+)\.dist-info$", re.IGNORECASE)
PYTHON_LIB = re.compile(r"^python\d+(\.\d+)?t?$")
SITE_DIRS = ("site-packages", "dist-packages")
PKG_NAME = re.compile(r"^libcudnn(\d+)(?:-(dev|devel|headers|static|samples|doc))?(?:-cuda-(\d+))?$")


# ---------------------------------------------------------------- parsers (pure)
def parse_header(text):
    """(version, reason) from cudnn_version.h (v8+) or cudnn.h (v7)."""
    values = {}
    for key in ("CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"):
        match = re.search(rf"^\s*#\s*define\s+{key}\s+(\d+)\b", text or "", re.MULTILINE)
        if not match:
            return UNKNOWN, f"no {key} in the header"
        values[key] = int(match.group(1))
    return f"{values['CUDNN_MAJOR']}.{values['CUDNN_MINOR']}.{values['CUDNN_PATCHLEVEL']}", None


def decode_cudnn_int(value):
    """cudnnGetVersion(): 91400 -> '9.14.0' (v9: M*10000+m*100+p), 8907 -> '8.9.7' (v7/v8: M*1000+m*100+p)."""
    if not isinstance(value, int) or value <= 0:
        return UNKNOWN
    if value >= 10000:
        return f"{value // 10000}.{(value % 10000) // 100}.{value % 100}"
    return f"{value // 1000}.{(value % 1000) // 100}.{value % 100}"


def cuda_major_from_text(text):
    """CUDA major from a package name/version, tarball name or pip dist name; None when absent."""
    for pattern in (
        r"-cuda-(\d+)$",  # libcudnn9-cuda-12
        r"[+.]cuda(\d+)(?:\.\d+)*$",  # 8.9.7.29-1+cuda12.2, 8.9.7.29-1.cuda12.2
        r"_cuda(\d+)-archive",  # cudnn-linux-x86_64-9.14.0.64_cuda13-archive
        r"nvidia[-_]cudnn[-_]cu(\d+)",  # nvidia-cudnn-cu12
        r"cudnn.*cuda-?(\d+)",  # cudnn-9.1-cuda12 (a tree named after its tarball)
    ):
        match = re.search(pattern, text or "", re.IGNORECASE)
        if match:
            return int(match.group(1))
    return None


def parse_metadata(text):
    """(name, version, reason) from a dist-info METADATA."""
    name = version = None
    for line in (text or "").splitlines():
        if not line.strip():
            break
        if line.startswith("Name:"):
            name = line.split(":", 1)[1].strip()
        elif line.startswith("Version:"):
            version = line.split(":", 1)[1].strip()
    if not name or not version or not re.match(r"^\d+(\.\d+)*$", version):
        return name, None, "METADATA has no usable Name/Version"
    return name, version, None


def cudnn_ctypes(library):
    """Versions reported by the library itself (call through run_isolated). No GPU needed."""
    lib = ctypes.CDLL(library)
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    result = {"version_int": int(lib.cudnnGetVersion())}
    getter = getattr(lib, "cudnnGetCudartVersion", None)
    if getter is not None:
        getter.restype = ctypes.c_size_t
        result["cudart_version_int"] = int(getter())
    return result


# ---------------------------------------------------------------- bounded walk
class Scan:
    """What the walk found (inner paths)."""

    def __init__(self):
        self.headers = []
        self.libraries = []
        self.site_packages = []
        self.conda_envs = []
        self.warnings = []
        self.truncated = False
        self.dirs = 0


def network_mounts(root):
    """Inner mount points of network/pseudo filesystems (live root only)."""
    if not root.is_slash:
        return set()
    text, _reason = root.read_text("/proc/self/mounts", limit=4 * 1024 * 1024)
    mounts = set()
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) >= 3 and (parts[2] in NETWORK_FS or parts[2].startswith("fuse.")):
            mounts.add(parts[1].replace("\\040", " "))
    return mounts


def _entries(root, inner, scan, visited):
    """The entries of a directory not seen yet (by device and inode), or None (seen, gone or unlistable)."""
    try:
        st = os.stat(root.outer(inner), follow_symlinks=False)
    except OSError:
        return None
    key = (st.st_dev, st.st_ino)
    if key in visited:
        return None
    visited.add(key)
    scan.dirs += 1
    try:
        with scandir(root.outer(inner)) as iterator:
            return list(iterator)
    except OSError as exc:
        scan.warnings.append(f"cannot list {inner}: {exc.strerror or exc}")
        return None


def _children(scan, inner, depth, entries, max_depth):
    """Subdirectories to walk (libraries and headers found here are recorded in ``scan``)."""
    children = []
    for entry in entries:
        name = entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        path = inner.rstrip("/") + "/" + name
        if is_dir:
            if depth < max_depth and name not in SKIP_NAMES and name != "conda-meta":
                children.append((path, depth + 1))
        elif name.startswith("libcudnn") and LIB_NAME.match(name):
            scan.libraries.append(path)
        elif name in HEADER_NAMES:
            scan.headers.append(path)
    return children


def _visit(scan, inner, depth, entries, max_depth):
    """What to walk below one directory, after recording what it holds."""
    names = {e.name for e in entries}
    base = os.path.basename(inner)
    if base in SITE_DIRS:
        scan.site_packages.append(inner)
        return []  # handled by probe_pip: never walk a site-packages tree (can be huge)
    if "conda-meta" in names:
        scan.conda_envs.append(inner)
    if PYTHON_LIB.match(base) and os.path.basename(os.path.dirname(inner)) in ("lib", "lib64"):
        # a Python's lib dir: only its site-packages can hold cuDNN (the stdlib is thousands of dirs)
        return [(inner + "/" + n, depth + 1) for n in sorted(names) if n in SITE_DIRS]
    return _children(scan, inner, depth, entries, max_depth)


def walk(root, search_paths, max_depth=6, deadline=None, skip=()):
    scan = Scan()
    skip_paths = set(SKIP_PATHS) | set(skip) | network_mounts(root)
    visited = set()
    stack = []
    for path in search_paths:
        inner = "/" + path.strip("/") if path.strip("/") else "/"
        inner, _reason = root.realpath(inner)  # a search path that is a link is followed, inside the root
        stack.append((inner, 0))
    stack.reverse()
    while stack:
        if deadline is not None and time.monotonic() > deadline:
            scan.truncated = True
            scan.warnings.append("cudnn scan deadline reached: results are partial")
            break
        inner, depth = stack.pop()
        if inner in skip_paths:
            continue
        entries = _entries(root, inner, scan, visited)
        if entries is not None:
            stack.extend(sorted(_visit(scan, inner, depth, entries, max_depth), reverse=True))
    return scan


# ---------------------------------------------------------------- copies
def new_copy(path, source):
    return {
        "path": path,
        "source": source,
        "version": UNKNOWN,
        "major": None,
        "header": None,
        "header_version": UNKNOWN,
        "library": None,
        "library_version": UNKNOWN,
        "cuda_major": None,
        "cuda_major_from": UNKNOWN,
        "ctypes": {
            "state": "skipped",
            "version": UNKNOWN,
            "version_int": None,
            "cudart_version_int": None,
            "reason": None,
        },
        "package": None,
        "held": None,
        "python_env": None,
        "mismatch": None,
        "resolved": False,
        "reasons": {},
        # internal, removed before returning
        "_lib_link": None,
    }


def _pick_header(root, candidates):
    """The version header among candidate inner paths: cudnn_version.h first, else cudnn.h with a version."""
    ordered = sorted(candidates, key=lambda p: (os.path.basename(p) != "cudnn_version.h", p))
    return ordered[0] if ordered else None


def _pick_library(candidates):
    """(link, versioned) among inner paths: libcudnn.so.N (what programs load) and libcudnn.so.N.x.y."""
    links = sorted(p for p in candidates if re.search(r"libcudnn\.so\.\d+$", p))
    versioned = sorted(p for p in candidates if re.search(r"libcudnn\.so\.\d+\.\d+", p))
    bare = sorted(p for p in candidates if p.endswith("libcudnn.so"))
    link = links[-1] if links else (versioned[-1] if versioned else (bare[-1] if bare else None))
    return link, (versioned[-1] if versioned else None)


def fill_header(root, copy, header):
    if header is None:
        copy["reasons"]["header_version"] = "no cudnn_version.h or cudnn.h in this copy"
        return
    copy["header"] = header
    text, reason = root.read_text(header, limit=1024 * 1024)
    if text is None:
        copy["reasons"]["header_version"] = reason
        return
    version, reason = parse_header(text)
    if version == UNKNOWN and os.path.basename(header) == "cudnn.h":
        sibling = os.path.dirname(header) + "/cudnn_version.h"
        if root.exists(sibling):
            copy["header"] = sibling
            text, reason = root.read_text(sibling, limit=1024 * 1024)
            version, reason = parse_header(text) if text is not None else (UNKNOWN, reason)
    copy["header_version"] = version
    if reason:
        copy["reasons"]["header_version"] = "{}: {}".format(copy["header"], reason)


def fill_library(root, copy, candidates):
    link, versioned = _pick_library(candidates)
    if link is None:
        copy["reasons"]["library"] = "no libcudnn.so* in this copy"
        copy["reasons"]["library_version"] = copy["reasons"]["library"]
        return
    real, reason = root.realpath(link)
    if reason:
        copy["reasons"]["library"] = f"{link}: {reason}"
        if versioned and versioned != link:
            real, reason = root.realpath(versioned)
            if reason:
                copy["reasons"]["library_version"] = copy["reasons"]["library"]
                return
            link = versioned
        else:
            copy["reasons"]["library_version"] = copy["reasons"]["library"]
            return
    copy["library"] = real
    copy["_lib_link"] = link
    match = re.search(r"libcudnn\.so\.(\d+\.\d+\.\d+)", os.path.basename(real))
    if match:
        copy["library_version"] = match.group(1)
    else:
        copy["reasons"]["library_version"] = (
            f"library file name {os.path.basename(real)} carries no full version"
        )


def run_ctypes(root, copy, live, timeout):
    if not live:
        copy["ctypes"]["reason"] = "runtime probe skipped: root is not /"
        return
    if copy["library"] is None:
        copy["ctypes"]["reason"] = "no loadable library in this copy"
        return
    result, reason = run_isolated(cudnn_ctypes, (root.outer(copy["_lib_link"] or copy["library"]),), timeout)
    if result is None:
        copy["ctypes"].update(state="failed", reason=reason)
        return
    version = decode_cudnn_int(result.get("version_int"))
    copy["ctypes"].update(
        state="ok",
        version=version,
        version_int=result.get("version_int"),
        cudart_version_int=result.get("cudart_version_int"),
        reason=None,
    )
    if copy["library_version"] == UNKNOWN and version != UNKNOWN:
        copy["library_version"] = version
        copy["reasons"].pop("library_version", None)


def finish_copy(copy, package_version=None):
    """Version, major, CUDA major from ctypes, mismatch, and reasons for what stays unknown."""
    if copy["cuda_major"] is None and copy["ctypes"].get("cudart_version_int"):
        copy["cuda_major"] = copy["ctypes"]["cudart_version_int"] // 1000
        copy["cuda_major_from"] = "ctypes"
    if copy["cuda_major"] is None:
        copy["reasons"]["cuda_major"] = "no CUDA major in the package/tarball/dist name and %s" % (
            "the library did not load: {}".format(copy["ctypes"]["reason"])
            if copy["ctypes"]["state"] != "ok"
            else "cudnnGetCudartVersion is not available"
        )
    for candidate in (copy["header_version"], copy["library_version"], package_version):
        if candidate and candidate != UNKNOWN and version_tuple(candidate):
            copy["version"] = ".".join(candidate.split(".")[:3])
            break
    if copy["version"] == UNKNOWN:
        copy["reasons"]["version"] = (
            "; ".join(
                copy["reasons"].get(k, "")
                for k in ("header_version", "library_version")
                if copy["reasons"].get(k)
            )
            or "no header, library or package version"
        )
    else:
        copy["major"] = int(copy["version"].split(".")[0])
    known = {
        tuple((version_tuple(v) + (0, 0, 0))[:3])
        for v in (copy["header_version"], copy["library_version"], package_version)
        if v and v != UNKNOWN and version_tuple(v)
    }
    known_count = sum(
        1 for v in (copy["header_version"], copy["library_version"], package_version) if v and v != UNKNOWN
    )
    copy["mismatch"] = (len(known) > 1) if known_count >= 2 else None
    if copy["mismatch"] is None:
        copy["reasons"]["mismatch"] = "fewer than two of header, library and package versions are known"
    if copy["held"] is None:
        copy["held"] = False


def _prefix(inner_dir):
    parts = inner_dir.rstrip("/").split("/")
    if len(parts) > 2 and parts[-1] in MULTIARCH and parts[-2] in ("lib", "lib64", "include"):
        return "/".join(parts[:-2]) or "/"
    if len(parts) > 1 and parts[-1] in ("lib", "lib64", "include"):
        return "/".join(parts[:-1]) or "/"
    return inner_dir


def package_copies(root, packages):
    """(copies, owned real paths) from deb/rpm packages named libcudnn*."""
    groups = {}
    for package in packages.all().values():
        match = PKG_NAME.match(package["name"])
        if not match:
            continue
        major = int(match.group(1))
        cuda_major = int(match.group(3)) if match.group(3) else cuda_major_from_text(package["version"])
        key = (package["manager"], major, cuda_major)
        groups.setdefault(key, []).append((match.group(2), package))
    copies = []
    owned = set()
    for (manager, major, cuda_major), members in sorted(groups.items(), key=lambda kv: str(kv[0])):
        runtime = next((p for kind, p in members if kind is None), members[0][1])
        files = []
        reasons = []
        for _kind, package in members:
            listed, reason = packages.files(package)
            files.extend(listed)
            if reason:
                reasons.append(reason)
        for path in files:
            real, _reason = root.realpath(path)
            owned.add(real)
        copy = new_copy("/usr", manager)
        copy["package"] = packages.public(runtime)
        copy["held"] = bool(runtime["held"])
        if cuda_major is not None:
            copy["cuda_major"], copy["cuda_major_from"] = cuda_major, "package"
        headers = [f for f in files if os.path.basename(f) in HEADER_NAMES]
        libs = [f for f in files if LIB_NAME.match(os.path.basename(f))]
        if headers or libs:
            prefixes = {_prefix(os.path.dirname(f)) for f in headers + libs}
            copy["path"] = sorted(prefixes, key=len)[0]
        fill_header(root, copy, _pick_header(root, headers))
        fill_library(root, copy, libs)
        if reasons and not files:
            copy["reasons"]["library"] = "; ".join(reasons)
        copy["_package_version"] = re.sub(r"^\d+:", "", runtime["version"]).split("-")[0]
        copy["_major"] = major
        copies.append(copy)
    return copies, owned


def _python_env(root, site_packages):
    """The environment that holds a site-packages dir: <env>/lib/pythonX.Y/site-packages -> <env>."""
    parts = site_packages.rstrip("/").split("/")
    if len(parts) >= 4 and parts[-2].startswith("python") and parts[-3] in ("lib", "lib64"):
        return "/".join(parts[:-3]) or "/"
    return os.path.dirname(site_packages)


def _pip_dists(names):
    """[(dist-info name, CUDA major or None)] of the cuDNN wheels in a site-packages listing."""
    dists = []
    for name in names:
        match = PIP_DIST.match(name)
        if match:
            dists.append((name, int(match.group(1))))
        elif PIP_DIST_PLAIN.match(name):
            dists.append((name, None))
    return dists


def _pip_trees(root, sp):
    """[(tree, kind)]: the nvidia-cudnn wheel's tree and torch's bundled copy, when present."""
    trees = []
    if root.isdir(sp + "/nvidia/cudnn"):
        trees.append((sp + "/nvidia/cudnn", "nvidia-cudnn"))
    if root.isdir(sp + "/torch/lib"):
        libs, _reason = root.listdir(sp + "/torch/lib")
        if any(LIB_NAME.match(n) for n in libs or ()):
            trees.append((sp + "/torch/lib", "torch"))
    return trees


def _pip_package(root, copy, sp, dists):
    """The wheel of an nvidia/cudnn tree (from its dist-info METADATA); returns its version or None."""
    if len(dists) > 1:
        copy["reasons"]["package"] = "several cuDNN dists share this tree: {}".format(
            ", ".join(d for d, _major in dists)
        )
    if not dists:
        copy["reasons"]["package"] = "no nvidia_cudnn*.dist-info next to nvidia/cudnn"
        return None
    dist, cuda_major = dists[-1]
    text, reason = root.read_text(f"{sp}/{dist}/METADATA", limit=1024 * 1024)
    name, version, meta_reason = parse_metadata(text) if text is not None else (None, None, reason)
    if meta_reason:
        copy["reasons"]["package"] = f"{sp}/{dist}: {meta_reason}"
    name = name or dist.split("-")[0].replace("_", "-")
    copy["package"] = {"name": name, "version": version or UNKNOWN, "held": False, "manager": "pip"}
    cuda_major = cuda_major if cuda_major is not None else cuda_major_from_text(name)
    if cuda_major is not None:
        copy["cuda_major"], copy["cuda_major_from"] = cuda_major, "pip"
    return version


def _pip_copy(root, sp, tree, kind, dists):
    copy = new_copy(tree, "pip")
    copy["python_env"] = _python_env(root, sp)
    copy["held"] = False
    package_version = None
    if kind == "nvidia-cudnn":
        package_version = _pip_package(root, copy, sp, dists)
        headers = [
            tree + sub for sub in ("/include/cudnn_version.h", "/include/cudnn.h") if root.exists(tree + sub)
        ]
        libs, _reason = root.listdir(tree + "/lib")
        fill_header(root, copy, _pick_header(root, headers))
        fill_library(root, copy, [tree + "/lib/" + n for n in libs or () if LIB_NAME.match(n)])
    else:
        libs, _reason = root.listdir(tree)
        copy["package"] = {"name": "torch", "version": UNKNOWN, "held": False, "manager": "pip"}
        fill_header(root, copy, None)
        fill_library(root, copy, [tree + "/" + n for n in libs or () if LIB_NAME.match(n)])
    copy["_package_version"] = package_version
    return copy


def pip_copies(root, site_packages_dirs, owned):
    copies = []
    for sp in sorted(set(site_packages_dirs)):
        names, _reason = bounded_names(root, sp)  # a million-entry site-packages is read only so far
        if names is None:
            continue
        dists = _pip_dists(names)
        for tree, kind in _pip_trees(root, sp):
            copy = _pip_copy(root, sp, tree, kind, dists)
            for path in (copy["header"], copy["library"]):
                if path:
                    owned.add(path)
            copies.append(copy)
    return copies


def _conda_meta(root, env, name):
    """(metadata dict, reason) of a conda-meta/<package>.json."""
    text, reason = root.read_text(f"{env}/conda-meta/{name}", limit=16 * 1024 * 1024)
    if text is None:
        return {}, reason
    try:
        meta = json.loads(text)
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
    except ValueError as exc:
        return {}, f"{env}/conda-meta/{name}: {exc}"
    return meta, reason


def _conda_cuda_major(depends, build):
    """The CUDA major of a conda cuDNN: its cuda-version dependency, else its build string."""
    match = re.search(r"cuda-version\s*>=\s*(\d+)", depends) or re.search(
        r"cuda(?:toolkit|-cudart)?\s*[>=]*\s*(\d+)", depends
    )
    if match:
        return int(match.group(1))
    found = re.search(r"cuda(\d+)", build)
    return cuda_major_from_text(build) or (int(found.group(1)) if found else None)


def _conda_files(root, env, meta):
    """(headers, libraries) of a conda cuDNN: its files list, else what env/include and env/lib hold."""
    files = [env + "/" + f for f in meta.get("files") or () if isinstance(f, str)]
    headers = [f for f in files if os.path.basename(f) in HEADER_NAMES] or [
        env + "/include/" + h for h in HEADER_NAMES if root.exists(env + "/include/" + h)
    ]
    libs = [f for f in files if LIB_NAME.match(os.path.basename(f))]
    if not libs:
        listed, _reason = root.listdir(env + "/lib")
        libs = [env + "/lib/" + n for n in listed or () if LIB_NAME.match(n)]
    return headers, libs


def _conda_copy(root, env, name, owned):
    copy = new_copy(env, "conda")
    copy["python_env"] = env
    copy["held"] = False
    meta, reason = _conda_meta(root, env, name)
    if reason:
        copy["reasons"]["package"] = reason
    version = meta.get("version") if isinstance(meta.get("version"), str) else None
    copy["package"] = {
        "name": str(meta.get("name") or name.split("-")[0]),
        "version": version or UNKNOWN,
        "build": str(meta.get("build") or UNKNOWN),
        "held": False,
        "manager": "conda",
    }
    depends = " ".join(str(d) for d in meta.get("depends") or () if isinstance(d, str))
    cuda_major = _conda_cuda_major(depends, copy["package"]["build"])
    if cuda_major is not None:
        copy["cuda_major"], copy["cuda_major_from"] = cuda_major, "conda"
    headers, libs = _conda_files(root, env, meta)
    fill_header(root, copy, _pick_header(root, headers))
    fill_library(root, copy, libs)
    for path in headers + libs:
        real, _reason = root.realpath(path)
        owned.add(real)
    copy["_package_version"] = version
    return copy


def conda_copies(root, env_dirs, owned):
    copies = []
    for env in sorted(set(env_dirs)):
        names, _reason = root.listdir(env + "/conda-meta")
        copies.extend(
            _conda_copy(root, env, name, owned)
            for name in names or ()
            if re.match(r"^(cudnn|libcudnn)-\d.*\.json$", name)
        )
    return copies


def _reported_header(root, path):
    """False for a cudnn.h that its cudnn_version.h (or the library) reports instead."""
    if os.path.basename(path) != "cudnn.h":
        return True
    if os.path.exists(root.outer(os.path.dirname(path) + "/cudnn_version.h")):
        return False
    text, _reason = root.read_text(path, limit=1024 * 1024)
    return text is None or "CUDNN_MAJOR" in text  # v8+ cudnn.h without its cudnn_version.h: the library


def _unowned_groups(root, scan, owned):
    """{prefix: (headers, libraries)} of what no package, wheel or conda env owns."""
    groups = {}
    for path in scan.headers:
        real, _reason = root.realpath(path)
        if real in owned or path in owned or not _reported_header(root, path):
            continue
        groups.setdefault(_prefix(os.path.dirname(path)), ([], []))[0].append(path)
    for path in scan.libraries:
        real, _reason = root.realpath(path)
        if real in owned or path in owned:
            continue
        groups.setdefault(_prefix(os.path.dirname(path)), ([], []))[1].append(path)
    return groups


def _libs_by_major(libs):
    by_major = {}
    bare = []
    for lib in libs:
        match = re.search(r"libcudnn\.so\.(\d+)", lib)
        if match:
            by_major.setdefault(int(match.group(1)), []).append(lib)
        else:
            bare.append(lib)  # the unversioned dev link belongs to whichever major is there
    if not by_major:
        by_major[None] = bare
    return sorted(by_major.items(), key=lambda kv: str(kv[0]))


def tarball_copies(root, scan, owned):
    """Headers and libraries no package/pip/conda owns, grouped by prefix."""
    copies = []
    for prefix, (headers, libs) in sorted(_unowned_groups(root, scan, owned).items()):
        for index, (_major, major_libs) in enumerate(_libs_by_major(libs)):
            copy = new_copy(prefix, "tarball" if headers or "cudnn" in prefix.lower() else UNKNOWN)
            copy["held"] = False
            if copy["source"] == UNKNOWN:
                copy["reasons"]["source"] = "a lone library not owned by any package, wheel or conda env"
            cuda_major = cuda_major_from_text(prefix)
            if cuda_major is not None:
                copy["cuda_major"], copy["cuda_major_from"] = cuda_major, "tarball"
            fill_header(root, copy, _pick_header(root, headers) if index == 0 else None)
            fill_library(root, copy, major_libs)
            copy["_package_version"] = None
            copies.append(copy)
    return copies


def resolved(root, copies, ld_entries, machine=None):
    result = []
    for soname, path in sorted(sonames(ld_entries, r"^libcudnn\.so\.\d+$", machine).items()):
        real, _reason = root.realpath(path)
        entry = {
            "soname": soname,
            "major": int(soname.rsplit(".", 1)[1]),
            "path": path,
            "real_path": real,
            "copy_path": None,
            "version": UNKNOWN,
        }
        for copy in copies:
            if copy["library"] == real:
                copy["resolved"] = True
                entry["copy_path"] = copy["path"]
                entry["version"] = (
                    copy["library_version"] if copy["library_version"] != UNKNOWN else copy["version"]
                )
                break
        if entry["version"] == UNKNOWN:
            match = re.search(r"libcudnn\.so\.(\d+\.\d+\.\d+)", real)
            if match:
                entry["version"] = match.group(1)
        result.append(entry)
    return result


def probe(
    root,
    live,
    packages,
    ld_entries,
    *,
    search_paths=None,
    max_depth=6,
    deadline=None,
    timeout=10.0,
    found=None,
):
    """(copies, resolved, warnings, truncated); ``found`` (a dict), when given, receives the walk's
    ``site_packages`` and ``conda_envs`` (the consumers probe describes those environments)."""
    paths = list(DEFAULT_SEARCH_PATHS) + [p for p in (search_paths or ()) if p not in DEFAULT_SEARCH_PATHS]
    copies, owned = package_copies(root, packages)
    scan = walk(root, paths, max_depth=max_depth, deadline=deadline)
    if found is not None:
        found.update(site_packages=list(scan.site_packages), conda_envs=list(scan.conda_envs))
    copies += pip_copies(root, scan.site_packages, owned)
    copies += conda_copies(root, scan.conda_envs, owned)
    copies += tarball_copies(root, scan, owned)
    for copy in copies:
        run_ctypes(root, copy, live, timeout)
        finish_copy(copy, copy.pop("_package_version", None))
        copy.pop("_major", None)
    resolved_list = resolved(root, copies, ld_entries)
    for copy in copies:
        copy.pop("_lib_link", None)
        copy["owner"] = probe_owners.owner_of_copy(root, packages, copy)
    copies.sort(key=lambda c: (c["source"], c["path"]))
    return copies, resolved_list, scan.warnings, scan.truncated
