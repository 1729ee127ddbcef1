# Copyright: gpufleet contributors
# Apache-2.0
"""NVIDIA redist archives: fetch verified, unpack to a staging tree, switch atomically, prune.

Stdlib, ``ansible.module_utils.urls`` (proxies from the environment, CA bundles, validate_certs as in
every Ansible module) and kb/gpufleet.py (the marker and backup tag), Python >= 3.9; runs on targets
inside the ``nvidia_redist`` module.
Which release and components is decided on the controller (``plan/redist.py``, the plans); the artifacts of
that release are read from its manifest by ``install/manifest.py``; this file executes: every byte is checked
against the manifest's sha256, every install is a rename of a complete tree.
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
from urllib.error import HTTPError, URLError

from ansible.module_utils.urls import ConnectionError as UrlConnectionError
from ansible.module_utils.urls import open_url
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpufleet import BACKUP_TAG, MARKER

STAGING_TAG = ".gpufleet-staging-"
RETIRED_TAG = ".gpufleet-retired-"
_CHUNK = 1 << 20


class RedistError(Exception):
    """A clear, one-line reason why a fetch or an install cannot proceed."""


# ---------------------------------------------------------------------------------------------------
# fetching
# ---------------------------------------------------------------------------------------------------
def is_local(location):
    return location.startswith(("/", "file://"))


def _local_path(location):
    return location[len("file://") :] if location.startswith("file://") else location


def _open(location, timeout, tls):
    """A response for ``location`` through open_url: the environment's proxies (http_proxy, https_proxy,
    no_proxy), ``tls`` = {validate_certs, ca_path}."""
    tls = tls or {}
    return open_url(
        location,
        http_agent="gpufleet",
        timeout=timeout,
        validate_certs=tls.get("validate_certs", True),
        ca_path=tls.get("ca_path"),
    )


def fetch_bytes(url, timeout=30, tls=None):
    """Small documents (manifests): returns bytes or raises RedistError."""
    if is_local(url):
        try:
            with open(_local_path(url), "rb") as handle:
                return handle.read()
        except OSError as exc:
            raise RedistError(f"cannot read {url}: {exc.strerror or exc}") from None
    try:
        with _open(url, timeout, tls) as resp:
            return resp.read()
    except HTTPError as exc:
        raise RedistError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (URLError, OSError, socket.timeout, UrlConnectionError) as exc:
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


def fetch_verified(url, dest, sha256, *, size=0, timeout=60, retries=1, tls=None):
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
            _download(url, part, sha256, size=size, timeout=timeout, tls=tls)
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


def _download(url, part, sha256, *, size, timeout, tls=None):
    digest = hashlib.sha256()
    got = 0
    try:
        location = "file://" + _local_path(url) if is_local(url) else url
        src = _open(location, timeout, tls)
        with src, open(part, "wb") as out:
            for block in iter(lambda: src.read(_CHUNK), b""):
                digest.update(block)
                out.write(block)
                got += len(block)
            out.flush()
            os.fsync(out.fileno())
    except HTTPError as exc:
        raise RedistError(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (URLError, OSError, socket.timeout, ValueError, UrlConnectionError) as exc:
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


def foreign(dest):
    """True when ``dest`` exists and is no tree gpufleet installed (no marker): gpufleet does not own it."""
    return os.path.lexists(dest) and read_marker(dest) is None


def backup_path(dest, stamp=None):
    """Where a foreign tree is moved aside to: ``<dest>.gpufleet-backup-<UTC time>`` (never deleted)."""
    stamp = stamp or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{dest.rstrip('/')}{BACKUP_TAG}{stamp}"


def _backup_or_refuse(dest, replace_foreign):
    """None for a missing or gpufleet-owned ``dest``; a backup path for a foreign one if asked."""
    if not foreign(dest):
        return None
    if not replace_foreign:
        raise RedistError(
            f"{dest} exists and gpufleet did not install it (no {MARKER}): gpufleet never replaces a tree "
            "it does not own; adopt it, move it away, or ask for a replacement with a backup"
        )
    return backup_path(dest)


def _relative_files(top):
    found = set()
    for parent, dirs, files in os.walk(top):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(parent, d))]:
            found.add(os.path.relpath(os.path.join(parent, name), top))
    return found


def added_files(old, new):
    """Files of gpufleet's old tree ``old`` that its new tree ``new`` does not have: put there by hand (a
    cuDNN copied into a toolkit, a site's file) or by an older release; kept, never deleted."""
    return sorted(_relative_files(old) - _relative_files(new) - {MARKER})


def _swap_in(stage, dest, backup):
    """Rename the staging tree onto ``dest``: a foreign tree goes to ``backup``; gpufleet's old one is
    removed, unless it holds files the new one lacks: then it is kept as a dated backup too.
    Returns the backup path (or None)."""
    if backup:
        os.rename(dest, backup)
        os.rename(stage, dest)
    elif os.path.lexists(dest):
        kept = added_files(dest, stage)
        retired = backup_path(dest) if kept else f"{dest}{RETIRED_TAG}{os.getpid()}"
        os.rename(dest, retired)
        os.rename(stage, dest)
        if not kept:
            shutil.rmtree(retired)
        return retired if kept else None
    else:
        os.rename(stage, dest)
    return backup


def install_tree(dest, archives, artifacts, lib64_link=False, *, hook=None, replace_foreign=False):
    """Unpack ``archives`` (paths, verified) into a staging tree, then rename it onto ``dest``.

    A kill at any point leaves ``dest`` as it was (or, in the instant between the two renames of a
    replacement, a retired copy that ``cleanup_stale`` removes on the next run). ``hook(stage)`` is
    called after each archive (tests use it to interrupt).

    Only a tree gpufleet installed (its marker) is replaced. A ``dest`` that gpufleet does not own is
    refused before anything is unpacked, unless ``replace_foreign``: then it is moved aside into a dated
    backup (``backup_path``), never deleted. gpufleet's own old tree is deleted, unless it holds files the
    new tree lacks (``added_files``): then it is kept as such a backup. Returns the backup path, or None.
    """
    dest = dest.rstrip("/")
    backup = _backup_or_refuse(dest, replace_foreign)
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
        backup = _swap_in(stage, dest, backup)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    _fsync_dir(parent)
    return backup


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


def _vkey(text):
    return tuple(int(part) if part.isdigit() else 0 for part in re.split(r"[.-]", str(text)))
