"""playbooks/preflight.yml and nvidia_compat through ansible-playbook, as a user runs them (no lab needed).

preflight.yml plans each host with the roles' own plans (gpufleet.nvidia.nvidia_plan); these tests point it
at fake root trees (gpufleet_preflight_root) built by tests/data/facts/fakeroot.py: a fresh Debian 12 without
GPU, an Ubuntu 22.04 host with a Tesla V100 and no driver, the real H200 host.

Run: .venv/bin/pytest tests/integration/test_preflight.py
"""

from pathlib import Path

import pytest

from tests.data.facts import fakeroot
from tests.playbook import run

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv/bin/ansible-playbook"
PREFLIGHT = ROOT / "playbooks/preflight.yml"

V100_SENTENCE = (
    "Tesla V100-SXM2-32GB (Volta, sm_70) is not supported by CUDA 13.0; the last CUDA for Volta is 12.9: "
    "set cuda_version <= 12.9"
)
CUDA_PLAYBOOK = ROOT / "playbooks/cuda.yml"


def ansible_playbook(tmp_path, playbook, extra_vars=None, check=False):
    # the YAML result format wraps long strings: compare with whitespace runs collapsed (run() does)
    result = run(tmp_path, playbook, extra_vars, check=check, callback=False, timeout=300)
    return result.rc, result.text


@pytest.fixture(scope="module", autouse=True)
def _needs_toolchain():
    assert PLAYBOOK.exists(), "run `make venv` first (.venv/bin/ansible-playbook is missing)"


def test_module_failure_reaches_the_user_unchanged(tmp_path):
    """nvidia_compat's refusal, word for word; it is an action plugin, which ansible-core 2.19 announces as
    "Action failed:" (a module's failure as "Module failed:")."""
    rc, out = ansible_playbook(tmp_path, ROOT / "tests/data/compat/module_fails.yml")
    assert rc == 2, out
    assert f"Task failed: Action failed: {V100_SENTENCE}" in out, out
    assert "Traceback" not in out


def preflight(tmp_path, root, extra=None):
    return ansible_playbook(
        tmp_path, PREFLIGHT, dict({"gpufleet_preflight_root": str(root)}, **(extra or {}))
    )


@pytest.fixture
def debian12(tmp_path):
    """A GPU-less Debian 12 container (a login node, say): run on localhost, a host that is not a container
    would also be refused nvidia_driver_reboot: auto (it would reboot the controller)."""
    return fakeroot.bare(tmp_path / "debian12", container=True)


@pytest.fixture
def h200(tmp_path):
    root = tmp_path / "h200"
    fakeroot.h200(root)
    return root


def test_preflight_with_no_variables_checks_the_default_stack(tmp_path, debian12):
    """The bug: with no variables set preflight checked nothing, while site.yml installs the defaults."""
    rc, out = preflight(tmp_path, debian12, {"nvidia_driver_install_without_gpu": True})
    assert rc == 0, out
    assert "OK: GPUs none; 0 error(s)" in out, out
    assert "nvidia_driver: driver branch 580 (open module) from nvidia_repo" in out, out
    assert "cuda_toolkit: CUDA toolkit 13.0 from nvidia_repo, default 13.0" in out, out
    assert "cudnn: cuDNN 9.14.0 for CUDA 13 (nvidia_repo)" in out, out
    assert "changed=0" in out


def test_preflight_plans_no_driver_on_a_host_without_a_gpu(tmp_path, debian12):
    """Issue 37: a login node got the driver's packages planned; the toolkit and cuDNN are still planned."""
    rc, out = preflight(tmp_path, debian12)
    assert rc == 0, out
    assert "OK: GPUs none; 0 error(s)" in out, out
    assert "nvidia_driver: no NVIDIA GPU on this host: the driver is not installed (set" in out, out
    assert "branch 580" not in out, out
    assert "cuda_toolkit: CUDA toolkit 13.0 from nvidia_repo, default 13.0" in out, out
    assert "cudnn: cuDNN 9.14.0 for CUDA 13 (nvidia_repo)" in out, out


def test_preflight_refuses_a_foreign_toolkit_exactly_as_cuda_yml(tmp_path, debian12):
    """The bug: preflight said OK where cuda.yml refuses (it never gathered who owns /usr/local/cuda-13.0)."""
    fakeroot.write(debian12, "/usr/local/cuda-13.0/bin/nvcc", "#!/bin/sh\n", mode=0o755)
    refusal = (
        "cuda_toolkit: cuda_toolkit_existing=refuse (allowed: refuse (the default), adopt, replace): "
        "/usr/local/cuda-13.0 is already there, owned by unknown"
    )
    rc, out = preflight(tmp_path, debian12)
    assert rc == 2, out
    assert "FAIL: GPUs none; 1 error(s)" in out, out
    assert "error: " + refusal in out, out
    result = run(
        tmp_path, CUDA_PLAYBOOK, {"__cuda_toolkit_probe_root": str(debian12)}, check=True, callback=False
    )
    assert result.rc == 2, result.text
    assert refusal in result.text, result.text


def test_preflight_fails_cuda_13_on_a_volta_host_naming_the_users_variable(tmp_path):
    root = fakeroot.bare(tmp_path / "v100", "ubuntu", "22.04", gpu="0x1db5")
    rc, out = preflight(tmp_path, root)
    assert rc == 2, out
    assert "FAIL: GPUs Tesla V100-SXM2-32GB" in out, out
    assert V100_SENTENCE.replace("set cuda_version", "set cuda_toolkit_versions") in out, out
    assert "recommended: driver R580 proprietary, CUDA <= 12.9" in out, out
    assert "changed=0" in out


