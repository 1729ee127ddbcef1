"""repo: CUDA 13.0 and cuDNN 9.14 for CUDA 13 from the lab's NVIDIA-layout apt repository (nvidia_repo)."""

import re

import pytest
from testinfra_helpers import cudnn_loaded, dpkg_status, nvcc_builds_sm90

CUDNN_SET = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]
# cuda-toolkit-13-0 and the packages it needs within the repository, at CUDA 13.0.2's versions: the whole
# toolkit (issue 36), NVIDIA's names and versions (the H100/H200 images' dpkg data has the same)
CUDA_SET = {
    "cuda-cccl-13-0": "13.0.85-1",
    "cuda-command-line-tools-13-0": "13.0.2-1",
    "cuda-compiler-13-0": "13.0.2-1",
    "cuda-crt-13-0": "13.0.88-1",
    "cuda-cudart-13-0": "13.0.96-1",
    "cuda-cudart-dev-13-0": "13.0.96-1",
    "cuda-culibos-dev-13-0": "13.0.85-1",
    "cuda-cupti-13-0": "13.0.85-1",
    "cuda-cupti-dev-13-0": "13.0.85-1",
    "cuda-libraries-13-0": "13.0.2-1",
    "cuda-libraries-dev-13-0": "13.0.2-1",
    "cuda-nvcc-13-0": "13.0.88-1",
    "cuda-nvml-dev-13-0": "13.0.87-1",
    "cuda-nvrtc-13-0": "13.0.88-1",
    "cuda-nvrtc-dev-13-0": "13.0.88-1",
    "cuda-nvtx-13-0": "13.0.85-1",
    "cuda-opencl-13-0": "13.0.85-1",
    "cuda-profiler-api-13-0": "13.0.85-1",
    "cuda-toolkit-13-0": "13.0.2-1",
    "cuda-toolkit-13-0-config-common": "13.0.96-1",
    "cuda-toolkit-13-config-common": "13.0.96-1",
    "cuda-toolkit-config-common": "13.0.96-1",
    "cuda-tools-13-0": "13.0.2-1",
    "libcublas-13-0": "13.1.0.3-1",
    "libcublas-dev-13-0": "13.1.0.3-1",
    "libcufft-13-0": "12.0.0.61-1",
    "libcufft-dev-13-0": "12.0.0.61-1",
    "libcufile-13-0": "1.15.1.6-1",
    "libcufile-dev-13-0": "1.15.1.6-1",
    "libcurand-13-0": "10.4.0.35-1",
    "libcurand-dev-13-0": "10.4.0.35-1",
    "libcusolver-13-0": "12.0.4.66-1",
    "libcusolver-dev-13-0": "12.0.4.66-1",
    "libcusparse-13-0": "12.6.3.3-1",
    "libcusparse-dev-13-0": "12.6.3.3-1",
    "libnpp-13-0": "13.0.1.2-1",
    "libnpp-dev-13-0": "13.0.1.2-1",
    "libnvfatbin-13-0": "13.0.85-1",
    "libnvfatbin-dev-13-0": "13.0.85-1",
    "libnvjitlink-13-0": "13.0.88-1",
    "libnvjitlink-dev-13-0": "13.0.88-1",
    "libnvjpeg-13-0": "13.0.1.86-1",
    "libnvjpeg-dev-13-0": "13.0.1.86-1",
    "libnvptxcompiler-13-0": "13.0.88-1",
    "libnvvm-13-0": "13.0.88-1",
}


def test_every_package_of_the_sets_at_its_version(host):
    got = dpkg_status(host, [*CUDA_SET, *CUDNN_SET])
    for name, version in CUDA_SET.items():
        assert got[name] == [version, "hold ok installed"], name  # cuda_toolkit_hold (issue 36)
    for name in CUDNN_SET:
        assert got[name] == ["9.14.0.64-1", "hold ok installed"], name


def test_apt_mark_showhold_lists_exactly_the_planned_packages(host):
    assert host.check_output("apt-mark showhold").split() == sorted([*CUDA_SET, *CUDNN_SET])


def test_every_package_is_pinned_and_apt_keeps_it(host):
    pins = host.file("/etc/apt/preferences.d/gpufleet-cudnn.pref").content_string
    assert pins.count("Pin: version 9.14.0.64-1\nPin-Priority: 1001\n") == 3
    toolkit = host.file("/etc/apt/preferences.d/gpufleet-cuda-toolkit.pref").content_string
    for name, version in CUDA_SET.items():
        assert f"Package: {name}\nPin: version {version}\n" in toolkit
    policy = host.check_output("apt-cache policy libcudnn9-cuda-13")
    assert "Candidate: 9.14.0.64-1" in policy  # although the repository has 9.28.0.42-1
    assert "9.28.0.42-1" in policy


