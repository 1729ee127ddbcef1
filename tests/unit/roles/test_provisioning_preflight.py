"""roles cudnn, cuda_toolkit, internal: bad input is refused in preflight, before any change.

The message names the variable. Runs the preflight against this machine in check mode (it only reads).
"""

import json

import pytest

from tests.playbook import ROOT, run

PLAYBOOK = """
- name: preflight
  hosts: localhost
  gather_facts: true
  tasks:
    - name: role
      ansible.builtin.include_role:
        name: gpufleet.nvidia.{role}
        tasks_from: {tasks_from}
      vars: {vars}
"""


MIRROR = f"file://{ROOT}/tests/data/redist/mirror"


def run_role(tmp_path, role, role_vars, tasks_from="main.yml"):
    playbook = tmp_path / "preflight.yml"
    playbook.write_text(PLAYBOOK.format(role=role, vars=json.dumps(role_vars), tasks_from=tasks_from))
    result = run(tmp_path, playbook, check=True, callback=False, json_results=True, timeout=300)
    return result.rc, result.text


@pytest.mark.parametrize(
    ("role_vars", "expected"),
    [
        ({"cudnn_version": "9.x"}, "cudnn_version=9.x (allowed: X.Y.Z or X.Y.Z.B"),
        ({"cudnn_cuda_major": "thirteen"}, "cudnn_cuda_major=thirteen (allowed: a CUDA major"),
        (
            {"cudnn_source": "pip"},
            "value of cudnn_source must be one of: nvidia_repo, redist, distro, got: pip",
        ),
        ({"cudnn_source": "distro", "cudnn_skip_compat_check": True}, "cudnn_source: distro is not possible"),
        (
            {"cudnn_existing": "overwrite"},
            "value of cudnn_existing must be one of: refuse, adopt, replace, got: overwrite",
        ),
        (
            {
                # with packages too, a further build is of another CUDA major (a redist tree beside them)
                "cudnn_source": "nvidia_repo",
                "cudnn_extra_variants": [{"version": "9.14.0", "cuda_major": "13"}],
            },
            "cudnn_extra_variants[0].cuda_major=13 (allowed: a CUDA major no other build",
        ),
        (
            {"cudnn_version": "9.12.0", "cudnn_cuda_major": "11"},
            "cuDNN 9.12.0 has no build for CUDA 11 (the last is 9.10.2)",
        ),
        (
            {
                "cudnn_source": "redist",
                "cudnn_redist_base_url": "file:///nonexistent",
                "cudnn_skip_compat_check": True,
            },
            "cudnn_version: 9.14.0: no redist manifest for it",
        ),
    ],
)
def test_cudnn_bad_input(tmp_path, role_vars, expected):
    rc, out = run_role(tmp_path, "cudnn", role_vars)
    assert rc != 0, out
    assert expected in out, out
    assert "changed=0" in out, out


@pytest.mark.parametrize(
    ("role", "role_vars"),
    [
        ("cudnn", {"cudnn_enabled": False, "cudnn_version": "9.x"}),
        ("cuda_toolkit", {"cuda_toolkit_enabled": False, "cuda_toolkit_versions": ["12.99"]}),
    ],
)
def test_a_disabled_role_does_nothing_and_says_so(tmp_path, role, role_vars):
    """Issue 37: <role>_enabled false (a login node's group_vars): the plan says so and no later task runs;
    a variable the role would refuse is not judged there."""
    playbook = tmp_path / "preflight.yml"
    playbook.write_text(PLAYBOOK.format(role=role, vars=json.dumps(role_vars), tasks_from="main.yml"))
    result = run(tmp_path, playbook, check=True, timeout=300)
    assert result.rc == 0, result.text
    ran = [name.rpartition(" : ")[2] for name in result.tasks("localhost")]
    assert ran == [
        "role",
        "Preflight | Plan (variables, the host's facts, compatibility, owners; no network)",
        "Preflight | Report a role disabled on this host",
    ], ran
    assert f"{role}: disabled by {role}_enabled: false (nothing planned, installed or changed" in result.text


def test_cudnn_skip_is_reported(tmp_path):
    rc, out = run_role(
        tmp_path,
        "cudnn",
        {"cudnn_source": "redist", "cudnn_skip_compat_check": True, "cudnn_redist_base_url": "/nonexistent"},
    )
    assert rc != 0
    assert "the nvidia_compat preflight was SKIPPED (cudnn_skip_compat_check: true)" in out, out


