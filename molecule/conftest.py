"""Loaded by pytest for every scenario's testinfra tests (molecule/*/tests, below the rootdir's
pyproject.toml): puts tests/ on sys.path, so that they import the shared helpers from testinfra_helpers
(pytest's importlib import mode, pyproject.toml's addopts, adds no test folder to sys.path)."""

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parents[1] / "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
