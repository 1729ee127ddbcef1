# Copyright: gpufleet contributors
# Apache-2.0
"""Shared helpers of the host probes: a filesystem `root`, safe reads, commands, isolated calls.

Stdlib only, Python >= 3.9. Probes observe and never raise for what they observe: every helper here
returns ``(value, reason)`` where ``reason`` is None on success and a one-line explanation otherwise.
Tests monkeypatch :func:`open_file`, :func:`scandir` and :func:`run_command` to simulate unreadable files,
unreadable directories and missing or misbehaving commands (tests run as root, where chmod 000
blocks nothing).
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import os
import select
import signal
import subprocess
import time

SCHEMA_VERSION = 2
UNKNOWN = "unknown"
C_ENV = {"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C"}
MAX_READ = 4 * 1024 * 1024


def open_file(path, mode="rb"):
    """The one place probes open files (monkeypatched by tests)."""
    return open(path, mode)


def scandir(path):
    """The one place probes list directories (monkeypatched by tests)."""
    return os.scandir(path)


def describe_error(exc):
    """A short, stable text for an exception."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror if not exc.filename else f"{exc.filename}: {exc.strerror}"
    text = str(exc).strip().splitlines()
    return "{}: {}".format(type(exc).__name__, text[0] if text else "")


class Root:
    """A filesystem tree seen as `/` (the live system or an image/chroot).

    Paths given to and returned by this class are *inner* paths (absolute, as seen inside the root).
    """

    def __init__(self, root="/"):
        self.root = os.path.abspath(root or "/")
        self.is_slash = self.root == "/"

    def outer(self, inner):
        """The path on this machine of an inner path."""
        if self.is_slash:
            return inner
        return os.path.join(self.root, inner.lstrip("/"))

    def inner(self, outer):
        if self.is_slash:
            return outer
        rel = os.path.relpath(outer, self.root)
        return "/" if rel == "." else "/" + rel

    def exists(self, inner):
        return os.path.lexists(self.outer(inner))

    def isdir(self, inner):
        return os.path.isdir(self.outer(inner))

    def isfile(self, inner):
        return os.path.isfile(self.outer(inner))

    def islink(self, inner):
        return os.path.islink(self.outer(inner))

    def readlink(self, inner):
        try:
            return os.readlink(self.outer(inner))
        except OSError:
            return None

    def read_bytes(self, inner, limit=MAX_READ):
        path = inner
        if not self.is_slash:
            path, reason = self.realpath(inner)  # absolute link targets stay inside the root
            if reason:
                return None, f"cannot read {inner}: {reason}"
        try:
            with open_file(self.outer(path), "rb") as handle:
                return handle.read(limit), None
        except OSError as exc:
            return None, f"cannot read {inner}: {exc.strerror or exc}"
        except Exception as exc:  # a probe never raises for what it observes
            return None, f"cannot read {inner}: {describe_error(exc)}"

    def read_text(self, inner, limit=MAX_READ):
        data, reason = self.read_bytes(inner, limit)
        if data is None:
            return None, reason
        return data.decode("utf-8", "replace"), None

    def mtime(self, inner):
        """(modification time in epoch seconds, None) of a file (links followed inside the root), or
        (None, reason)."""
        path, reason = self.realpath(inner) if not self.is_slash else (inner, None)
        if reason:
            return None, f"cannot stat {inner}: {reason}"
        try:
            return os.stat(self.outer(path)).st_mtime, None
        except OSError as exc:
            return None, f"cannot stat {inner}: {exc.strerror or exc}"

    def listdir(self, inner):
        """Sorted entry names of a directory, or (None, reason)."""
        try:
            with scandir(self.outer(inner)) as entries:
                return sorted(entry.name for entry in entries), None
        except OSError as exc:
            return None, f"cannot list {inner}: {exc.strerror or exc}"

    def realpath(self, inner, max_links=40):
        """Resolve symlinks with chroot semantics (absolute targets stay inside the root).

        Returns (inner_realpath, reason); reason is set for a broken link or a loop (the path returned is
        then the last one reached).
        """
        parts = [p for p in inner.split("/") if p]
        resolved = "/"
        links = 0
        while parts:
            part = parts.pop(0)
            if part == ".":
                continue
            if part == "..":
                resolved = os.path.dirname(resolved) or "/"
                continue
            candidate = os.path.join(resolved, part)
            outer = self.outer(candidate)
            if os.path.islink(outer):
                links += 1
                if links > max_links:
                    return candidate, f"symlink loop at {candidate}"
                target = self.readlink(candidate) or ""
                if target.startswith("/"):
                    resolved = "/"
                parts = [p for p in target.split("/") if p] + parts
                continue
            if not os.path.lexists(outer):
                rest = "/".join([part, *parts])
                return os.path.join(resolved, rest), f"{candidate} does not exist"
            resolved = candidate
        return resolved, None


MAX_ENTRIES = 20000


