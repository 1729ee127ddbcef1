# Copyright: gpufleet contributors
# Apache-2.0
"""Who owns a path, and what the roles would touch: the one reader of ownership.

Owner kinds: ``gpufleet`` (its marker in the tree), ``package`` (the dpkg/rpm file lists of the NVIDIA-related
packages), ``runfile`` (NVIDIA's installer: ``bin/cuda-uninstaller`` in the tree), ``conda`` (a ``conda-meta``
directory above), ``pip`` (a ``site-packages`` tree), ``tarball`` (cuDNN files nobody owns; given by the cuDNN
probe), ``unknown``; ``absent`` for a path that is not there.

Also read here (the ``owners`` subset of nvidia_facts): the entries the cuda_toolkit/cudnn roles create, link
or replace (``/usr/local/cuda*``, gpufleet's profile and linker files, extra paths such as the cuDNN prefix),
the update-alternatives database of ``cuda*``, and the dynamic linker's configuration (directories in the
order ldconfig reads them, the CUDA/cuDNN sonames each holds, what the cache resolves now).
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpufleet import MARKER

GPUFLEET_HEADER = "# Managed by gpufleet"  # the first line of every file gpufleet writes under /etc (a
# script's: the line after its #!)
# the first line of the driver role's modprobe options file before it took GPUFLEET_HEADER: ansible_managed
# (whatever ansible.cfg made of it), then these words
GPUFLEET_LEGACY_SUFFIX = "(gpufleet nvidia_driver)"
RUNFILE_UNINSTALLER = "bin/cuda-uninstaller"
KINDS = ("gpufleet", "package", "runfile", "conda", "pip", "tarball", "unknown", "absent")
# The files a tree's owner is read from, most telling first (a toolkit: nvcc, then its runtime).
TREE_KEY_FILES = (
    "bin/nvcc",
    "version.json",
    "include/cuda.h",
    "targets/x86_64-linux/include/cuda_runtime.h",
    "targets/sbsa-linux/include/cuda_runtime.h",
    "include/cudnn_version.h",
    "include/cudnn.h",
)
LD_CONF = "/etc/ld.so.conf"
# the sonames whose provider the roles may change (libcudnn.so.9, libcudart.so.13, ...)
TRACKED_SONAME = re.compile(r"^(libcudnn|libcudart)\.so\.\d+\Z")
ALTERNATIVES_DIRS = ("/var/lib/dpkg/alternatives", "/var/lib/alternatives")
ALTERNATIVE_NAME = re.compile(r"^cuda(-\d+(\.\d+)?)?\Z")
USR_LOCAL_CUDA = re.compile(r"^cuda(-\d+(\.\d+)?)?\Z")
# gpufleet's own files under /etc (the plans write them; plan/cuda.py and plan/cudnn.py name the same paths)
GPUFLEET_FILES = (
    "/etc/profile.d/gpufleet-cuda.sh",
    "/etc/ld.so.conf.d/gpufleet-cuda.conf",
    "/etc/ld.so.conf.d/gpufleet-cudnn.conf",
)


def owner(kind, name=None, version=None, words=None):
    """An owner as facts report it: {kind, name, version, words} (words: what a message prints)."""
    if words is None:
        words = {
            "gpufleet": "gpufleet",
            "runfile": f"NVIDIA's runfile installer ({RUNFILE_UNINSTALLER})",
            "absent": "nothing (absent)",
            "unknown": "unknown (no package, no runfile uninstaller, no gpufleet marker)",
        }.get(kind, f"{kind} {name or ''} {version or ''}".strip())
    return {"kind": kind, "name": name, "version": version, "words": words}


def package_owner(package, more=()):
    """The owner of a package's file (``more``: other packages with files in the same tree)."""
    words = f"package {package['name']} {package.get('version', '')}".strip()
    if more:
        words += f" (and {len(more)} more package(s), e.g. {sorted(more)[0]})"
    return owner("package", package["name"], package.get("version"), words)


