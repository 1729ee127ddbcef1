"""One declaration per role variable: its default lives in the role's defaults/main.yml and is documented in
meta/argument_specs.yml (tied by tests/unit/roles/test_provisioning_roles_specs.py) and the README generated
from them. Nothing else may restate it: no module option, no request-defaults table, no `.get(name, default)`
fallback and no `| default(...)` in a task or playbook. (The bug: cudnn_version's default was written in five
places, the driver's defaults again in plan/driver.py REQUEST_DEFAULTS; both gone.)

The plan action reads the defaults file itself (plugins/action/nvidia_plan.py), so plan/ always receives every
variable and needs no fallback of its own.
"""

import ast
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
ROLES = {"nvidia_driver": "nvidia_driver_", "cuda_toolkit": "cuda_toolkit_", "cudnn": "cudnn_"}


def role_defaults():
    """[(variable, its name without the role prefix, default)] of the provisioning roles."""
    out = []
    for role, prefix in ROLES.items():
        for name, value in yaml.safe_load((ROOT / "roles" / role / "defaults/main.yml").read_text()).items():
            out.append((name, name[len(prefix) :], value))
    return out


DEFAULTS = role_defaults()
TRIVIAL = (None, "", True, False)
# A variable's full name anywhere in plugins/; its short name (a plan request's key) in plan/ only, and only
# with a default that says something (an empty string or a boolean there is no restated decision).
FULL, SHORT = {}, {}
for _name, _short, _value in DEFAULTS:
    FULL.setdefault(_name, []).append(_value)
    if _value not in TRIVIAL and _value not in ([], {}):
        SHORT.setdefault(_short, []).append(_value)


def _literal(node):
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _same(value, default):
    return type(value) is type(default) and value == default


def _restates(names, name, node):
    """The node is a literal equal to a default of ``name`` (a role variable or its short name)."""
    ok, value = _literal(node)
    return ok and any(_same(value, d) for d in names.get(name, ()))


def names_for(path):
    """The names a file must not restate: full names everywhere, short names too in plan/."""
    return dict(FULL, **SHORT) if "module_utils/plan" in str(path) else FULL


def _dict_hits(names, node):
    for key, value in zip(node.keys, node.values):
        ok, name = _literal(key) if key is not None else (False, None)
        if not ok or not isinstance(name, str) or name not in names:
            continue
        if isinstance(value, ast.Dict):  # an argument spec entry: {"type": ..., "default": ...}
            spec = {k.value: v for k, v in zip(value.keys, value.values) if isinstance(k, ast.Constant)}
            if "default" in spec and _restates(names, name, spec["default"]):
                yield name
        elif _restates(names, name, value):
            yield name


REQUESTS = ("req", "request", "variables")


def _call_hits(names, node):
    """`<mapping>.get(name, default)`: a full name on any mapping, a short name on a request (REQUESTS)."""
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in ("get", "setdefault", "pop") and len(node.args) == 2:
        ok, name = _literal(node.args[0])
        on_request = isinstance(func.value, ast.Name) and func.value.id in REQUESTS
        if (
            ok
            and isinstance(name, str)
            and (name in FULL or on_request)
            and _restates(names, name, node.args[1])
        ):
            yield name


def python_hits(path, names=None):
    """'<file>:<line>: restates the default of <name>' for each restated default in a Python file."""
    names = names_for(path) if names is None else names
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        found = list(_dict_hits(names, node)) if isinstance(node, ast.Dict) else []
        found += list(_call_hits(names, node)) if isinstance(node, ast.Call) else []
        for name in found:
            yield (
                f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{node.lineno}: "
                f"restates the default of {name}"
            )


def _yaml_default_args(text):
    """(variable, literal text) of every `<variable> | default(<literal>)` in Jinja."""
    for match in re.finditer(r"\b([a-z][a-z0-9_]*)\s*\|\s*default\(\s*([^,)]+)", text):
        yield match.group(1), match.group(2).strip()


def yaml_hits(path):
    """'<file>: restates the default of <name> in Jinja' for each `<variable> | default(<its default>)`."""
    for name, arg in _yaml_default_args(path.read_text()):
        try:
            value = yaml.safe_load(arg)
        except yaml.YAMLError:
            continue
        if any(_same(value, d) for d in FULL.get(name, ())):
            yield f"{path.name}: restates the default of {name} in Jinja"


def project_files(pattern):
    skip = ("/.venv/", "/.collections/", "/.cache/", "/.lab/", "/tests/")
    return [p for p in sorted(ROOT.glob(pattern)) if not any(s in f"/{p.relative_to(ROOT)}" for s in skip)]


def test_the_scan_finds_what_it_looks_for(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        'A = {"cudnn_version": {"type": "str", "default": "9.14.0"}}\n'
        'B = {"branch": "580"}\n'
        'c = req.get("existing", "refuse")\n'
        'd = {"branch": "535"}\n'
    )
    found = [hit.split(": ", 1)[1] for hit in python_hits(sample, dict(FULL, **SHORT))]
    assert found == [
        "restates the default of cudnn_version",
        "restates the default of branch",
        "restates the default of existing",
    ]
    jinja = tmp_path / "play.yml"
    jinja.write_text(
        "x: \"{{ cudnn_version | default('9.14.0') }}\"\ny: \"{{ cudnn_version | default('9.1.0') }}\"\n"
    )
    assert len(list(yaml_hits(jinja))) == 1


@pytest.mark.parametrize("path", project_files("plugins/**/*.py"), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_python_restates_a_role_default(path):
    assert list(python_hits(path)) == []


@pytest.mark.parametrize(
    "path",
    [p for g in ("roles/*/tasks/*.yml", "roles/*/handlers/*.yml", "roles/*/vars/*.yml", "playbooks/*.yml")
     for p in project_files(g)],
    ids=lambda p: str(p.relative_to(ROOT)),
)  # fmt: skip
def test_no_task_or_playbook_restates_a_role_default(path):
    assert list(yaml_hits(path)) == []
