"""el: cuDNN 9.14 for CUDA 13 from the lab's NVIDIA-layout RPM repository on EL-shaped hosts (dnf path)."""

import json

CUDNN_SET = ["libcudnn9-cuda-13", "libcudnn9-devel-cuda-13"]
GET_VERSION = (
    "import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); lib.cudnnGetVersion.restype = ctypes.c_size_t; "
    "print(lib.cudnnGetVersion())"
)


def test_the_host_is_el_shaped(host):
    """An EL identity and rpm's database, no dpkg database (lab/images.py)."""
    assert 'PLATFORM_ID="platform:el' in host.file("/etc/os-release").content_string
    assert host.file("/etc/redhat-release").exists
    assert not host.file("/var/lib/dpkg/status").exists


def test_the_cudnn_set_is_installed_at_9_14_and_locked(host):
    for name in CUDNN_SET:
        assert host.run(f"rpm -q --qf '%{{VERSION}}-%{{RELEASE}}' {name}").stdout == "9.14.0.64-1"
    locks = host.check_output("dnf versionlock list")
    for name in CUDNN_SET:
        assert f"{name}-0:9.14.0.64-1." in locks


def test_cudnn_loads_and_reports_its_version_from_usr_lib64(host):
    out = host.check_output(f"python3 -c {json.dumps(GET_VERSION)} libcudnn.so.9")
    assert out == "91400"
    assert host.file("/usr/lib64/libcudnn.so.9").is_symlink
    assert host.file("/usr/include/cudnn_version.h").exists


def test_the_driver_userspace_is_branch_580_and_locked(host):
    """The driver role's defaults in a container: NVIDIA's userspace packages of branch 580 (the lab's
    stand-ins), versionlocked, persistenced enabled; on EL 9 the branch's stream enabled."""
    for name in ("nvidia-driver-cuda", "nvidia-persistenced"):
        assert host.run(f"rpm -q --qf '%{{VERSION}}' {name}").stdout.startswith("580.")
        assert f"{name}-3:580." in host.check_output("dnf versionlock list")
    assert host.service("nvidia-persistenced").is_enabled
    if "platform:el9" in host.file("/etc/os-release").content_string:
        assert "580-open [e]" in host.check_output("dnf module list nvidia-driver")


def test_the_repository_checks_package_and_metadata_signatures(host):
    text = host.file("/etc/yum.repos.d/gpufleet-nvidia-cuda.repo").content_string
    assert "gpgcheck=1\n" in text and "repo_gpgcheck=1\n" in text
    assert "gpg-pubkey" in host.check_output("rpm -qa gpg-pubkey*")


TOOLKIT_LIBS = (
    "libcublas.so.13",
    "libcufft.so.12",
    "libcurand.so.10",
    "libcusolver.so.12",
    "libcusparse.so.12",
)


def test_the_cuda_toolkit_is_nvidias_whole_toolkit_from_the_repository_and_locked(host):
    """cuda-toolkit-13-0 (the whole toolkit, not the compiler alone) from the RPM repository, each package
    versionlocked, /usr/local/cuda-13.0 owned by NVIDIA's packages, its libraries in the linker cache."""
    assert host.run("rpm -q --qf '%{VERSION}' cuda-toolkit-13-0").stdout == "13.0.2"
    locks = host.check_output("dnf versionlock list")
    for name in ("cuda-toolkit-13-0", "cuda-nvcc-13-0", "libcublas-13-0", "libcublas-devel-13-0"):
        assert f"{name}-0:" in locks, name
    assert host.run("rpm -qf /usr/local/cuda-13.0/bin/nvcc").stdout.startswith("cuda-nvcc-13-0-13.0.")
    cache = host.check_output("/sbin/ldconfig -p")
    for lib in TOOLKIT_LIBS:
        assert f"{lib} (" in cache and "/usr/local/cuda" in cache.split(f"{lib} (", 1)[1].split("\n", 1)[0], (
            lib
        )


def test_nvcc_builds_a_cubin(host):
    src = 'extern "C" __global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }'
    cmd = (
        f"cd $(mktemp -d) && printf '%s\\n' {json.dumps(src)} > k.cu && "
        "/usr/local/cuda-13.0/bin/nvcc -arch=sm_90 -cubin -o k.cubin k.cu && od -An -c -N4 k.cubin"
    )
    assert host.check_output(cmd).split() == ["177", "E", "L", "F"]
