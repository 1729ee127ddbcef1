"""inventory/example: every variable its group_vars set is one the roles or Ansible know, and the login group
gets the CUDA toolkit only (issue 37: its comment said so, nothing enforced it)."""

from pathlib import Path

import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles

from tests.data.roles import variables

ROOT = Path(__file__).resolve().parents[3]
GROUP_VARS = ROOT / "inventory" / "example" / "group_vars"


def group(name):
    return yaml.safe_load((GROUP_VARS / f"{name}.yml").read_text()) or {}


def test_every_variable_is_a_role_variable_or_ansibles():
    known = {name for role in roles.ROLES for name in variables(role)}
    for path in sorted(GROUP_VARS.glob("*.yml")):
        for name in yaml.safe_load(path.read_text()) or {}:
            assert name in known or name.startswith("ansible_"), (path.name, name)


def test_the_login_group_gets_the_toolkit_only():
    login = group("login")
    assert login["nvidia_driver_enabled"] is False
    assert login["cudnn_enabled"] is False
    assert login.get("cuda_toolkit_enabled", True) is True
    plans = {
        role: roles.plan(role, variables(role, **login), {"gpus": []})[0]
        for role in ("nvidia_driver", "cudnn")
    }
    assert [plan["enabled"] for plan in plans.values()] == [False, False]
