"""Every module's DOCUMENTATION, EXAMPLES and RETURN is valid YAML. ansible-test sanity says the same, minutes
later in make test and not in make lint; a ": " inside a plain scalar (a description line) breaks the whole
block (nvidia_facts' timeout, 2026-12-03)."""

import ast
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[4]
MODULES = sorted((ROOT / "plugins/modules").glob("*.py"))


def _blocks(path):
    blocks = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("DOCUMENTATION", "EXAMPLES", "RETURN") and isinstance(node.value, ast.Constant):
                blocks[name] = node.value.value
    return blocks


@pytest.mark.parametrize("path", MODULES, ids=[p.stem for p in MODULES])
def test_doc_blocks_are_yaml(path):
    blocks = _blocks(path)
    assert set(blocks) == {"DOCUMENTATION", "EXAMPLES", "RETURN"}, path.name
    for name, text in blocks.items():
        try:
            yaml.safe_load(text)
        except yaml.YAMLError as exc:
            pytest.fail(f"{path.name} {name} is not valid YAML: {exc}")
    assert yaml.safe_load(blocks["DOCUMENTATION"])["module"] == path.stem
