"""NVIDIA's own driver role's variables through the nvidia_plan action as Ansible runs it (issue 37): set for
a host, each is refused before anything is gathered there (the stand-in _execute_module fails the test when
called), templated where it can be, shown as written where it refers to that role's own variables."""

from types import SimpleNamespace

from ansible.errors import AnsibleUndefinedVariable
from ansible_collections.gpufleet.nvidia.plugins.action import nvidia_plan


def contact(**_kwargs):
    raise AssertionError("nvidia_plan ran a module on the host before refusing the variables")


def template(value):
    """Ansible's templar over this host's variables: nvidia_driver_branch is 535, _rhel_repo_dir undefined."""
    if isinstance(value, str) and "_rhel_repo_dir" in value:
        raise AnsibleUndefinedVariable("'_rhel_repo_dir' is undefined")
    return value.replace("{{ nvidia_driver_branch }}", "535") if isinstance(value, str) else value


def run(roles, fail_on_errors=True, **task_vars):
    task = SimpleNamespace(
        args={"role": list(roles), "fail_on_errors": fail_on_errors},
        async_val=0,
        check_mode=True,
        action="gpufleet.nvidia.nvidia_plan",
    )
    connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="/nonexistent"), transport="ssh")
    action = nvidia_plan.ActionModule(task, connection, None, None, SimpleNamespace(template=template), None)
    action._load_name = "gpufleet.nvidia.nvidia_plan"
    action._execute_module = contact
    return action.run(task_vars=dict(task_vars, inventory_hostname="gpu01", ansible_connection="ssh"))


def test_nvidias_variables_are_refused_before_the_host_is_read():
    result = run(
        ["nvidia_driver"],
        nvidia_driver_skip_reboot=True,
        nvidia_driver_ubuntu_branch="{{ nvidia_driver_branch }}",
        nvidia_driver_rhel_cuda_repo_baseurl="https://mirror.example/cuda/repos/{{ _rhel_repo_dir }}/",
    )
    assert result["failed"] is True
    msg = result["msg"]
    assert msg.startswith(
        "nvidia_driver: nvidia_driver_skip_reboot=True (allowed: unset: a variable of NVIDIA's"
    ), msg
    assert "set nvidia_driver_reboot: never instead" in msg
    assert (
        "nvidia_driver_ubuntu_branch='535' (allowed: " in msg
        and "set nvidia_driver_branch: '535' instead" in msg
    )
    assert (
        "nvidia_driver_rhel_cuda_repo_baseurl='https://mirror.example/cuda/repos/{{ _rhel_repo_dir }}/'"
        in msg
    )
    assert "set nvidia_driver_repo_base_url: 'https://mirror.example/cuda/repos' instead" in msg


def test_preflight_yml_lists_them_with_the_hosts_other_errors():
    """fail_on_errors false (preflight.yml): the refusal is one of the host's error lines."""
    result = run(["nvidia_driver"], fail_on_errors=False, nvidia_driver_persistence_mode_on="no")
    assert not result.get("failed"), result
    (error,) = result["errors"]["nvidia_driver"]
    assert error.startswith("nvidia_driver: nvidia_driver_persistence_mode_on='no' (allowed: unset: "), error
    assert error.endswith("set nvidia_driver_persistenced: false instead"), error
    assert "error: " + error in result["lines"]


def test_a_host_the_driver_role_is_disabled_for_is_not_refused():
    result = run(["nvidia_driver"], nvidia_driver_enabled=False, nvidia_driver_skip_reboot=True)
    assert not result.get("failed"), result
    assert result["plan"]["enabled"] is False