def package_index(packages):
    """{path: package} over the file lists of the relevant packages (built once per Packages object)."""
    return packages.path_index()


def _parents(path):
    path = path.rstrip("/") or "/"
    while True:
        yield path
        if path == "/":
            return
        path = os.path.dirname(path)


def _tree_owner(root, path):
    """gpufleet / runfile / conda / pip of the nearest tree above ``path`` that says so, else None."""
    for parent in _parents(path):
        if parent in ("/", "/usr", "/usr/local", "/opt", "/etc"):
            return None
        if root.exists(f"{parent}/{MARKER}"):
            return owner("gpufleet", parent)
        if root.exists(f"{parent}/{RUNFILE_UNINSTALLER}"):
            return owner("runfile", parent)
        if root.isdir(f"{parent}/conda-meta"):
            return owner("conda", parent, words=f"conda environment {parent}")
        if os.path.basename(parent) in ("site-packages", "dist-packages"):
            return owner("pip", parent, words=f"pip (Python packages in {parent})")
    return None


def owner_of_path(root, packages, path, unowned=None):
    """The owner of one path (a file, a link or a directory): see the module docstring for the order.

    ``unowned``: the owner to report when nothing claims the path (default: unknown)."""
    if not root.exists(path) and not root.islink(path):
        return owner("absent")
    index = package_index(packages)
    real, _reason = root.realpath(path)
    for candidate in (path, real):
        package = index.get(candidate)
        if package is not None and not root.isdir(candidate):
            return package_owner(package)
    found = _tree_owner(root, real)
    if found is not None:
        return found
    for candidate in (path, real):
        if candidate in index:  # a directory a package lists (it owns files inside, not the directory)
            return package_owner(index[candidate])
    return unowned or owner("unknown")


def owner_of_tree(root, packages, tree):
    """The owner of a tree (a toolkit or cuDNN directory): its marker, the package of its key files, ..."""
    if not root.exists(tree):
        return owner("absent")
    if root.exists(f"{tree}/{MARKER}"):
        return owner("gpufleet", tree)
    index = package_index(packages)
    real, _reason = root.realpath(tree)
    for key in TREE_KEY_FILES:
        for base in (tree, real):
            package = index.get(f"{base}/{key}")
            if package is not None:
                prefix = real.rstrip("/") + "/"
                others = {p["name"] for f, p in index.items() if f.startswith(prefix)} - {package["name"]}
                return package_owner(package, others)
    if root.exists(f"{tree}/{RUNFILE_UNINSTALLER}"):
        return owner("runfile", tree)
    found = _tree_owner(root, real) or _packages_inside(root, index, real)
    if found is not None:
        return found
    # no NVIDIA package, no runfile, no marker: any package of the host's (a site's own package of CUDA)
    other = packages.owner_anywhere([f"{real}/{key}" for key in TREE_KEY_FILES] + [real])
    return package_owner(other) if other else owner("unknown")


def _packages_inside(root, index, real):
    """The package owner of a tree with no key file but packages' files inside (an admin's cuda-cudart-13-0
    alone puts only /usr/local/cuda-13.0/targets/.../libcudart.so.13 there), else None."""
    prefix = real.rstrip("/") + "/"
    inside = sorted((f, p["name"]) for f, p in index.items() if f.startswith(prefix) and not root.isdir(f))
    if not inside:
        return None
    first = inside[0][1]
    return package_owner(index[inside[0][0]], {name for _f, name in inside} - {first})


