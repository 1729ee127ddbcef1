"""playbooks/preflight.yml and nvidia_compat through ansible-playbook, as a user runs them (no lab needed).

Run: .venv/bin/pytest tests/integration/test_preflight.py
"""

from pathlib import Path

import pytest

from .playbook import run

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / ".venv/bin/ansible-playbook"
PREFLIGHT = ROOT / "playbooks/preflight.yml"

V100_SENTENCE = (
    "Tesla V100-SXM2-32GB (Volta, sm_70) is not supported by CUDA 13.0; the last CUDA for Volta is 12.9: "
    "set cuda_version <= 12.9"
)
H200 = {"pci_device_id": "0x2335", "pci_subsystem_id": "0x18BF"}
UBUNTU = {"distribution": "ubuntu", "version": "24.04"}


def ansible_playbook(tmp_path, playbook, extra_vars=None, check=False):
    # the YAML result format wraps long strings: compare with whitespace runs collapsed (run() does)
    result = run(tmp_path, playbook, extra_vars, check=check, callback=False, timeout=300)
    return result.rc, result.text


@pytest.fixture(scope="module", autouse=True)
def _needs_toolchain():
    assert PLAYBOOK.exists(), "run `make venv` first (.venv/bin/ansible-playbook is missing)"


def test_module_failure_reaches_the_user_unchanged(tmp_path):
    rc, out = ansible_playbook(tmp_path, ROOT / "tests/data/compat/module_fails.yml")
    assert rc == 2, out
    assert f"Module failed: {V100_SENTENCE}" in out, out
    assert "Traceback" not in out


def test_preflight_fails_a_volta_cuda_13_plan(tmp_path):
    plan = {
        "nvidia_driver_gpus": [{"pci_device_id": "0x1DB5"}],
        "gpufleet_os": UBUNTU,
        "nvidia_driver_branch": "580",
        "cuda_toolkit_versions": ["13.0"],
        "cuda_toolkit_default": "13.0",
    }
    rc, out = ansible_playbook(tmp_path, PREFLIGHT, plan)
    assert rc == 2, out
    assert "Task failed: Action failed: " + V100_SENTENCE in out, out
    assert "FAIL: GPUs Tesla V100-SXM2-32GB" in out
    assert "changed=0" in out


def test_preflight_passes_an_h200_cuda_13_cudnn_9_14_plan(tmp_path):
    plan = {
        "nvidia_driver_gpus": [H200],
        "gpufleet_os": UBUNTU,
        "nvidia_driver_branch": "580",
        "nvidia_driver_kernel_module": "auto",
        "cuda_toolkit_versions": ["13.0"],
        "cuda_toolkit_default": "13.0",
        "cudnn_version": "9.14.0",
        "cudnn_cuda_major": 13,
    }
    rc, out = ansible_playbook(tmp_path, PREFLIGHT, plan, check=True)
    assert rc == 0, out
    assert "OK: GPUs NVIDIA H200; driver 580 (auto); CUDA 13.0; cuDNN 9.14.0; 0 error(s), 0 warning(s)" in out
    assert "changed=0" in out
    assert "failed=0" in out


def test_preflight_checks_every_cuda_version_and_cudnn_with_its_major(tmp_path):
    plan = {
        "nvidia_driver_gpus": [H200],
        "gpufleet_os": UBUNTU,
        "nvidia_driver_branch": "580",
        "cuda_toolkit_versions": ["12.8", "13.2"],
        "cuda_toolkit_default": "13.2",
        "cudnn_version": "9.14.0",
    }
    rc, out = ansible_playbook(tmp_path, PREFLIGHT, plan)
    assert rc == 0, out
    assert "CUDA 12.8, 13.2; cuDNN 9.14.0; 0 error(s), 1 warning(s)" in out
    assert "its own minimum is 595.45.04" in out


def test_preflight_without_any_plan(tmp_path):
    rc, out = ansible_playbook(tmp_path, PREFLIGHT, {"nvidia_driver_gpus": [], "gpufleet_os": UBUNTU})
    assert rc == 0, out
    assert "OK: GPUs none" in out


def test_preflight_refuses_the_cudnn_build_the_cudnn_role_refuses(tmp_path):
    """The bug: CUDA 13.0 listed, cuDNN 9.12.0 for CUDA 11 printed OK; the cudnn role refuses it."""
    plan = {
        "nvidia_driver_gpus": [H200],
        "gpufleet_os": UBUNTU,
        "nvidia_driver_branch": "580",
        "cuda_toolkit_versions": ["13.0"],
        "cudnn_version": "9.12.0",
        "cudnn_cuda_major": 11,
    }
    rc, out = ansible_playbook(tmp_path, PREFLIGHT, plan)
    assert rc == 2, out
    assert "FAIL: GPUs NVIDIA H200; driver 580 (auto); CUDA 13.0; cuDNN 9.12.0; 1 error(s)" in out, out
    assert "cuDNN 9.12.0 has no build for CUDA 11 (the last is 9.10.2)" in out
    assert "changed=0" in out


def test_preflight_checks_cudnn_with_the_default_cuda_of_the_toolkit_role(tmp_path):
    """cudnn_cuda_major empty: the major of the one default CUDA (the last listed), as the cudnn role does."""
    plan = {
        "nvidia_driver_gpus": [H200],
        "gpufleet_os": UBUNTU,
        "nvidia_driver_branch": "580",
        "cuda_toolkit_versions": ["12.9"],
        "cudnn_version": "9.14.0",
    }
    rc, out = ansible_playbook(tmp_path, PREFLIGHT, plan)
    assert rc == 0, out
    assert "OK: GPUs NVIDIA H200; driver 580 (auto); CUDA 12.9; cuDNN 9.14.0; 0 error(s)" in out, out
