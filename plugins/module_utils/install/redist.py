# Copyright: gpufleet contributors
# Apache-2.0
"""NVIDIA redist manifests and tarballs: read, select, fetch verified, install atomically.

Stdlib only, Python >= 3.9 (runs on targets inside the ``nvidia_redist`` module and on the controller).

NVIDIA publishes each product release as ``<base>/<product>/redist/redistrib_<release>.json`` whose
top-level keys are ``release_date``/``release_label``/``release_product`` and one object per component::

    "cuda_nvcc": {"name": ..., "version": "13.0.88",
                  "linux-x86_64": {"relative_path": "cuda_nvcc/linux-x86_64/...-archive.tar.xz",
                                   "sha256": ..., "md5": ..., "size": "<bytes>"}}
    "cudnn": {"version": "9.14.0.64", "cuda_variant": ["12", "13"],
              "linux-x86_64": {"cuda12": {relative_path, sha256, md5, size}, "cuda13": {...}}}

``relative_path`` is relative to the redist directory (the manifest's own directory).
Source: https://developer.download.nvidia.com/compute/cudnn/redist/redistrib_9.27.0.json and
https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.4.2.json (schema read 2026-11-30).

The same code serves NVIDIA's servers, a site mirror with the same layout, and a local directory
(controller cache copied to hosts): ``base_url`` is the part before ``<product>/redist/``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import socket
import tarfile
import time

try:  # Python 3
    from urllib.error import HTTPError, URLError
    from urllib.request import Request, urlopen
except ImportError:  # pragma: no cover - Python 2 is not supported
    raise

from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import VersionError, parse_version

NVIDIA_BASE_URL = "https://developer.download.nvidia.com/compute"
PLATFORMS = ("linux-x86_64", "linux-sbsa", "linux-aarch64")
PRODUCTS = ("cuda", "cudnn")
MARKER = ".gpufleet-redist.json"
STAGING_TAG = ".gpufleet-staging-"
RETIRED_TAG = ".gpufleet-retired-"
_CHUNK = 1 << 20

# Newest redist release per CUDA minor, so that "13.0" in an inventory finds its manifest.
# Source: https://developer.download.nvidia.com/compute/cuda/redist/ listing (redistrib_<X.Y.Z>.json files),
# read 2026-11-30; override with the role variable cuda_toolkit_redist_releases.
CUDA_REDIST_RELEASES = {
    "12.4": "12.4.1",  # redistrib_12.4.1.json
    "12.5": "12.5.1",  # redistrib_12.5.1.json
    "12.6": "12.6.3",  # redistrib_12.6.3.json
    "12.8": "12.8.1",  # redistrib_12.8.1.json
    "12.9": "12.9.1",  # redistrib_12.9.1.json
    "13.0": "13.0.2",  # redistrib_13.0.2.json (also the H200 host's packages: cuda-toolkit 13.0.2)
}

# Components that make a usable compiler toolkit (nvcc + headers + runtime), per CUDA major.
# CUDA 13 ships crt (host headers nvcc needs) and libnvvm (cicc) as their own components
# (redistrib_13.0.2.json); CUDA 12 keeps both inside cuda_nvcc (redistrib_12.9.1.json).
TOOLKIT_COMPONENTS = {
    12: ["cuda_nvcc", "cuda_cudart", "cuda_cccl", "cuda_nvrtc"],
    13: ["cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cudart", "cuda_cccl", "cuda_nvrtc"],
}

_SHA256_RE = re.compile(r"^[0-9a-f]{64}\Z")
_REL_RE = re.compile(r"^[A-Za-z0-9._+-]+(?:/[A-Za-z0-9._+-]+)*\Z")


class RedistError(Exception):
    """A clear, one-line reason why a redist plan or install cannot proceed."""


# ---------------------------------------------------------------------------------------------------
# URLs and manifests
# ---------------------------------------------------------------------------------------------------
def redist_dir_url(base_url, product):
    """``<base>/<product>/redist`` (base like https://developer.download.nvidia.com/compute)."""
    if product not in PRODUCTS:
        raise RedistError("product {!r} is not one of {}".format(product, ", ".join(PRODUCTS)))
    if not base_url:
        raise RedistError(f"the redist base URL is empty; NVIDIA's is {NVIDIA_BASE_URL}")
    return "{}/{}/redist".format(base_url.rstrip("/"), product)


def manifest_url(base_url, product, release):
    return f"{redist_dir_url(base_url, product)}/redistrib_{release}.json"


def artifact_url(base_url, product, relative_path):
    if not _REL_RE.match(relative_path or "") or ".." in relative_path.split("/"):
        raise RedistError(f"refusing manifest relative_path {relative_path!r} (not a plain relative path)")
    return f"{redist_dir_url(base_url, product)}/{relative_path}"


def cuda_release(version, releases=None, var="cuda_toolkit_versions"):
    """The redist release (X.Y.Z) for a toolkit version given as X.Y or X.Y.Z."""
    try:
        parsed = parse_version(version, var)
    except VersionError as exc:
        raise RedistError(str(exc)) from None
    table = dict(CUDA_REDIST_RELEASES)
    table.update(releases or {})
    if len(parsed.parts) >= 3:
        return ".".join(str(n) for n in parsed.parts[:3])
    if len(parsed.parts) != 2:
        raise RedistError(f"{var}: {version!r} is not a CUDA version X.Y or X.Y.Z")
    key = "{}.{}".format(*parsed.parts)
    if key not in table:
        raise RedistError(
            "{}: CUDA {} has no known redist release; known: {} (or give X.Y.Z, or set "
            "cuda_toolkit_redist_releases)".format(var, key, ", ".join(sorted(table, key=_vkey)))
        )
    return table[key]


def cudnn_release(version, var="cudnn_version"):
    """(manifest release X.Y.Z, full version or None) for "9.14.0" or "9.14.0.64"."""
    try:
        parsed = parse_version(version, var)
    except VersionError as exc:
        raise RedistError(str(exc)) from None
    if len(parsed.parts) < 3:
        raise RedistError(f"{var}: {version!r} needs at least X.Y.Z (e.g. 9.14.0 or 9.14.0.64)")
    release = ".".join(str(n) for n in parsed.parts[:3])
    full = str(parsed) if len(parsed.parts) == 4 else None
    return release, full


def _vkey(text):
    out = []
    for part in re.split(r"[.-]", str(text)):
        out.append(int(part) if part.isdigit() else 0)
    return tuple(out)


def parse_manifest(data, source="manifest"):
    """Validate a manifest (bytes, str or dict) and return it as a dict."""
    if isinstance(data, (bytes, bytearray)):
        data = data.decode("utf-8", "replace")
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise RedistError(f"{source} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise RedistError(f"{source} is not a redist manifest (a JSON object expected)")
    components = [k for k, v in data.items() if isinstance(v, dict) and "version" in v]
    if not components:
        raise RedistError(f"{source} lists no components (is it a redistrib_<version>.json?)")
    return data


def components(manifest):
    return sorted(k for k, v in manifest.items() if isinstance(v, dict) and "version" in v)


def _artifact_entry(entry, where):
    if not isinstance(entry, dict):
        raise RedistError(f"{where}: malformed entry")
    rel = entry.get("relative_path")
    sha = str(entry.get("sha256", "")).lower()
    if not rel or not _SHA256_RE.match(sha):
        raise RedistError(f"{where}: missing relative_path or sha256 in the manifest")
    try:
        size = int(entry.get("size", 0) or 0)
    except (TypeError, ValueError):
        size = 0
    return {"relative_path": rel, "sha256": sha, "size": size}


def select_artifacts(
    manifest, names, *, platform="linux-x86_64", cuda_variant=None, optional=(), source="manifest", var=None
):
    """The artifacts for ``names`` on ``platform`` (and ``cudaN`` variant where the component has one).

    Returns a list of dicts: component, version, relative_path, sha256, size. Raises RedistError naming
    what is missing and what the manifest offers. Names in ``optional`` are skipped when absent.
    """
    if platform not in PLATFORMS:
        raise RedistError("platform {!r} is not one of {}".format(platform, ", ".join(PLATFORMS)))
    available = components(manifest)
    label = manifest.get("release_label") or "?"
    out = []
    for name in names:
        comp = manifest.get(name)
        if not isinstance(comp, dict) or "version" not in comp:
            if name in optional:
                continue
            raise RedistError(
                "{}{} (release {}) has no component {!r}; it has: {}".format(
                    (var + ": ") if var else "", source, label, name, ", ".join(available)
                )
            )
        plat = comp.get(platform)
        if not isinstance(plat, dict):
            plats = sorted(k for k, v in comp.items() if isinstance(v, dict) and k not in ("source",))
            raise RedistError(
                "{} {} has no {} build; it has: {}".format(name, comp["version"], platform, ", ".join(plats))
            )
        variants = [str(v) for v in comp.get("cuda_variant") or []]
        if "relative_path" in plat:
            entry = _artifact_entry(plat, "{} {} {}".format(name, comp["version"], platform))
        else:
            keys = sorted(k for k in plat if k.startswith("cuda"))
            if cuda_variant is None:
                raise RedistError(
                    "{} {} comes per CUDA major ({}): a CUDA major is needed".format(
                        name, comp["version"], ", ".join(keys)
                    )
                )
            key = f"cuda{cuda_variant}"
            if key not in plat:
                raise RedistError(
                    "{}{} {} has no build for CUDA {} on {}; it is built for CUDA {}".format(
                        (var + ": ") if var else "",
                        name,
                        comp["version"],
                        cuda_variant,
                        platform,
                        ", ".join(variants or [k[4:] for k in keys]),
                    )
                )
            entry = _artifact_entry(plat[key], "{} {} {} {}".format(name, comp["version"], platform, key))
        entry["component"] = name
        entry["version"] = str(comp["version"])
        out.append(entry)
    return out


# ---------------------------------------------------------------------------------------------------
# fetching
# ---------------------------------------------------------------------------------------------------
def is_local(location):
    return location.startswith(("/", "file://"))


def _local_path(location):
    return location[len("file://") :] if location.startswith("file://") else location


def fetch_bytes(url, timeout=30):
    """Small documents (manifests): returns bytes or raises RedistError."""
    if is_local(url):
        try:
            with open(_local_path(url), "rb") as handle:
                return handle.read()
        except OSError as exc:
            raise RedistError(f"cannot read {url}: {exc.strerror or exc}") from None
    try:
        with urlopen(Request(url, headers={"User-Agent": "gpufleet"}), timeout=timeout) as resp:
            return resp.read()
    except HTTPError as exc:
        raise RedistError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (URLError, OSError, socket.timeout) as exc:
        raise RedistError("{}: {}".format(url, getattr(exc, "reason", None) or exc)) from None


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_local(location, sha256, size=0):
    """A local archive (controller cache copied to the host): check it in place, return its path."""
    path = _local_path(location)
    if not os.path.isfile(path):
        raise RedistError(f"{path} is missing (was the controller cache copied?)")
    actual_size = os.path.getsize(path)
    if size and actual_size != size:
        raise RedistError(f"{path} is truncated or oversized: {actual_size} bytes, manifest says {size}")
    actual = sha256_file(path)
    if actual != sha256:
        raise RedistError(f"sha256 mismatch for {path}: got {actual}, manifest says {sha256}")
    return path


def fetch_verified(url, dest, sha256, *, size=0, timeout=60, retries=1):
    """Download ``url`` to ``dest`` (atomically, via ``dest.part``) and check sha256 and size.

    An existing ``dest`` with the right sha256 is reused (returns False); a download returns True.
    Any failure removes the partial file and raises RedistError with the reason.
    """
    if os.path.isfile(dest) and sha256_file(dest) == sha256:
        return False
    parent = os.path.dirname(dest) or "."
    os.makedirs(parent, exist_ok=True)
    part = f"{dest}.part"
    last = None
    for attempt in range(retries + 1):
        try:
            _download(url, part, sha256, size=size, timeout=timeout)
            os.replace(part, dest)
            return True
        except RedistError as exc:
            last = exc
            _unlink(part)
            if "sha256 mismatch" in str(exc):
                break  # the server has a wrong file: retrying will not help
            if attempt < retries:
                time.sleep(1)
    raise last


def _download(url, part, sha256, *, size, timeout):
    digest = hashlib.sha256()
    got = 0
    try:
        location = "file://" + _local_path(url) if is_local(url) else url
        src = urlopen(Request(location, headers={"User-Agent": "gpufleet"}), timeout=timeout)
        with src, open(part, "wb") as out:
            for block in iter(lambda: src.read(_CHUNK), b""):
                digest.update(block)
                out.write(block)
                got += len(block)
            out.flush()
            os.fsync(out.fileno())
    except HTTPError as exc:
        raise RedistError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (URLError, OSError, socket.timeout, ValueError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or exc
        raise RedistError(f"download of {url} failed after {got} bytes: {reason}") from None
    except Exception as exc:  # http.client.IncompleteRead and friends
        raise RedistError(f"download of {url} failed after {got} bytes: {exc!r}") from None
    if size and got != size:
        raise RedistError(f"download of {url} is truncated or oversized: {got} bytes, manifest says {size}")
    actual = digest.hexdigest()
    if actual != sha256:
        raise RedistError(f"sha256 mismatch for {url}: got {actual}, manifest says {sha256}")


def _unlink(path):
    try:
        os.unlink(path)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise


# ---------------------------------------------------------------------------------------------------
# installing
# ---------------------------------------------------------------------------------------------------
def read_marker(dest):
    try:
        with open(os.path.join(dest, MARKER)) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def marker_for(artifacts):
    return {
        "artifacts": [
            {"component": a["component"], "version": a["version"], "sha256": a["sha256"]}
            for a in sorted(artifacts, key=lambda a: a["component"])
        ]
    }


def is_installed(dest, artifacts):
    marker = read_marker(dest)
    return marker is not None and marker.get("artifacts") == marker_for(artifacts)["artifacts"]


def _safe_members(tar, strip):
    for member in tar.getmembers():
        parts = [p for p in member.name.split("/") if p not in ("", ".")]
        if len(parts) <= strip:
            continue
        parts = parts[strip:]
        if ".." in parts or member.name.startswith("/"):
            raise RedistError(f"archive member {member.name!r} escapes the install directory")
        if member.islnk():
            raise RedistError(
                f"archive member {member.name!r} is a hard link (not expected in a redist archive)"
            )
        if member.issym():
            # relative links inside the tree are fine (libfoo.so -> libfoo.so.9); nothing outside it
            resolved = os.path.normpath(os.path.join(os.path.dirname("/".join(parts)), member.linkname))
            if member.linkname.startswith("/") or resolved == ".." or resolved.startswith("../"):
                raise RedistError(
                    f"archive link {member.name!r} -> {member.linkname!r} leaves the install directory"
                )
        if not (member.isfile() or member.isdir() or member.issym()):
            continue
        member.name = "/".join(parts)
        member.uid = member.gid = 0
        member.uname = member.gname = "root"
        member.mode &= 0o755
        yield member


def unpack(archive, into, strip=1):
    """Merge ``archive`` (a redist .tar.xz whose top directory is stripped) into ``into``."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = list(_safe_members(tar, strip))
            kwargs = {"filter": "fully_trusted"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(into, members=members, **kwargs)  # members sanitised above
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise RedistError(f"cannot unpack {os.path.basename(archive)}: {exc}") from None


def cleanup_stale(dest):
    """Remove staging/retired trees left by an interrupted run next to ``dest``. Returns their paths."""
    parent, base = os.path.split(dest.rstrip("/"))
    removed = []
    if not os.path.isdir(parent):
        return removed
    for name in os.listdir(parent):
        if name.startswith((base + STAGING_TAG, base + RETIRED_TAG)):
            path = os.path.join(parent, name)
            shutil.rmtree(path, ignore_errors=False)
            removed.append(path)
    return removed


def install_tree(dest, archives, artifacts, lib64_link=False, hook=None):
    """Unpack ``archives`` (paths, verified) into a staging tree, then rename it onto ``dest``.

    A kill at any point leaves ``dest`` as it was (or, in the instant between the two renames of a
    replacement, a retired copy that ``cleanup_stale`` removes on the next run). ``hook(stage)`` is
    called after each archive (tests use it to interrupt).
    """
    dest = dest.rstrip("/")
    parent = os.path.dirname(dest)
    os.makedirs(parent, exist_ok=True)
    stage = f"{dest}{STAGING_TAG}{os.getpid()}"
    if os.path.lexists(stage):
        shutil.rmtree(stage)
    os.makedirs(stage, 0o755)
    try:
        for archive in archives:
            unpack(archive, stage)
            if hook:
                hook(stage)
        if (
            lib64_link
            and os.path.isdir(os.path.join(stage, "lib"))
            and not os.path.lexists(os.path.join(stage, "lib64"))
        ):
            os.symlink("lib", os.path.join(stage, "lib64"))
        with open(os.path.join(stage, MARKER), "w") as handle:
            json.dump(marker_for(artifacts), handle, indent=1, sort_keys=True)
        os.chmod(stage, 0o755)
        if os.path.lexists(dest):
            retired = f"{dest}{RETIRED_TAG}{os.getpid()}"
            os.rename(dest, retired)
            os.rename(stage, dest)
            shutil.rmtree(retired)
        else:
            os.rename(stage, dest)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    _fsync_dir(parent)


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def switch_link(link, target):
    """Point symlink ``link`` at ``target`` atomically (temp symlink, then rename). Returns changed."""
    if os.path.islink(link) and os.readlink(link) == target:
        return False
    if os.path.lexists(link) and not os.path.islink(link):
        raise RedistError(f"{link} exists and is not a symlink; refusing to replace it")
    tmp = f"{link}.gpufleet-tmp-{os.getpid()}"
    _unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, link)
    _fsync_dir(os.path.dirname(link) or ".")
    return True


def prune_plan(parent, pattern, keep, protect):
    """Trees in ``parent`` matching ``pattern`` beyond the ``keep`` newest (by version), never ``protect``."""
    if keep is None or keep < 0 or not os.path.isdir(parent):
        return []
    rx = re.compile(pattern)
    protect = {os.path.realpath(p) for p in protect if p}
    trees = []
    for name in os.listdir(parent):
        path = os.path.join(parent, name)
        if (
            rx.match(name)
            and os.path.isdir(path)
            and not os.path.islink(path)
            and read_marker(path) is not None
        ):
            trees.append(path)
    trees.sort(key=lambda p: _vkey(os.path.basename(p).split("-cuda")[0]), reverse=True)
    victims = []
    kept = 0
    for path in trees:
        if os.path.realpath(path) in protect:
            continue
        if kept < keep:
            kept += 1
            continue
        victims.append(path)
    return victims