def _entry(root, packages, path, *, tree):
    """{type, target, real, owner, gpufleet_file} of one path the roles may touch."""
    link = root.readlink(path) if root.islink(path) else None
    real, reason = root.realpath(path)
    if link is not None:
        kind = "symlink"
    elif root.isdir(path):
        kind = "dir"
    elif root.exists(path):
        kind = "file"
    else:
        return {
            "type": "absent",
            "target": None,
            "real": None,
            "owner": owner("absent"),
            "gpufleet_file": False,
        }
    head = ""
    if kind == "file":
        text, _reason = root.read_text(path, limit=4096)
        lines = (text or "").split("\n", 2)
        # a script's header follows its #! line (the driver role's initramfs-tools hook)
        head = lines[1] if lines[0].startswith("#!") and len(lines) > 1 else lines[0]
    who = (
        owner_of_tree(root, packages, path) if tree and kind == "dir" else owner_of_path(root, packages, path)
    )
    if link is not None and who["kind"] in ("unknown", "absent"):
        who = owner_of_path(root, packages, real) if not reason else who
    gpufleet_file = head.startswith(GPUFLEET_HEADER) or (
        head.startswith("#") and head.rstrip().endswith(GPUFLEET_LEGACY_SUFFIX)
    )
    if gpufleet_file and who["kind"] == "unknown":
        who = owner("gpufleet", path)
    return {"type": kind, "target": link, "real": real, "owner": who, "gpufleet_file": gpufleet_file}


def touched_paths(root, extra=()):
    """The paths the roles may create, link or replace: /usr/local/cuda*, gpufleet's files, ``extra``."""
    names, _reason = root.listdir("/usr/local")
    paths = [f"/usr/local/{n}" for n in names or () if USR_LOCAL_CUDA.match(n)]
    paths += list(GPUFLEET_FILES)
    for given in extra:
        path = given.rstrip("/") or "/"
        paths.append(path)
        children, _reason = root.listdir(path) if root.isdir(path) and not root.islink(path) else (None, None)
        paths += [f"{path}/{c}" for c in children or ()]
    return sorted(set(paths))


def parse_alternative(text):
    """{mode, link, candidates: [{path, priority}]} of an update-alternatives database file (dpkg and
    chkconfig formats: mode, link, slave name/link pairs up to an empty line, then per candidate its path,
    priority and one line per slave)."""
    lines = (text or "").split("\n")
    if len(lines) < 2:
        raise ValueError("too short")
    mode, link = lines[0].strip(), lines[1].strip()
    at, slaves = 2, 0
    while at < len(lines) and lines[at].strip():
        at += 2 if not lines[at].startswith("/") else 1  # dpkg: name + link; chkconfig: link only
        slaves += 1
    at += 1
    candidates = []
    while at + 1 < len(lines) and lines[at].strip():
        path, priority = lines[at].strip(), lines[at + 1].strip()
        if not path.startswith("/") or not re.match(r"^-?\d+\Z", priority.split()[0] if priority else ""):
            break
        candidates.append({"path": path, "priority": int(priority.split()[0])})
        at += 2 + slaves
    return {"mode": mode, "link": link, "candidates": candidates}


def alternatives(root):
    """({name: {mode, link, value, candidates}}, reasons) of the cuda* alternatives."""
    found, reasons = {}, []
    for directory in ALTERNATIVES_DIRS:
        names, _reason = root.listdir(directory)
        for name in names or ():
            if not ALTERNATIVE_NAME.match(name) or name in found:
                continue
            text, reason = root.read_text(f"{directory}/{name}")
            try:
                entry = parse_alternative(text if text is not None else "")
            except ValueError as exc:
                reasons.append(f"{directory}/{name}: {reason or exc}")
                continue
            entry["value"] = root.readlink(f"/etc/alternatives/{name}")
            found[name] = entry
    return found, reasons


def _conf_lines(root, path, seen, out, reasons):
    """Append (conf file, directory) in ldconfig's order: lines in order, ``include`` globs sorted."""
    if path in seen:
        return
    seen.add(path)
    text, reason = root.read_text(path)
    if text is None:
        if path == LD_CONF:
            reasons.append(reason)
        return
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or line.startswith("hwcap"):
            continue
        if line.startswith("include"):
            for pattern in line.split()[1:]:
                for inc in _glob(root, pattern if pattern.startswith("/") else f"/etc/{pattern}"):
                    _conf_lines(root, inc, seen, out, reasons)
            continue
        for directory in re.split(r"[\s:,=]+", line):
            if directory.startswith("/"):
                out.append((path, directory.rstrip("/") or "/"))