def test_the_source_is_nvidias_flat_repository_with_the_pinned_key(host):
    source = host.file("/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources").content_string
    assert re.search(r"/cuda/repos/(debian12|debian13|ubuntu2404)/x86_64/\n", source), source
    assert "Suites: /\nSigned-By: /etc/apt/keyrings/gpufleet-nvidia-cuda.asc\n" in source
    assert host.file("/etc/apt/keyrings/gpufleet-nvidia-cuda.asc").content_string.startswith(
        "-----BEGIN PGP PUBLIC KEY BLOCK-----"
    )


def test_the_toolkit_is_the_packages_with_nvidias_alternatives_and_linker_files(host):
    assert host.check_output("dpkg -S /usr/local/cuda-13.0/bin/nvcc").startswith("cuda-nvcc-13-0:")
    assert (
        host.file("/usr/local/cuda-13.0/lib64").linked_to == "/usr/local/cuda-13.0/targets/x86_64-linux/lib"
    )
    assert host.file("/usr/local/cuda").linked_to == "/usr/local/cuda-13.0"
    assert "Value: /usr/local/cuda-13.0" in host.check_output("update-alternatives --query cuda-13")
    assert host.check_output("dpkg -S /etc/ld.so.conf.d/000_cuda.conf").startswith(
        "cuda-toolkit-config-common:"
    )
    assert host.check_output("dpkg -S /etc/ld.so.conf.d/987_cuda-13.conf").startswith(
        "cuda-toolkit-13-config-common:"
    )
    assert "libcudart.so.13 (libc6,x86-64) => /usr/local/cuda" in host.check_output("ldconfig -p")


def test_nvcc_builds_an_sm90_cubin_and_links_cudart(host):
    ldd = nvcc_builds_sm90(host, "/usr/local/cuda-13.0/bin/nvcc", "/tmp/tr")
    assert "libcudart.so.13 => /usr/local/cuda" in ldd


def test_cudnn_get_version_is_the_pinned_version(host):
    out = cudnn_loaded(host, "libcudnn.so.9")
    assert out["version"] == 91400
    assert out["path"] in (
        "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0",
        "/lib/x86_64-linux-gnu/libcudnn.so.9.14.0",
    )


def test_cudnn_for_cuda12_is_a_tree_beside_the_packages(host):
    lib = "/opt/nvidia/cudnn/current-cuda12/lib/libcudnn.so.9"
    out = cudnn_loaded(host, lib)
    assert out["version"] == 91400
    assert out["path"].startswith("/opt/nvidia/cudnn/9.14.0.64-cuda12/lib/")
    assert host.file("/opt/nvidia/cudnn/9.14.0.64-cuda12/.gpufleet-redist.json").exists
    assert "/opt/nvidia/cudnn" not in host.check_output(
        "ldconfig -p"
    )  # the packages' build stays the default
    assert host.run("dpkg -S /opt/nvidia/cudnn/9.14.0.64-cuda12/lib").rc == 1  # no package owns it


def test_cudnn_headers_where_nvidias_package_puts_them(host):
    # NVIDIA's libcudnn9-headers-cuda-13 registers no alternative (the H200's dpkg database): the headers are
    # in the multiarch include directory, which g++ searches by default
    assert (
        host.file("/usr/include/x86_64-linux-gnu/cudnn.h").linked_to
        == "/usr/include/x86_64-linux-gnu/cudnn_v9.h"
    )
    assert not host.file("/usr/include/cudnn.h").exists
    out = host.check_output(
        "printf '#include <cudnn_version.h>\\nCUDNN_MINOR\\n' | g++ -E -P -x c++ - | tail -n 1"
    )
    assert out.strip() == "14"


@pytest.mark.parametrize("name", [*CUDA_SET, *CUDNN_SET])
def test_dpkg_verify_is_clean(host, name):
    # the lab images' dpkg filter keeps no /usr/share/doc but the copyright files (lab/README.md): dpkg -V
    # reports the filtered changelogs as missing
    out = host.run(f"dpkg -V {name}").stdout.splitlines()
    assert [line for line in out if not line.endswith(f"/usr/share/doc/{name}/changelog.Debian.gz")] == []
