# Copyright: gpufleet contributors
# Apache-2.0
"""A Prometheus text file for node_exporter's textfile collector, written on the target atomically.

Stdlib only, Python >= 3.9; runs on targets inside the ``nvidia_textfile`` module. The collector reads every
``*.prom`` file of its directory (``--collector.textfile.directory``) at each scrape, so a file must appear
whole: the text goes to a temporary file in the same directory whose name does not end in ``.prom``
(``.gpufleet.prom.<random>.tmp``, never read by the collector), is flushed to disk, then renamed onto the file
(an atomic replace on one filesystem), as node_exporter's documentation asks (write ``x.prom.$$``, then
``mv``). What the file holds is decided on the controller (report.build.render_prometheus of this host).
"""

from __future__ import annotations

import os
import tempfile

TEMP_SUFFIX = ".tmp"


class TextfileError(ValueError):
    """A clear one-line reason (the module puts the variable's name in front)."""


def check_target(directory, name):
    """The file's path in ``directory``; TextfileError when the directory is not there or the name is not a
    plain ``*.prom`` file name (the collector reads only those)."""
    if not os.path.isabs(directory):
        raise TextfileError(f"{directory!r} is not an absolute path")
    if not os.path.isdir(directory):
        raise TextfileError(
            f"{directory} is not a directory on this host (create it, or give node_exporter's "
            "--collector.textfile.directory)"
        )
    if os.sep in name or not name.endswith(".prom") or name.startswith("."):
        raise TextfileError(f"{name!r} is not a file name ending in .prom")
    return os.path.join(directory, name)


def same_content(path, content):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read() == content
    except (OSError, UnicodeDecodeError):
        return False


def write_atomic(path, content, mode=0o644):
    """Write ``content`` to ``path``: temporary file beside it (not ``*.prom``), fsync, chmod, rename."""
    directory, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def put(directory, name, content, mode=0o644, check_mode=False):
    """(changed, path): write the file unless it already holds ``content`` (nothing written in check mode)."""
    path = check_target(directory, name)
    if same_content(path, content):
        return False, path
    if not check_mode:
        try:
            write_atomic(path, content, mode)
        except OSError as exc:
            raise TextfileError(f"cannot write {path}: {exc.strerror or exc}") from None
    return True, path
