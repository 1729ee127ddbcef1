"""el-brownfield: NVIDIA's own cuda-rhel9.repo adopted on an EL-shaped host; a site's CUDA package kept."""

import json

GET_VERSION = (
    "import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); lib.cudnnGetVersion.restype = ctypes.c_size_t; "
    "print(lib.cudnnGetVersion())"
)


def test_nvidias_repo_file_is_the_only_source_of_the_repository(host):
    """Adopted, not duplicated: no .repo of gpufleet's; NVIDIA's section is what dnf installed cuDNN from."""
    assert host.file("/etc/yum.repos.d/cuda-rhel9.repo").exists
    assert not host.file("/etc/yum.repos.d/gpufleet-nvidia-cuda.repo").exists
    origin = host.check_output("dnf -q repoquery --installed --qf '%{from_repo}' libcudnn9-cuda-13")
    assert origin.strip() == "cuda-rhel9-x86_64"


def test_cudnn_is_installed_locked_and_loads(host):
    assert host.run("rpm -q --qf '%{VERSION}' libcudnn9-cuda-13").stdout == "9.14.0.64"
    assert "libcudnn9-cuda-13-0:9.14.0.64-1." in host.check_output("dnf versionlock list")
    assert host.check_output(f"python3 -c {json.dumps(GET_VERSION)} libcudnn.so.9") == "91400"


def test_no_nvidia_toolkit_package_is_installed(host):
    """The refusal (side_effect) came before any change; before it, nothing asked for the toolkit."""
    assert host.run("rpm -q cuda-toolkit-13-0").rc != 0
    assert host.run("rpm -q cuda-nvcc-13-0").rc != 0
