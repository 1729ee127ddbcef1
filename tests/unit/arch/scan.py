"""What the architecture tests read: the collection's plugin code (shared by test_import_direction.py and
test_one_reader.py)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCANNED = ("plugins/module_utils", "plugins/action", "plugins/filter", "plugins/modules")


def plugin_files():
    files = []
    for folder in SCANNED:
        files += sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)
    return files
