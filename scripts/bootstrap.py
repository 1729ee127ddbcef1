#!/usr/bin/env python3
"""Create the project's toolchain in one step: .venv + project-local collections.

- .venv holds the pinned dev toolchain (requirements/dev.lock, generated from pyproject's pins);
  it is rebuilt only when those pins change.
- .collections/ansible_collections holds the collections the tests need, unpacked from the
  `ansible` wheel on PyPI (Galaxy is not reachable everywhere), and a link gpufleet/nvidia ->
  this tree, so `gpufleet.nvidia.<name>` resolves while working in the checkout.

Idempotent and quick when nothing changed. Stdlib only: runs with any python3 >= 3.11.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
COLLECTIONS = ROOT / ".collections" / "ansible_collections"
LOCK = ROOT / "requirements" / "dev.lock"
CACHE = Path(os.environ.get("GPUFLEET_CACHE", Path.home() / ".cache" / "gpufleet"))


def say(msg: str) -> None:
    print(f"bootstrap: {msg}", flush=True)


def fail(msg: str) -> None:
    print(f"bootstrap: error: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, check=False)
    if proc.returncode != 0:
        fail(f"command failed ({proc.returncode}): {' '.join(cmd)}")


def ensure_venv() -> None:
    stamp = VENV / ".gpufleet-stamp"
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    want = hashlib.sha256(LOCK.read_bytes() + "\n".join(pins).encode()).hexdigest()
    if stamp.is_file() and stamp.read_text().strip() == want and (VENV / "bin" / "ansible").exists():
        say(".venv is up to date")
        return
    if VENV.exists():
        shutil.rmtree(VENV)
    say("creating .venv (pinned toolchain)")
    run([sys.executable, "-m", "venv", str(VENV)])
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
    run([*pip, "install", "--upgrade", "pip"])
    run([*pip, "install", "-r", str(LOCK)])
    stamp.write_text(want + "\n")


def ensure_collections() -> None:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["gpufleet"]["collections"]
    spec, names = cfg["ansible_wheel"], cfg["names"]
    stamp = COLLECTIONS / ".gpufleet-stamp"
    want = f"{spec} {' '.join(sorted(names))}"
    if not (stamp.is_file() and stamp.read_text().strip() == want):
        wheels = CACHE / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        name, version = spec.split("==")
        found = sorted(wheels.glob(f"{name}-{version}-py3-none-any.whl"))
        if not found:
            say(f"downloading {spec} (for its collections only)")
            run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--disable-pip-version-check",
                    "--no-deps",
                    "--only-binary=:all:",
                    "-d",
                    str(wheels),
                    spec,
                ]
            )
            found = sorted(wheels.glob(f"{name}-{version}-py3-none-any.whl"))
        if not found:
            fail(f"pip did not produce the wheel for {spec} in {wheels}")
        prefixes = [f"ansible_collections/{n.replace('.', '/')}/" for n in names]
        for n in names:
            shutil.rmtree(COLLECTIONS / n.replace(".", "/"), ignore_errors=True)
        with zipfile.ZipFile(found[0]) as zf:
            members = [m for m in zf.namelist() if m.startswith(tuple(prefixes))]
            if not members:
                fail(f"{found[0].name} holds none of {names}")
            for m in members:
                zf.extract(m, COLLECTIONS.parent)
        stamp.write_text(want + "\n")
        say(f"unpacked {', '.join(names)} from {found[0].name}")
    else:
        say("collections are up to date")
    link = COLLECTIONS / "gpufleet" / "nvidia"
    link.parent.mkdir(parents=True, exist_ok=True)
    target = os.path.relpath(ROOT, link.parent)
    if not (link.is_symlink() and os.readlink(link) == target):
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)


def main() -> None:
    what = sys.argv[1:] or ["venv", "collections"]
    if "venv" in what:
        ensure_venv()
    if "collections" in what:
        ensure_collections()


if __name__ == "__main__":
    main()
