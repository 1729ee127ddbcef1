"""The roles' switches (plan/roles.py SWITCHES, issue 37): nvidia_driver_enabled, cuda_toolkit_enabled and
cudnn_enabled false make the role do nothing on that host: no facts wanted, nothing refused, a plan that says
"disabled by <role>_enabled" and whose task-facing keys are false."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles

from tests.data.roles import variables

DEBIAN12 = {
    "host": {"os": {"distribution": "Debian", "version": "12", "key": "debian12"}, "container": "none",
             "kernel_release": "6.1.0-40-amd64", "machine": "x86_64"},
    "gpus": [],
    "probes": {"gpu": {"state": "ok"}},
    "driver": {},
    "owners": {"paths": {}, "alternatives": {}, "linker": {"conf": [], "providers": {}}},
    "cuda": {"toolkits": []},
}  # fmt: skip
# a value each role refuses when it is enabled (plan/inputs.py grammars, the role's own checks)
WRONG = {
    "nvidia_driver": {"nvidia_driver_branch": "58O", "nvidia_driver_debian_mirror": "javascript:alert(1)"},
    "cuda_toolkit": {"cuda_toolkit_versions": ["12.99"], "cuda_toolkit_redist_base_url": "ftp://mirror"},
    "cudnn": {"cudnn_version": "9.x", "cudnn_prefix": "opt/cudnn"},
}


def test_every_role_has_its_switch_in_its_defaults():
    for role in roles.ROLES:
        assert roles.SWITCHES[role] == f"{role}_enabled"
        assert variables(role)[f"{role}_enabled"] is True


@pytest.mark.parametrize("role", roles.ROLES)
def test_an_enabled_role_refuses_what_a_disabled_one_ignores(role):
    wrong = variables(role, **WRONG[role])
    with pytest.raises(roles.PlanError):
        roles.validate(role, wrong)
    off = dict(wrong, **{f"{role}_enabled": False})
    roles.validate(role, off)  # nothing refused
    assert roles.facts_wanted(role, off) == {"gather_subset": [], "owner_paths": [], "mok_paths": []}
    plan, compat = roles.plan(role, off, DEBIAN12)
    assert plan["enabled"] is False
    assert plan["errors"] == [] and compat["errors"] == [] and compat["checked"] == []
    assert plan["summary"] == (
        f"disabled by {role}_enabled: false (nothing planned, installed or changed on this host)"
    )


def test_a_disabled_driver_installs_nothing_and_a_stack_checks_the_driver_loaded_now():
    off = variables("nvidia_driver", nvidia_driver_enabled=False)
    plan, _compat = roles.plan("nvidia_driver", off, DEBIAN12)
    assert plan["install"] is False and plan["host_managed"] is False and plan["touches_host"] is False
    assert roles.driver_target(plan) is None


def test_an_enabled_role_says_so():
    plan, _compat = roles.plan("cuda_toolkit", variables("cuda_toolkit"), DEBIAN12)
    assert plan["enabled"] is True


def test_the_report_of_a_login_node_names_each_disabled_role():
    """The example inventory's login group: the toolkit only."""
    planned = {
        "nvidia_driver": variables("nvidia_driver", nvidia_driver_enabled=False),
        "cuda_toolkit": variables("cuda_toolkit"),
        "cudnn": variables("cudnn", cudnn_enabled=False),
    }
    wanted = roles.merge_wanted(roles.facts_wanted(r, v) for r, v in planned.items())
    assert wanted["gather_subset"] == ["gpu", "driver", "cuda", "owners", "packages", "sources"]
    plans, compat = {}, {}
    for role, values in planned.items():
        plans[role], compat[role] = roles.plan(role, values, DEBIAN12)
    lines = roles.report_lines(list(planned), plans, compat, {})
    assert lines[0] == "OK: GPUs none; 0 error(s), 0 warning(s)"
    assert lines[1].startswith("nvidia_driver: disabled by nvidia_driver_enabled: false")
    assert lines[2].startswith("cuda_toolkit: CUDA toolkit 13.0 from nvidia_repo")
    assert lines[3].startswith("cudnn: disabled by cudnn_enabled: false")
