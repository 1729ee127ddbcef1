"""Make `ansible_collections.gpufleet.nvidia` and the test helpers (tests.data) importable from the checkout,
as tests/unit/conftest.py does (the fake root trees of tests/data/facts/fakeroot.py build loader caches)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT / ".collections", ROOT):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
