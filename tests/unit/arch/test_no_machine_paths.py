"""The project names no path of a developer's machine and cites no file outside itself.

Raw device outputs under tests/gpu/evidence/ are scanned too: paths in them are written relative to the
checkout.
"""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# The forbidden prefixes, joined from their parts so that this file does not name them itself:
# the work directory, the shared folder beside the checkout, root's tool caches, the lead's scratch folder.
PARTS = (
    ("(?<![\\w.])", "/wo", "rk/"),
    ("\\.\\./sha", "red/"),
    ("/ro", "ot/\\.(pyenv|cache|ansible)/"),
    ("/tm", "p/gf/"),
)
MACHINE_PATH = re.compile("|".join("".join(p) for p in PARTS))
SKIP = ("tests/unit/arch/test_no_machine_paths.py",)


def tracked_files():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if not f.startswith(SKIP) and (ROOT / f).is_file()]


def test_no_machine_paths():
    found = []
    for name in tracked_files():
        try:
            text = (ROOT / name).read_text()
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if MACHINE_PATH.search(line):
                found.append(f"{name}:{number}: {line.strip()[:120]}")
    assert found == []
