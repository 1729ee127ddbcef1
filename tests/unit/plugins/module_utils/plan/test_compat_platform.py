"""compat.check's CPU architecture and platform rules (kb/hosts.py): gpufleet provisions x86_64 and Arm
servers (aarch64, NVIDIA's sbsa platform) and never a Jetson (Tegra SoC, Jetson Linux), whose driver, CUDA
and cuDNN come with JetPack (https://developer.nvidia.com/embedded/jetpack)."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cudnn as kb_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat, stack

H200 = [{"compute_capability": "9.0", "name": "NVIDIA H200"}]
PLAN = {"gpus": H200, "driver_branch": "580", "cuda_version": "13.0", "cudnn_version": "9.14.0"}


@pytest.mark.parametrize("machine", ["x86_64", "aarch64", "arm64", "amd64", None, ""])
def test_x86_64_and_arm_servers_pass(machine):
    result = compat.check(**PLAN, machine=machine)
    assert (result["compatible"], result["errors"]) == (True, [])


@pytest.mark.parametrize("machine", ["ppc64le", "armv7l", "i686", "riscv64", "s390x"])
def test_other_architectures_are_refused_naming_the_parameter(machine):
    result = compat.check(**PLAN, machine=machine)
    assert result["compatible"] is False
    assert result["errors"] == [
        f"machine: {machine!r} is not a CPU architecture gpufleet provisions; it provisions x86_64 and "
        "aarch64 (Arm servers such as Grace: NVIDIA's sbsa platform) hosts"
    ]


def test_a_jetson_is_refused_with_what_to_use_instead():
    evidence = "/etc/nv_tegra_release exists (# R36 (release), REVISION: 4.3)"
    result = compat.check(gpus=[], cuda_version="13.0", machine="aarch64", tegra=evidence)
    assert result["compatible"] is False
    (error,) = result["errors"]
    assert error.startswith(f"this host is an NVIDIA Jetson (Tegra SoC, Jetson Linux: {evidence}): ")
    assert "NVIDIA JetPack" in error and "gpufleet does not install" in error


def test_the_facts_give_machine_and_tegra_and_a_machine_parameter_replaces_both():
    facts = {"host": {"machine": "aarch64", "tegra": "/proc/device-tree/compatible names nvidia,tegra234"}}
    inputs = stack.compat_inputs(facts)
    assert (inputs["machine"], inputs["tegra"]) == ("aarch64", facts["host"]["tegra"])
    assert compat.check(**inputs, cuda_version="13.0")["compatible"] is False
    inputs = stack.compat_inputs(facts, {"machine": "aarch64"})  # the plan of another (server) host
    assert (inputs["machine"], inputs["tegra"]) == ("aarch64", None)
    assert compat.check(**inputs, cuda_version="13.0")["compatible"] is True
    assert stack.compat_inputs({})["machine"] is None


def test_a_cudnn_build_missing_for_the_platform_is_refused(monkeypatch):
    """kb_cudnn.PLATFORM_GAPS (empty today: NVIDIA's manifests give linux-sbsa every variant linux-x86_64 has;
    scripts/kb_refresh.py reports a gap as a row): a row refuses that build on that platform only."""
    assert kb_cudnn.PLATFORM_GAPS == ()
    monkeypatch.setattr(kb_cudnn, "PLATFORM_GAPS", (("linux-sbsa", 12, "9.29.0", None, "high"),))
    plan = {"gpus": H200, "driver_branch": "580", "cuda_version": "12.9", "cudnn_version": "9.29.0"}
    assert compat.check(**plan, machine="x86_64")["errors"] == []
    assert compat.check(**plan, machine="aarch64")["errors"] == [
        "cuDNN 9.29.0 for CUDA 12 has no linux-sbsa build (NVIDIA's cuDNN redist manifests): choose another "
        "cudnn_version or cudnn_cuda_major"
    ]
    assert compat.check(**dict(plan, cudnn_version="9.28.1"), machine="aarch64")["errors"] == []