def bounded_names(root, inner, limit=MAX_ENTRIES):
    """(sorted names, reason) of at most ``limit`` entries of a directory; the reason also says when the
    directory had more (a million-file site-packages is not read to its end)."""
    names = []
    try:
        with scandir(root.outer(inner)) as entries:
            for entry in entries:
                if len(names) >= limit:
                    return sorted(names), f"{inner} has more than {limit} entries: only {limit} were read"
                names.append(entry.name)
    except OSError as exc:
        return None, f"cannot list {inner}: {exc.strerror or exc}"
    return sorted(names), None


def run_command(argv, timeout=10.0, env=None):
    """Run a command with LC_ALL=C. Returns (rc, stdout, stderr, reason); rc None when it did not run."""
    full_env = dict(os.environ)
    full_env.update(C_ENV)
    if env:
        full_env.update(env)
    try:
        proc = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=full_env,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        return None, "", "", f"{argv[0]}: command not found"
    except subprocess.TimeoutExpired:
        return None, "", "", f"{argv[0]} timed out after {timeout}s"
    except OSError as exc:
        return None, "", "", f"{argv[0]}: {describe_error(exc)}"
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    reason = None
    if proc.returncode != 0:
        first = (err.strip() or out.strip()).splitlines()
        reason = "{} exited {}{}".format(argv[0], proc.returncode, (": " + first[0][:200]) if first else "")
    return proc.returncode, out, err, reason


def which(name, root=None):
    """First executable `name` on a standard PATH (inside `root` when given)."""
    for directory in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        path = os.path.join(directory, name)
        outer = root.outer(path) if root is not None else path
        if os.path.isfile(outer) and os.access(outer, os.X_OK):
            return outer
    return None


def _run_child(func, args, pipes):
    """In the forked child: run ``func``, write its JSON result to the result pipe, exit (never returns)."""
    res_r, res_w, err_r, err_w = pipes
    code = 0
    try:
        os.close(res_r)
        os.close(err_r)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(err_w, 2)
        faulthandler.disable()  # a crash must not dump through the parent's traceback handler
        payload = json.dumps({"ok": func(*args)})
    except BaseException as exc:  # report, never propagate out of the child
        payload = json.dumps({"error": describe_error(exc)})
        code = 1
    try:
        data = payload.encode("utf-8")
        while data:
            data = data[os.write(res_w, data) :]
    finally:
        os._exit(code)


def _collect(pid, res_r, err_r, timeout):
    """({result, stderr} bytes, wait status, timed out): read both pipes until closed or timeout; reap."""
    chunks = {res_r: [], err_r: []}
    deadline = time.monotonic() + timeout
    open_fds = [res_r, err_r]
    timed_out = False
    try:
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _writable, _exceptional = select.select(open_fds, [], [], left)
            for fd in ready:
                data = os.read(fd, 65536)
                if not data:
                    open_fds.remove(fd)
                elif sum(len(c) for c in chunks[fd]) < MAX_READ:
                    chunks[fd].append(data)
    finally:
        if timed_out:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _pid, status = os.waitpid(pid, 0)
        os.close(res_r)
        os.close(err_r)
    return {"result": b"".join(chunks[res_r]), "stderr": b"".join(chunks[err_r])}, status, timed_out


def _child_outcome(output, status):
    """(result, reason) from what the child wrote and how it ended."""
    stderr = output["stderr"].decode("utf-8", "replace").strip()
    detail = (": " + stderr.splitlines()[-1][:200]) if stderr else ""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signame = signal.Signals(sig).name
        except ValueError:
            signame = str(sig)
        return None, f"crashed with {signame}{detail}"
    try:
        message = json.loads(output["result"].decode("utf-8", "replace"))
    except ValueError:
        return None, f"no result (exit status {os.WEXITSTATUS(status)}){detail}"
    if "error" in message:
        return None, message["error"]
    return message.get("ok"), None


def run_isolated(func, args=(), timeout=10.0):
    """Call ``func(*args)`` in a forked child; a crash, abort or hang there cannot hurt the caller.

    ``func`` returns something JSON-serializable. Returns (result, reason). Used for every ctypes load of
    vendor libraries (libcudnn, libcuda, libnvidia-ml): cheap (a fork, no interpreter start-up).
    """
    try:
        res_r, res_w = os.pipe()
        err_r, err_w = os.pipe()
    except OSError as exc:
        return None, f"cannot create pipes: {describe_error(exc)}"
    try:
        pid = os.fork()
    except OSError as exc:
        for fd in (res_r, res_w, err_r, err_w):
            os.close(fd)
        return None, f"cannot fork: {describe_error(exc)}"
    if pid == 0:  # child
        _run_child(func, args, (res_r, res_w, err_r, err_w))
    os.close(res_w)
    os.close(err_w)
    output, status, timed_out = _collect(pid, res_r, err_r, timeout)
    if timed_out:
        return None, f"timed out after {timeout}s"
    return _child_outcome(output, status)


def new_probe_state(state="ok", reason=None):
    return {"state": state, "reason": reason, "elapsed_ms": 0}


def version_tuple(text):
    """(9, 14, 0) from "9.14.0"; None when not a dotted version."""
    try:
        return tuple(int(p) for p in str(text).split("."))
    except (TypeError, ValueError):
        return None