def _glob(root, pattern):
    """Sorted matches of ``dir/*.conf``-style patterns (the only form ld.so.conf uses) under the root."""
    directory, _sep, name = pattern.rpartition("/")
    names, _reason = root.listdir(directory or "/")
    rx = re.compile("^" + re.escape(name).replace(r"\*", ".*").replace(r"\?", ".") + r"\Z")
    return [f"{directory}/{n}" for n in names or () if rx.match(n) and root.isfile(f"{directory}/{n}")]


def _unowned_library(soname):
    if soname.startswith("libcudnn"):
        return owner(
            "tarball", words="a cuDNN tarball copy (no package, wheel, conda env or gpufleet owns it)"
        )
    return None


def owner_of_copy(root, packages, copy):
    """The owner of a cuDNN copy of the cuDNN probe (its source and package say most of it)."""
    package = copy.get("package") or {}
    source = copy.get("source")
    if source in ("deb", "rpm") and package.get("name"):
        return package_owner(package)
    if source == "pip":
        return owner(
            "pip",
            package.get("name"),
            package.get("version"),
            f"pip {package.get('name', '')} "
            f"{package.get('version', '')} in {copy.get('python_env') or copy['path']}".strip(),
        )
    if source == "conda":
        return owner(
            "conda",
            package.get("name"),
            package.get("version"),
            f"conda {package.get('name', '')} {package.get('version', '')} in {copy['path']}",
        )
    found = _tree_owner(root, copy["path"])
    if found is not None and found["kind"] == "gpufleet":
        return found
    if source == "tarball":
        return owner("tarball", copy["path"], words=f"a cuDNN tarball unpacked in {copy['path']} (no owner)")
    return owner("unknown")


def linker(root, packages, ld_entries, machine_ok):
    """The linker's configuration and what it resolves now for the tracked sonames.

    ``machine_ok(flags)`` says whether a cache entry is of this host's ABI. Returns {conf: [{file, dir,
    sonames}], providers: {soname: {path, real, dir, version, owner}}, reasons}.
    """
    reasons, order = [], []
    _conf_lines(root, LD_CONF, set(), order, reasons)
    conf = []
    for conf_file, directory in order:
        names, _reason = root.listdir(directory)
        held = sorted(n for n in names or () if TRACKED_SONAME.match(n))
        conf.append({"file": conf_file, "dir": directory, "sonames": held})
    providers = {}
    for name, path, flags in ld_entries:
        if name in providers or not TRACKED_SONAME.match(name) or not machine_ok(flags):
            continue
        real, _reason = root.realpath(path)
        match = re.search(r"\.so\.(\d+(?:\.\d+)*)\Z", real)
        providers[name] = {
            "path": path,
            "real": real,
            "dir": os.path.dirname(path),
            "version": match.group(1) if match else None,
            "owner": owner_of_path(root, packages, real, unowned=_unowned_library(name)),
        }
    return {"conf": conf, "providers": providers, "reasons": reasons}


def probe(root, packages, ld_entries, machine_ok, extra_paths=()):
    """The ``owners`` fact: paths the roles touch, the cuda* alternatives, the linker."""
    paths = {}
    for path in touched_paths(root, extra_paths):
        tree = bool(USR_LOCAL_CUDA.match(os.path.basename(path))) or path.startswith(tuple(extra_paths))
        paths[path] = _entry(root, packages, path, tree=tree)
    alts, reasons = alternatives(root)
    link = linker(root, packages, ld_entries, machine_ok)
    reasons += link.pop("reasons")
    return {"paths": paths, "alternatives": alts, "linker": link, "reasons": reasons}
