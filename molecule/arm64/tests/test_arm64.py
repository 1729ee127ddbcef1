"""arm64: an Arm server (aarch64, NVIDIA's sbsa platform) under QEMU user emulation gets CUDA 13.0 (compiler,
cuBLAS, cuRAND) and cuDNN 9.14 for CUDA 13 from the lab mirror's linux-sbsa archives. What emulation proves:
the aarch64 binaries run (nvcc, ptxas, the loader, cuDNN's cudnnGetVersion) and nvcc builds sm_90 device code
for Grace Hopper; no GPU code runs (there is no GPU)."""

import json
import os
from pathlib import Path

import pytest
from testinfra_helpers import cuda_libraries_build, cudnn_loaded, nvcc_builds_sm90, nvidia_facts

CUDA = "/usr/local/cuda-13.0"
CUDNN = "/opt/nvidia/cudnn/9.14.0.64-cuda13"
EM_AARCH64 = 183  # the ELF e_machine of AArch64


def elf_machine(host, path):
    """The ELF header's e_machine of a file on the host (little-endian u16 at offset 18)."""
    return int(host.check_output(f"od -An -tu2 -j18 -N2 {path}").strip())


def test_the_host_is_an_arm_server(host):
    assert host.check_output("uname -m") == "aarch64"
    facts = nvidia_facts(host, "gpu")  # the host context comes with every subset
    assert facts["host"]["machine"] == "aarch64"
    assert facts["host"]["tegra"] is None  # a server, not a Jetson


@pytest.mark.parametrize(
    "path",
    [f"{CUDA}/bin/nvcc", f"{CUDA}/bin/ptxas", f"{CUDA}/lib64/libcudart.so.13",
     f"{CUDA}/lib64/libcublas.so.13", f"{CUDA}/lib64/libcurand.so.10", f"{CUDNN}/lib/libcudnn.so.9"],
)  # fmt: skip
def test_what_was_installed_is_built_for_aarch64(host, path):
    """The linux-sbsa archives, not linux-x86_64's (which would not even run here)."""
    assert elf_machine(host, host.file(path).linked_to or path) == EM_AARCH64


def test_nvcc_builds_an_sm90_cubin_for_grace_hopper(host):
    ldd = nvcc_builds_sm90(host, f"{CUDA}/bin/nvcc", "/tmp/arm")
    assert "/usr/local/cuda/lib64/libcudart.so.13" in ldd


def test_a_program_calling_cublas_and_curand_builds_and_links(host):
    ldd = cuda_libraries_build(host, f"{CUDA}/bin/nvcc", "/tmp/arm-libs")
    assert f"{CUDA}/lib/libcublas.so.13" in ldd or "/usr/local/cuda/lib64/libcublas.so.13" in ldd, ldd
    assert "libcurand.so.10 =>" in ldd and "not found" not in ldd, ldd


def test_cudnn_loads_and_answers_its_version(host):
    loaded = cudnn_loaded(host)
    assert loaded["version"] == 91400
    assert loaded["path"].startswith(CUDNN + "/lib/")


def test_the_audit_reports_the_arm_server():
    """side_effect's audit (playbooks/audit.yml, JSON) of the instance."""
    path = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "audit" / "gpufleet-audit.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    (entry,) = report["hosts"]
    assert entry["status"] == "ok", entry["message"]
    assert entry["host"]["machine"] == "aarch64"
    assert [(c["version"], c["cuda_major"]) for c in entry["cudnn"]] == [("9.14.0", 13)]
    assert [t["version"] for t in entry["cuda"]["toolkits"]] == ["13.0"]
