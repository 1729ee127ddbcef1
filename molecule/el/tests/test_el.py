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