REDIST = {"cuda_toolkit_source": "redist", "cudnn_source": "redist"}


def test_preflight_of_the_h200_host_names_what_the_roles_would_refuse(tmp_path, h200):
    """NVIDIA's packages own /usr/local/cuda-13.0 and libcudnn.so.9 there: redist's policies refuse both."""
    rc, out = preflight(tmp_path, h200, REDIST)
    assert rc == 2, out
    assert "package cuda-nvcc-13-0" in out, out
    rc, out = preflight(tmp_path, h200, dict(REDIST, cuda_toolkit_existing="adopt", cudnn_existing="adopt"))
    assert rc == 0, out
    assert "OK: GPUs NVIDIA H200; 0 error(s)" in out, out
    assert (
        "nvidia_driver: driver branch 580 (open module) from nvidia_repo; loaded 580.159.04, host-managed"
        in out
    )


def test_preflight_of_the_h200_host_with_the_defaults_keeps_nvidias_packages(tmp_path, h200):
    """Issue 36: the roles' default source is NVIDIA's repository, whose packages the H200 already has: the
    toolkit and cuDNN are those packages, nothing is refused."""
    rc, out = preflight(tmp_path, h200)
    assert rc == 0, out
    assert "cuda_toolkit: CUDA toolkit 13.0 from nvidia_repo, default 13.0" in out, out
    assert "cudnn: cuDNN 9.14.0 for CUDA 13 (nvidia_repo)" in out, out


def test_preflight_checks_every_cuda_version_and_cudnn_with_its_major(tmp_path, h200):
    plan = {
        **REDIST,
        "cuda_toolkit_versions": ["12.8", "13.2"],
        "cuda_toolkit_redist_releases": {"13.2": "13.2.0"},
        "cuda_toolkit_existing": "adopt",
        "cuda_toolkit_system_default": True,
        "cudnn_existing": "adopt",
    }
    rc, out = preflight(tmp_path, h200, plan)
    assert rc == 0, out
    assert "0 error(s), 1 warning(s)" in out, out
    assert "its own minimum is 595.45.04" in out, out
    assert "set nvidia_driver_branch >= 595" in out, out
    assert "CUDA toolkit 12.8, 13.2 from redist, default 13.2" in out, out


def test_preflight_refuses_the_cudnn_build_the_cudnn_role_refuses(tmp_path, debian12):
    """The bug: CUDA 13.0 listed, cuDNN 9.12.0 for CUDA 11 printed OK; the cudnn role refuses it."""
    rc, out = preflight(tmp_path, debian12, {"cudnn_version": "9.12.0", "cudnn_cuda_major": 11})
    assert rc == 2, out
    assert "FAIL: GPUs none; 1 error(s)" in out, out
    assert "error: cudnn: the plan cannot work on this host: cuDNN 9.12.0 has no build for CUDA 11" in out, (
        out
    )
    assert "changed=0" in out


def test_preflight_types_variables_by_the_roles_own_spec(tmp_path, debian12):
    rc, out = preflight(tmp_path, debian12, {"cudnn_source": "pip"})
    assert rc == 2, out
    assert "value of cudnn_source must be one of: nvidia_repo, redist, distro, got: pip" in out, out


def test_preflight_checks_cudnn_with_the_default_cuda_of_the_toolkit_role(tmp_path, debian12):
    """cudnn_cuda_major empty: the major of the one default CUDA (the last listed), as the cudnn role does."""
    rc, out = preflight(tmp_path, debian12, {"cuda_toolkit_versions": ["12.9"]})
    assert rc == 0, out
    assert "cudnn: cuDNN 9.14.0 for CUDA 12 (nvidia_repo)" in out, out


def test_preflight_plans_a_role_only_where_site_yml_runs_it(tmp_path, debian12):
    """A login node outside gpufleet_driver_hosts and gpufleet_cudnn_hosts: neither is planned there."""
    rc, out = preflight(tmp_path, debian12, {"gpufleet_driver_hosts": "none", "gpufleet_cudnn_hosts": "none"})
    assert rc == 0, out
    assert "cuda_toolkit: CUDA toolkit 13.0" in out, out
    assert "nvidia_driver:" not in out and "cudnn:" not in out, out


def test_preflight_of_a_login_node_plans_the_toolkit_only(tmp_path, debian12):
    """Issue 37: the example inventory's login group (nvidia_driver_enabled, cudnn_enabled false); a cuDNN
    variable the cudnn role would refuse does not fail a host where it is disabled."""
    login = {"nvidia_driver_enabled": False, "cudnn_enabled": False, "cudnn_version": "9.x"}
    rc, out = preflight(tmp_path, debian12, login)
    assert rc == 0, out
    assert "OK: GPUs none; 0 error(s)" in out, out
    assert "nvidia_driver: disabled by nvidia_driver_enabled: false (nothing planned" in out, out
    assert "cuda_toolkit: CUDA toolkit 13.0 from nvidia_repo, default 13.0" in out, out
    assert "cudnn: disabled by cudnn_enabled: false (nothing planned" in out, out
    rc, out = preflight(tmp_path, debian12, dict(login, cudnn_enabled=True))
    assert rc == 2, out
    assert "cudnn_version=9.x (allowed: " in out, out
