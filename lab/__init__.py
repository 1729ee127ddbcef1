"""gpufleet lab: a local stand-in for a GPU fleet.

Docker engine, Debian base images built from the apt mirror this machine already
uses, an NVIDIA redist mirror built from NVIDIA's PyPI wheels, a mirror server on an
internal docker network, and SSH-reachable systemd hosts. Stdlib + docker SDK only.
"""

import contextlib
import fcntl
import os
import re
import shlex
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The lab's state (mirror, SSH key, inventory, logs); GPUFLEET_LAB_DIR moves it.
STATE = Path(os.environ.get("GPUFLEET_LAB_DIR") or ROOT / ".lab").resolve()
NETWORK = "gpufleet-lab"
MIRROR_CONTAINER = "gpufleet-mirror"
LABEL = "gpufleet.lab"


class LabError(Exception):
    """An error the user can fix: printed as one line, never as a traceback."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def locked(log=print):
    """One lab-changing command at a time on this checkout (several users may share it)."""
    return lock_file(STATE / "lab.lock", "lab", log)


@contextlib.contextmanager
def lock_file(path, who, log=print):
    """Hold an exclusive flock on ``path``; ``log`` says so when ``who``'s other command holds it first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            log(f"{who}: another {who} command is running; waiting for it")
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def run_checked(cmd, what):
    """Run ``cmd``, its output captured; a failure is a LabError naming ``what``, its exit and last line."""
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or res.stdout.strip().splitlines() or ["no output"])[-1]
        raise LabError(f"{what} failed (exit {res.returncode}): {last}")
    return res


def run_logged(cmd, out, logfile, what):
    """Run ``cmd`` with its output appended to ``out`` (the open ``logfile``), after the command line itself;
    a failure is a LabError that points at the log."""
    out.write(f"$ {shlex.join(cmd)}\n")
    out.flush()
    res = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, check=False)
    if res.returncode != 0:
        out.flush()
        raise LabError(f"{what} failed (exit {res.returncode}): see {logfile}")


def unmount_below(path, mounts="/proc/self/mounts"):
    """Lazily unmount every mount point at or below ``path``, deepest first, and return them: what an
    interrupted mmdebstrap leaves in its root (proc, sys, dev/pts, dev/shm) before that root is removed."""
    root = os.path.realpath(path)
    try:
        with open(mounts, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    points = set()
    for line in lines:
        fields = line.split()
        if len(fields) > 1:
            # /proc/mounts writes a space, tab, newline or backslash in a path as an octal escape
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
            if point == root or point.startswith(root + "/"):
                points.add(point)
    ordered = sorted(points, key=lambda p: (-p.count("/"), p))
    for point in ordered:
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    return ordered
