"""ubuntu: the roles' Ubuntu apt path on an Ubuntu-shaped host set up by NVIDIA's guide (cuda-keyring)."""

import json

CUDNN_SET = ["libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"]
GET_VERSION = (
    "import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); lib.cudnnGetVersion.restype = ctypes.c_size_t; "
    "print(lib.cudnnGetVersion())"
)
KEYRING_LIST = "/etc/apt/sources.list.d/cuda-ubuntu2404-x86_64.list"


def test_the_host_is_ubuntu_shaped(host):
    os_release = host.file("/etc/os-release").content_string
    assert 'ID="ubuntu"' in os_release and 'VERSION_ID="24.04"' in os_release
    assert host.file("/var/lib/dpkg/status").exists


def test_cuda_keyrings_source_is_the_only_one_and_apt_reads_it(host):
    """Adopted, not duplicated: gpufleet wrote no source of its own for the same URL (two Signed-By values
    break every apt-get update, NVIDIA/cuda-repo-management#4)."""
    assert host.file(KEYRING_LIST).exists
    assert host.run("dpkg -S " + KEYRING_LIST).stdout.startswith("cuda-keyring:")
    assert not host.file("/etc/apt/sources.list.d/gpufleet-nvidia-cuda.sources").exists
    assert not host.file("/etc/apt/keyrings/gpufleet-nvidia-cuda.asc").exists
    # every source in sources.list.d (the image's sources.list names Debian's archive, which the lab network
    # cannot reach: minutes of timeouts)
    update = host.run("LC_ALL=C apt-get update -o Dir::Etc::SourceList=/dev/null")
    assert update.rc == 0 and "Signed-By" not in update.stdout + update.stderr
    assert "ubuntu2404/x86_64" in update.stdout


def test_the_driver_userspace_is_branch_590_pinned_and_held(host):
    held = host.check_output("apt-mark showhold").split()
    for name in ("nvidia-driver-pinning-590", "nvidia-driver-cuda", "nvidia-persistenced"):
        assert host.package(name).is_installed, name
        assert host.package(name).version.startswith("590."), name
        assert name in held, name
    policy = host.check_output("LC_ALL=C apt-cache policy nvidia-driver-cuda")
    assert "580.105.08" in policy and "Candidate: 590.48.01" in policy
    assert host.service("nvidia-persistenced").is_enabled


def test_the_cuda_toolkit_is_nvidias_whole_toolkit_held(host):
    assert host.package("cuda-toolkit-13-0").version.startswith("13.0.2")
    held = host.check_output("apt-mark showhold").split()
    for name in ("cuda-toolkit-13-0", "cuda-nvcc-13-0", "libcublas-13-0", "libcublas-dev-13-0"):
        assert name in held, name
    assert "libcublas.so.13 (" in host.check_output("/sbin/ldconfig -p")


def test_nvcc_builds_a_cubin(host):
    src = 'extern "C" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }'
    cmd = (
        f"cd $(mktemp -d) && printf '%s\\n' {json.dumps(src)} > k.cu && "
        "/usr/local/cuda-13.0/bin/nvcc -arch=sm_90 -cubin -o k.cubin k.cu && od -An -c -N4 k.cubin"
    )
    assert host.check_output(cmd).split() == ["177", "E", "L", "F"]


def test_the_cudnn_set_is_at_9_14_held_and_loads(host):
    held = host.check_output("apt-mark showhold").split()
    for name in CUDNN_SET:
        assert host.package(name).version == "9.14.0.64-1", name
        assert name in held, name
    assert host.check_output(f"python3 -c {json.dumps(GET_VERSION)} libcudnn.so.9") == "91400"
