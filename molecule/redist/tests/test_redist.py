"""redist: CUDA 13.0, the whole toolkit, cuDNN 9.14 for CUDA 13 (main)
and CUDA 12 (side by side) from the lab's mirror."""

import json

import pytest
from testinfra_helpers import cuda_libraries_build, cudnn_loaded, nvcc_builds_sm90

CUDNN = "/opt/nvidia/cudnn"


@pytest.mark.parametrize("ver", ["13.0"])
def test_toolkit_tree_and_marker(host, ver):
    nvcc = host.file(f"/usr/local/cuda-{ver}/bin/nvcc")
    assert nvcc.exists
    assert nvcc.mode & 0o111
    marker = json.loads(host.file(f"/usr/local/cuda-{ver}/.gpufleet-redist.json").content_string)
    got = {a["component"] for a in marker["artifacts"]}
    # the whole toolkit (issue 36): the lab mirror's libraries beside the compiler; never a driver piece
    assert got >= {"cuda_nvcc", "cuda_cudart", "cuda_crt", "libnvvm", "libcublas", "libcurand", "libcufft",
                   "libcusolver", "libcusparse", "cuda_cupti", "libnvjitlink", "cuda_nvtx"}  # fmt: skip
    assert not got & {"nvidia_driver", "nvidia_fs", "fabricmanager", "imex", "libnvidia_nscq"}
    assert host.file(f"/usr/local/cuda-{ver}/include/cublas_v2.h").exists
    assert host.file(f"/usr/local/cuda-{ver}/lib64/libcublas.so").exists
    assert host.file(f"/usr/local/cuda-{ver}/lib64").linked_to == f"/usr/local/cuda-{ver}/lib"
    assert host.file(f"/usr/local/cuda-{ver}/include/cuda_runtime.h").exists
    assert not host.run(f"ls -d /usr/local/cuda-{ver}.gpufleet-*").stdout
    assert f"release {ver}," in host.check_output(f"/usr/local/cuda-{ver}/bin/nvcc --version")


@pytest.mark.parametrize("name", ["cuda", "cuda-13"])
def test_alternatives(host, name):
    out = host.check_output(f"update-alternatives --query {name}")
    assert "Value: /usr/local/cuda-13.0" in out
    assert host.file(f"/usr/local/{name}").linked_to == "/usr/local/cuda-13.0"


def test_profile_and_ld_conf(host):
    assert "/usr/local/cuda/bin" in host.file("/etc/profile.d/gpufleet-cuda.sh").content_string
    assert host.check_output("bash -lc 'command -v nvcc'") == "/usr/local/cuda/bin/nvcc"
    assert "/usr/local/cuda/lib64" in host.file("/etc/ld.so.conf.d/gpufleet-cuda.conf").content_string
    assert "/usr/local/cuda/lib64/libcudart.so.13" in host.check_output("ldconfig -p")


@pytest.mark.parametrize("ver", ["13.0"])
def test_nvcc_compiles_an_sm90_cubin_and_links_cudart(host, ver):
    ldd = nvcc_builds_sm90(host, f"/usr/local/cuda-{ver}/bin/nvcc", "/tmp/tv")
    # the loader finds libcudart.so.13 through the default toolkit's ld.so.conf.d entry
    assert "/usr/local/cuda/lib64/libcudart.so.13" in ldd


@pytest.mark.parametrize(("major", "full"), [("13", "9.14.0.64"), ("12", "9.14.0.64")])
def test_cudnn_trees_side_by_side(host, major, full):
    link = host.file(f"{CUDNN}/current-cuda{major}")
    assert link.is_symlink
    assert link.linked_to == f"{CUDNN}/{full}-cuda{major}"
    assert host.file(f"{CUDNN}/{full}-cuda{major}/lib/libcudnn.so.9").exists
    assert host.file(f"{CUDNN}/{full}-cuda{major}/include/cudnn_version.h").exists


def test_ld_cache_resolves_the_cuda13_cudnn(host):
    lines = [line for line in host.check_output("ldconfig -p").splitlines() if "libcudnn.so.9 " in line]
    assert len(lines) == 1, lines
    assert lines[0].split("=>")[1].strip() == f"{CUDNN}/current-cuda13/lib/libcudnn.so.9"


@pytest.mark.parametrize(
    ("lib", "where"),
    [
        ("libcudnn.so.9", "9.14.0.64-cuda13"),
        (f"{CUDNN}/current-cuda12/lib/libcudnn.so.9", "9.14.0.64-cuda12"),
    ],
)
def test_cudnn_get_version(host, lib, where):
    out = cudnn_loaded(host, lib)
    assert out["version"] == 91400
    assert f"/{where}/lib/" in out["path"]


def test_no_downloads_left_behind(host):
    assert not host.run("find /var/cache/gpufleet/redist -name '*.tar.xz' -o -name '*.part'").stdout.strip()


def test_a_program_that_calls_cublas_and_curand_builds_and_links(host):
    """Issue 36: a program that links cuBLAS failed on a host gpufleet provisioned with CUDA 13.0. The role's
    verify built and linked it in converge (no GPU here to run it); the loader finds both libraries of the
    default toolkit through the linker cache."""
    ldd = cuda_libraries_build(host, "/usr/local/cuda-13.0/bin/nvcc", "/tmp/trl")
    assert "libcublas.so.13 => /usr/local/cuda" in ldd, ldd
    assert "libcurand.so.10 => /usr/local/cuda" in ldd, ldd
