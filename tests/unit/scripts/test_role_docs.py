"""roles/*/README.md: the variable tables are scripts/role_docs.py's output for meta/argument_specs.yml.

And ansible-doc -t role shows every role's entry points with a short and a long description.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLES = sorted(p.parent.parent.name for p in (ROOT / "roles").glob("*/meta/argument_specs.yml"))
ENV = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".collections"), "ANSIBLE_NOCOLOR": "1"}

_spec = importlib.util.spec_from_file_location("role_docs", ROOT / "scripts" / "role_docs.py")
role_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(role_docs)


def _specs(role):
    return yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())[
        "argument_specs"
    ]


def test_every_role_has_argument_specs():
    assert ROLES == ["cuda_toolkit", "cudnn", "internal", "nvidia_driver"]


@pytest.mark.parametrize("role", ROLES)
def test_readme_variables_are_generated_from_argument_specs(role):
    """Edit meta/argument_specs.yml, then run scripts/role_docs.py; never the table in the README."""
    readme = (ROOT / "roles" / role / "README.md").read_text()
    expected = role_docs.update(readme, role_docs.render(ROOT / "roles" / role), role)
    assert readme == expected, f"roles/{role}/README.md is out of date: run scripts/role_docs.py"


@pytest.mark.parametrize("role", ROLES)
def test_readme_has_one_row_per_variable_and_no_other(role):
    readme = (ROOT / "roles" / role / "README.md").read_text()
    generated = readme[readme.index(role_docs.BEGIN) : readme.index(role_docs.END)]
    rows = [
        line.split("|")[1].strip().strip("`") for line in generated.splitlines() if line.startswith("| `")
    ]
    options = [name for spec in _specs(role).values() for name in spec.get("options") or {}]
    assert rows == options
    outside = readme.replace(generated, "")
    assert [
        line for line in outside.splitlines() if line.startswith("| `") and "_" in line.split("|")[1]
    ] == []


def test_render_shows_type_default_choices_and_required(tmp_path):
    meta = tmp_path / "meta"
    meta.mkdir()
    spec = {
        "main": {
            "short_description": "Demo",
            "options": {
                "demo_mode": {
                    "description": ["Mode |", "here."],
                    "type": "str",
                    "default": "a",
                    "choices": ["a", "b"],
                },
                "demo_list": {"description": "L.", "type": "list", "elements": "dict", "default": []},
                "demo_name": {"description": "N.", "type": "str", "required": True},
            },
        },
        "other": {"short_description": "Nothing", "options": {}},
    }
    (meta / "argument_specs.yml").write_text(yaml.safe_dump({"argument_specs": spec}))
    out = role_docs.render(tmp_path).splitlines()
    assert "| `demo_mode` | str | `a` | Mode \\| here. Choices: `a`, `b`. |" in out
    assert "| `demo_list` | list of dict | `[]` | L. |" in out
    assert "| `demo_name` | str | (required) | N. |" in out
    assert out[out.index("### Entry point `other`") + 4] == "No variables."


def test_update_keeps_the_hand_written_text_and_needs_the_markers():
    text = f"# Role\nprose before\n{role_docs.BEGIN}\nold table\n{role_docs.END}\nprose after\n"
    new = f"{role_docs.BEGIN}\nnew table\n{role_docs.END}"
    assert role_docs.update(text, new, "x") == f"# Role\nprose before\n{new}\nprose after\n"
    with pytest.raises(SystemExit, match="marker"):
        role_docs.update("# Role\nno markers\n", new, "x")


def test_check_mode_fails_on_a_stale_readme(tmp_path, monkeypatch, capsys):
    role = tmp_path / "roles" / "demo"
    (role / "meta").mkdir(parents=True)
    (role / "meta" / "argument_specs.yml").write_text(
        yaml.safe_dump({"argument_specs": {"main": {"short_description": "D", "options": {}}}})
    )
    readme = role / "README.md"
    readme.write_text(f"# demo\n{role_docs.BEGIN}\nhand-edited\n{role_docs.END}\n")
    monkeypatch.setattr(role_docs, "ROOT", tmp_path)
    monkeypatch.setattr(role_docs, "ROLES", tmp_path / "roles")
    assert role_docs.main(["--check"]) == 1
    assert "roles/demo/README.md" in capsys.readouterr().err
    assert role_docs.main([]) == 0
    assert role_docs.main(["--check"]) == 0
    assert "No variables." in readme.read_text()


def _ansible_doc(*args):
    run = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-doc"), "-t", "role", "--json", *args],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_ansible_doc_lists_every_role_and_entry_point():
    listed = _ansible_doc("--list", "gpufleet.nvidia")
    assert sorted(listed) == [f"gpufleet.nvidia.{role}" for role in ROLES]
    for role in ROLES:
        entry_points = listed[f"gpufleet.nvidia.{role}"]["entry_points"]
        assert sorted(entry_points) == sorted(_specs(role)), role
        assert all(entry_points.values()), role


def test_ansible_doc_shows_every_entry_point_with_descriptions_and_options():
    docs = _ansible_doc(*(f"gpufleet.nvidia.{role}" for role in ROLES))
    for role in ROLES:
        entry_points = docs[f"gpufleet.nvidia.{role}"]["entry_points"]
        for name, spec in _specs(role).items():
            shown = entry_points[name]
            assert shown["short_description"], (role, name)
            assert shown["description"], (role, name)
            assert sorted(shown.get("options") or {}) == sorted(spec.get("options") or {}), (role, name)
            assert all(opt["description"] for opt in (shown.get("options") or {}).values()), (role, name)
