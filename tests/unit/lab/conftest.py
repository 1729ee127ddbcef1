"""Fixtures for the lab tests.

Tests marked `lab` need the built NVIDIA mirror (`python -m lab mirror build`, part of
`make lab`). They run whenever .lab/mirror holds manifests and skip with that reason
otherwise (a fresh checkout before `make lab`).
"""

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MIRROR = Path(os.environ.get("GPUFLEET_LAB_DIR") or ROOT / ".lab") / "mirror"


def _manifests(product):
    return sorted((MIRROR / product / "redist").glob("redistrib_*.json"))


@pytest.fixture(scope="session")
def mirror():
    """The mirror directory; the test skips (with the reason) when the mirror is not built."""
    if not _manifests("cuda") or not _manifests("cudnn"):
        pytest.skip(f"no NVIDIA mirror in {MIRROR}: run `make lab` (python -m lab up) to build it")
    return MIRROR


@pytest.fixture(scope="session")
def cudnn_manifests(mirror):
    return {p: json.loads(p.read_text(encoding="utf-8")) for p in _manifests("cudnn")}


@pytest.fixture(scope="session")
def cuda_manifests(mirror):
    return {p: json.loads(p.read_text(encoding="utf-8")) for p in _manifests("cuda")}
