"""The roles' switches through the nvidia_plan action as Ansible runs it (issue 37): a role disabled for the
host is planned as "disabled", its other variables are typed by its spec (as Ansible does at the role's
entry) and not judged further, and nvidia_facts gathers only what the enabled roles need (nothing when none
is). A switch that is no boolean is refused naming it."""

from types import SimpleNamespace

import pytest
from ansible_collections.gpufleet.nvidia.plugins.action import nvidia_plan


class Gathered(Exception):
    """The stand-in nvidia_facts run: what it was asked for."""


def contact(**kwargs):
    raise Gathered(kwargs["module_args"])


def run(roles, **task_vars):
    task = SimpleNamespace(
        args={"role": list(roles)}, async_val=0, check_mode=True, action="gpufleet.nvidia.nvidia_plan"
    )
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent"), transport="ssh")
    templar = SimpleNamespace(template=lambda value: value)
    action = nvidia_plan.ActionModule(task, connection, None, None, templar, None)
    action._load_name = "gpufleet.nvidia.nvidia_plan"
    action._execute_module = contact
    return action.run(task_vars=dict(task_vars, inventory_hostname="login01", ansible_connection="ssh"))


def test_a_login_node_with_every_role_off_gathers_nothing_and_refuses_nothing():
    result = run(
        ["nvidia_driver", "cuda_toolkit", "cudnn"],
        nvidia_driver_enabled=False,
        cuda_toolkit_enabled="no",
        cudnn_enabled=False,
        cudnn_version="9.x",
        nvidia_driver_branch="58O",
    )
    assert not result.get("failed"), result
    assert result["errors"] == {}
    assert [p["enabled"] for p in result["plans"].values()] == [False, False, False]
    assert result["lines"][1:] == [
        f"{role}: disabled by {role}_enabled: false (nothing planned, installed or changed on this host)"
        for role in ("nvidia_driver", "cuda_toolkit", "cudnn")
    ]


def test_only_the_enabled_roles_facts_are_gathered():
    with pytest.raises(Gathered) as gathered:
        run(["nvidia_driver", "cuda_toolkit", "cudnn"], nvidia_driver_enabled=False, cudnn_enabled=False,
            nvidia_driver_mok_key="/etc/mok.priv", nvidia_driver_mok_cert="/etc/mok.der")  # fmt: skip
    subsets = ["gpu", "driver", "cuda", "owners", "packages", "sources"]  # the toolkit from nvidia_repo
    assert gathered.value.args[0]["gather_subset"] == subsets
    assert "mok_paths" not in gathered.value.args[0] and "owner_paths" not in gathered.value.args[0]


@pytest.mark.parametrize("role", ["nvidia_driver", "cuda_toolkit", "cudnn"])
def test_a_switch_that_is_no_boolean_is_refused_naming_it(role):
    with pytest.raises(nvidia_plan.AnsibleActionFail) as refused:
        run([role], **{f"{role}_enabled": "maybe"})
    assert f"{role}_enabled='maybe' (allowed: true or false (also yes/no, on/off, 1/0))" in str(refused.value)


def test_a_disabled_roles_variables_are_still_typed_by_its_spec():
    """Ansible refuses them at the role's entry: the gate and preflight.yml refuse them as well."""
    with pytest.raises(nvidia_plan.AnsibleActionFail, match="cudnn_source must be one of"):
        run(["cudnn"], cudnn_enabled=False, cudnn_source="pip")