@pytest.mark.parametrize(
    ("role_vars", "expected"),
    [
        ({"cuda_toolkit_versions": ["13.x"]}, "cuda_toolkit_versions=['13.x'] (allowed: a non-empty list"),
        (
            {"cuda_toolkit_existing": "keep"},
            "value of cuda_toolkit_existing must be one of: refuse, adopt, replace, got: keep",
        ),
        ({"cuda_toolkit_versions": ["13.0"], "cuda_toolkit_default": "12.9"}, "cuda_toolkit_default=12.9"),
        (
            # 12.9 (the plan resolves it to its redist release 12.9.1, which the module reads): a CUDA that
            # no machine of ours carries in /usr/local already (a 13.0 tree gpufleet did not install would
            # rightly be refused first, by cuda_toolkit_existing); adopt leaves a /usr/local/cuda link made
            # outside update-alternatives (this machine's) alone
            {
                "cuda_toolkit_source": "redist",
                "cuda_toolkit_versions": ["12.9"],
                "cuda_toolkit_redist_base_url": "file:///nonexistent",
                "cuda_toolkit_existing": "adopt",
            },
            "cuda_toolkit_versions: 12.9.1: no redist manifest for it (cannot read file:///nonexistent/cuda/redist/",
        ),
        (
            {
                "cuda_toolkit_source": "redist",
                "cuda_toolkit_versions": ["11.2"],
                "cuda_toolkit_skip_compat_check": True,
            },
            "cuda_toolkit_versions: CUDA 11.2 has no known redist release; known: 12.4",
        ),
    ],
)
def test_cuda_toolkit_bad_input(tmp_path, role_vars, expected):
    rc, out = run_role(tmp_path, "cuda_toolkit", role_vars)
    assert rc != 0, out
    assert expected in out, out
    assert "changed=0" in out, out


@pytest.mark.parametrize("entry", ["main.yml", "repository.yml", "host_compiler.yml", "controller_cache.yml"])
def test_internal_refuses_to_run_on_its_own(tmp_path, entry):
    rc, out = run_role(tmp_path, "internal", {}, tasks_from=entry)
    assert rc != 0
    assert (
        "gpufleet.nvidia.internal is internal to gpufleet: nvidia_driver, cuda_toolkit or cudnn include its "
        "entry points" in out
    ), out
    assert "changed=0" in out, out


def test_an_unknown_cuda_release_names_the_users_variable(tmp_path):
    """The bug: cuda_toolkit_versions ["12.99"] answered "cuda_version: CUDA 12.99 does not exist"."""
    rc, out = run_role(tmp_path, "cuda_toolkit", {"cuda_toolkit_versions": ["12.99"]})
    assert rc != 0, out
    assert "cuda_toolkit_versions=['12.99'] (allowed: a non-empty list of X.Y or X.Y.Z" in out, out
    assert "'12.99' is not a CUDA release gpufleet knows; known: 12.0" in out
    assert "cuda_version" not in out
    assert "changed=0" in out, out


def test_a_wrong_default_names_only_that_variable(tmp_path):
    """The bug: a wrong cuda_toolkit_default answered "bad variable" and every variable of the role."""
    rc, out = run_role(
        tmp_path, "cuda_toolkit", {"cuda_toolkit_versions": ["13.0"], "cuda_toolkit_default": "12.9"}
    )
    assert rc != 0, out
    assert "cuda_toolkit_default=12.9 (allowed: empty or one of cuda_toolkit_versions: 13.0)" in out, out
    assert "bad variable" not in out
    assert "cuda_toolkit_source=" not in out
    assert "cuda_toolkit_verify_arch=" not in out


def test_an_unknown_cuda_major_is_refused_before_the_network_in_check_mode(tmp_path):
    """The bug: cudnn_cuda_major 14 in --check fetched a manifest from NVIDIA (DNS failure), not refusing."""
    rc, out = run_role(tmp_path, "cudnn", {"cudnn_cuda_major": 14})
    assert rc != 0, out
    assert (
        "cudnn_cuda_major=14 (allowed: a CUDA major such as 12 or 13 that gpufleet knows cuDNN builds for"
        in out
    )
    assert "redist manifest" not in out
    assert "developer.download.nvidia.com" not in out
    assert "Redist plan" not in out


def test_the_cudnn_build_follows_the_hosts_only_cuda_toolkit(tmp_path):
    """The bug: cuda_toolkit_versions ["12.9"] and no default installed CUDA 12.9 but a CUDA-13 cuDNN."""
    rc, out = run_role(
        tmp_path,
        "cudnn",
        {
            "cudnn_source": "redist",
            "cuda_toolkit_versions": ["12.9"],
            "cudnn_redist_base_url": MIRROR,
            "cudnn_verify": False,
        },
    )
    assert rc == 0, out
    assert "9.14.0.64 for CUDA 12 -> /opt/nvidia/cudnn/9.14.0.64-cuda12 (to install)" in out, out
