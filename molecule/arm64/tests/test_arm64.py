"""arm64: Arm servers (aarch64, NVIDIA's sbsa platform) under QEMU user emulation get CUDA 13.0 (compiler,
cuBLAS, cuRAND) and cuDNN 9.14 for CUDA 13: gpufleet-arm64-redist (Debian 12) from the lab mirror's linux-sbsa
archives, gpufleet-arm64-repo (Ubuntu-shaped 24.04) with the roles' defaults from the lab's signed
ubuntu2404/sbsa repository. What emulation proves: the aarch64 binaries run (nvcc, ptxas, the loader, cuDNN's
cudnnGetVersion) and nvcc builds sm_90 device code for Grace Hopper; no GPU code runs (there is no GPU)."""

import json
import os
import re
from pathlib import Path

import pytest
from testinfra_helpers import cuda_libraries_build, cudnn_loaded, dpkg_status, nvcc_builds_sm90, nvidia_facts

CUDA = "/usr/local/cuda-13.0"
EM_AARCH64 = 183  # the ELF e_machine of AArch64
REDIST, REPO = "gpufleet-arm64-redist", "gpufleet-arm64-repo"
# where each host's cuDNN is: the redist tree gpufleet unpacked, or NVIDIA's package (the sbsa layout)
CUDNN_LIB = {
    REDIST: "/opt/nvidia/cudnn/9.14.0.64-cuda13/lib/libcudnn.so.9",
    REPO: "/usr/lib/aarch64-linux-gnu/libcudnn.so.9",
}
CUDNN_SET = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]
TOOLKIT = [
    "cuda-toolkit-13-0",
    "cuda-nvcc-13-0",
    "cuda-cudart-dev-13-0",
    "libcublas-dev-13-0",
    "libcurand-dev-13-0",
]


def name(host):
    return host.backend.get_hostname()


def elf_machine(host, path):
    """The ELF header's e_machine of a file on the host (little-endian u16 at offset 18)."""
    return int(host.check_output(f"od -An -tu2 -j18 -N2 {path}").strip())


def test_the_host_is_an_arm_server(host):
    assert host.check_output("uname -m") == "aarch64"
    facts = nvidia_facts(host, "gpu")  # the host context comes with every subset
    assert facts["host"]["machine"] == "aarch64"
    assert facts["host"]["tegra"] is None  # a server, not a Jetson
    wanted = {REDIST: ("Debian", "12"), REPO: ("Ubuntu", "24.04")}[name(host)]
    assert (facts["host"]["os"]["distribution"], facts["host"]["os"]["version"]) == wanted


@pytest.mark.parametrize(
    "path",
    [f"{CUDA}/bin/nvcc", f"{CUDA}/bin/ptxas", f"{CUDA}/lib64/libcudart.so.13",
     f"{CUDA}/lib64/libcublas.so.13", f"{CUDA}/lib64/libcurand.so.10", "cudnn"],
)  # fmt: skip
def test_what_was_installed_is_built_for_aarch64(host, path):
    """The linux-sbsa archives and the sbsa repository's packages, not x86_64's (which would not even run)."""
    path = CUDNN_LIB[name(host)] if path == "cudnn" else path
    assert elf_machine(host, host.file(path).linked_to or path) == EM_AARCH64


def test_the_repository_host_has_nvidias_sbsa_packages_held_from_one_source(host):
    if name(host) != REPO:
        pytest.skip("the redist host installs no package")
    got = dpkg_status(host, TOOLKIT + CUDNN_SET)
    for pkg in TOOLKIT + CUDNN_SET:
        assert got[pkg][1] == "hold ok installed", (pkg, got[pkg])
    arches = host.check_output("dpkg-query -W -f '${Architecture} ' " + " ".join(TOOLKIT + CUDNN_SET)).split()
    assert set(arches) == {"arm64"}, arches
    assert host.check_output(f"dpkg -S {CUDA}/targets/sbsa-linux/lib/libcublas.so.13").startswith(
        "libcublas-13-0:"
    )
    assert host.file(f"{CUDA}/lib64").linked_to == f"{CUDA}/targets/sbsa-linux/lib"
    source = host.file("/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources").content_string
    assert re.search(r"/cuda/repos/ubuntu2404/sbsa/\n", source), source
    # no redist tree: the packages are the toolkit
    assert not host.file(f"{CUDA}/.gpufleet-redist.json").exists


def test_the_repository_host_has_the_drivers_arm64_userspace_held(host):
    """The driver role on an Arm server: NVIDIA's package names from the sbsa tree, at the default branch
    (580), held; userspace only (a container: no GPU, no kernel module)."""
    if name(host) != REPO:
        pytest.skip("the driver is converged on the repository host")
    held = host.check_output("apt-mark showhold").split()
    for pkg in ("nvidia-driver-cuda", "nvidia-persistenced"):
        assert host.package(pkg).version.startswith("580.105.08"), pkg
        assert host.check_output(f"dpkg-query -W -f '${{Architecture}}' {pkg}") == "arm64", pkg
        assert pkg in held, pkg
    assert host.service("nvidia-persistenced").is_enabled


def test_nvcc_builds_an_sm90_cubin_for_grace_hopper(host):
    ldd = nvcc_builds_sm90(host, f"{CUDA}/bin/nvcc", "/tmp/arm")
    assert "/usr/local/cuda/lib64/libcudart.so.13" in ldd or "libcudart.so.13 => /usr/local/cuda" in ldd, ldd


def test_a_program_calling_cublas_and_curand_builds_and_links(host):
    ldd = cuda_libraries_build(host, f"{CUDA}/bin/nvcc", "/tmp/arm-libs")
    assert "libcublas.so.13 => /usr/local/cuda" in ldd, ldd
    assert "libcurand.so.10 =>" in ldd and "not found" not in ldd, ldd


def test_cudnn_loads_and_answers_its_version(host):
    loaded = cudnn_loaded(host)
    assert loaded["version"] == 91400
    assert host.file(loaded["path"]).linked_to == host.file(CUDNN_LIB[name(host)]).linked_to, loaded


def test_the_audit_reports_the_arm_servers():
    """side_effect's audit (playbooks/audit.yml, JSON) of the instances."""
    path = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"]) / "audit" / "gpufleet-audit.json"
    report = json.loads(path.read_text(encoding="utf-8"))
    assert sorted(entry["name"] for entry in report["hosts"]) == [REDIST, REPO], report["hosts"]
    for entry in report["hosts"]:
        assert entry["status"] == "ok", entry["message"]
        assert entry["host"]["machine"] == "aarch64"
        assert [(c["version"], c["cuda_major"]) for c in entry["cudnn"]] == [("9.14.0", 13)]
        assert [t["version"] for t in entry["cuda"]["toolkits"]] == ["13.0"]
