"""Functions in plugins/ stay short enough to read: at most 60 lines each (def line to last line).

Long rule engines and probes are split into named steps; ruff's too-many-branches/statements/returns rules
(pyproject.toml) hold the other half of this line.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MAX_LINES = 60
FILES = sorted(p for p in (ROOT / "plugins").rglob("*.py") if "__pycache__" not in p.parts)


def long_functions(path, limit=MAX_LINES, root=ROOT):
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > limit:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name}() is {length} lines")
    return found


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_functions_are_at_most_60_lines(path):
    assert long_functions(path) == []


def test_the_check_counts_lines(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n" + "    x = 1\n" * 60 + "\n\ndef g():\n    return 1\n")
    assert long_functions(source, root=tmp_path) == ["m.py:1 f() is 61 lines"]
