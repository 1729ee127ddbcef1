"""default: the roles' defaults only, against the lab's signed NVIDIA-layout repository given as the site's
mirror: the whole CUDA 13.0 toolkit (cuda-toolkit-13-0 and what it depends on) and cuDNN 9.14 for CUDA 13,
from packages, as NVIDIA's installation guide installs them (issue 36)."""

import re

import pytest
from testinfra_helpers import cuda_libraries_build, cudnn_loaded, dpkg_status, nvcc_builds_sm90

CUDNN_SET = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]
# cuda-toolkit-13-0 is the whole toolkit: the compiler and, beside it, the libraries a program links
# (NVIDIA's package names; the lab's repository carries them in NVIDIA's names and versions)
TOOLKIT = [
    "cuda-toolkit-13-0",
    "cuda-nvcc-13-0",
    "cuda-cudart-dev-13-0",
    "libcublas-13-0",
    "libcublas-dev-13-0",
    "libcurand-13-0",
    "libcurand-dev-13-0",
    "libcufft-13-0",
    "libcusolver-13-0",
    "libcusparse-13-0",
    "libnvjitlink-13-0",
]


def test_the_whole_toolkit_is_installed_from_the_repository(host):
    got = dpkg_status(host, TOOLKIT)
    for name in TOOLKIT:
        assert got[name][1].endswith("ok installed"), (name, got[name])
    assert got["cuda-toolkit-13-0"][0].startswith("13.0.")
    assert host.check_output("dpkg -S /usr/local/cuda-13.0/bin/nvcc").startswith("cuda-nvcc-13-0:")
    assert host.file("/usr/local/cuda-13.0/include/cublas_v2.h").exists
    assert host.file("/usr/local/cuda-13.0/lib64/libcublas.so").exists
    # no redist tree: the packages are the toolkit
    assert not host.file("/usr/local/cuda-13.0/.gpufleet-redist.json").exists


def test_the_toolkit_set_is_pinned_and_held(host):
    pins = host.file("/etc/apt/preferences.d/gpufleet-cuda-toolkit.pref").content_string
    pinned = set(re.findall(r"^Package: (\S+)$", pins, re.M))
    assert set(TOOLKIT) <= pinned
    # cuda_toolkit_hold (default true): every package of the set, as cudnn_hold holds cuDNN's (issue 36)
    held = set(host.check_output("apt-mark showhold").split())
    assert pinned <= held, sorted(pinned - held)
    assert set(CUDNN_SET) <= held


def test_cudnn_packages_are_installed_and_held(host):
    got = dpkg_status(host, CUDNN_SET)
    for name in CUDNN_SET:
        assert got[name][0].startswith("9.14.0."), (name, got[name])
        assert got[name][1] == "hold ok installed", (name, got[name])
    assert cudnn_loaded(host, "libcudnn.so.9")["version"] == 91400


def test_one_source_of_the_repository_the_sites_mirror_with_the_pinned_key(host):
    source = host.file("/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources").content_string
    assert re.search(r"/cuda/repos/debian1[23]/x86_64/\n", source), source
    assert "Signed-By: /etc/apt/keyrings/gpufleet-nvidia-cuda.asc\n" in source
    listed = host.check_output("grep -rls 'cuda/repos' /etc/apt/sources.list.d || true").split()
    assert listed == ["/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources"], listed
    update = host.run(
        "apt-get update -o Dir::Etc::SourceList=/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources "
        "-o Dir::Etc::SourceParts=/nonexistent -o APT::Get::List-Cleanup=0"
    )
    assert update.rc == 0 and not re.search(r"^(W|E|Err):", update.stdout + update.stderr, re.M), update


@pytest.mark.parametrize("name", ["cuda", "cuda-13"])
def test_the_default_toolkit_is_13_0(host, name):
    assert host.file(f"/usr/local/{name}").linked_to == "/usr/local/cuda-13.0"


def test_nvcc_builds_an_sm90_cubin_and_links_cudart(host):
    ldd = nvcc_builds_sm90(host, "/usr/local/cuda-13.0/bin/nvcc", "/tmp/td")
    assert "libcudart.so.13 => /usr/local/cuda" in ldd


def test_a_program_that_calls_cublas_and_curand_builds_and_links(host):
    """Issue 36: a program that links cuBLAS failed on a host gpufleet provisioned with CUDA 13.0. The role's
    verify built and linked it in converge (no GPU here to run it); the loader finds both libraries of the
    default toolkit through the linker cache."""
    ldd = cuda_libraries_build(host, "/usr/local/cuda-13.0/bin/nvcc", "/tmp/tdl")
    assert "libcublas.so.13 => /usr/local/cuda" in ldd, ldd
    assert "libcurand.so.10 => /usr/local/cuda" in ldd, ldd
