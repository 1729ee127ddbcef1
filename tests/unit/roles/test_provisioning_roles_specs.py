"""roles cuda_toolkit, cudnn, internal: meta/argument_specs.yml documents exactly defaults/main.yml."""

from pathlib import Path

import pytest
import yaml

ROLES = Path(__file__).resolve().parents[3] / "roles"
PREFIX = {"cuda_toolkit": "cuda_toolkit_", "cudnn": "cudnn_", "internal": "internal_"}


def load(role, rel):
    return yaml.safe_load((ROLES / role / rel).read_text())


def entry_options(role):
    """All options of all entry points (the internal role has one per tasks file)."""
    options = {}
    for spec in load(role, "meta/argument_specs.yml")["argument_specs"].values():
        options.update(spec.get("options") or {})
    return options


@pytest.mark.parametrize("role", sorted(PREFIX))
def test_argument_specs_equal_defaults(role):
    defaults = load(role, "defaults/main.yml")
    options = entry_options(role)
    assert sorted(options) == sorted(defaults)
    for name, spec in options.items():
        assert spec.get("default") == defaults[name], name
        assert spec.get("description"), name
        assert name.startswith(PREFIX[role]), name
        if "choices" in spec:
            assert spec["default"] in spec["choices"], name


def test_internal_entry_points_have_specs_and_a_guard():
    specs = load("internal", "meta/argument_specs.yml")["argument_specs"]
    assert sorted(specs) == ["controller_cache", "host_compiler", "main", "repository"]
    for entry in ("repository", "host_compiler", "controller_cache", "main"):
        first = load("internal", f"tasks/{entry}.yml")[0]
        assert first.get("ansible.builtin.import_tasks") == "guard.yml", entry
    guard = (ROLES / "internal" / "tasks" / "guard.yml").read_text()
    assert "ansible_parent_role_names" in guard


@pytest.mark.parametrize("role", sorted(PREFIX))
def test_internal_vars_are_prefixed(role):
    for path in sorted((ROLES / role / "vars").glob("*.yml")):
        for name in yaml.safe_load(path.read_text()) or {}:
            assert name.startswith("__" + PREFIX[role]), (path.name, name)


@pytest.mark.parametrize("role", ["cuda_toolkit", "cudnn"])
def test_main_reads_as_a_table_of_contents(role):
    names = [t["name"] for t in load(role, "tasks/main.yml")]
    assert names == ["Preflight", "Remove", "Sources", "Install", "Configure", "Verify"]


@pytest.mark.parametrize("role", sorted(PREFIX))
def test_readme_sections_in_order(role):
    text = (ROLES / role / "README.md").read_text()
    positions = [text.find(h) for h in ("## Requirements", "## Variables", "## Dependencies", "## Example")]
    assert all(p >= 0 for p in positions), positions
    assert positions == sorted(positions)
