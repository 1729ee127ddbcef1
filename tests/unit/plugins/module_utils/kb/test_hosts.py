"""The one OS key and machine mapping (kb/hosts.py)."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts


@pytest.mark.parametrize(
    ("dist", "ver", "key"),
    [
        ("Ubuntu", "22.04", "ubuntu2204"),
        ("Ubuntu", "24.04", "ubuntu2404"),
        ("ubuntu", "24.04.1", "ubuntu2404"),
        ("Debian", "12", "debian12"),
        ("Debian", "12.7", "debian12"),
        ("Debian", "13", "debian13"),
        ("RedHat", "9.4", "rhel9"),
        ("Rocky", "8", "rhel8"),
        ("AlmaLinux", "10.0", "rhel10"),
        ("OracleLinux", "9", "rhel9"),
        ("CentOS", "9", "rhel9"),
    ],
)
def test_os_key(dist, ver, key):
    assert hosts.os_key(dist, ver) == key


@pytest.mark.parametrize(
    ("dist", "ver"),
    [
        ("Ubuntu", "22.10"),  # not 22.04: the two earlier normalizers disagreed here
        ("Ubuntu", "22"),
        ("Ubuntu", "20.04"),
        ("Debian", "11"),
        ("RedHat", "7.9"),
        ("Fedora", "40"),
        ("", ""),
        ("Debian", "sid"),
    ],
)
def test_os_key_unsupported_is_none(dist, ver):
    assert hosts.os_key(dist, ver) is None


def test_platforms():
    assert hosts.redist_platform("x86_64") == "linux-x86_64"
    assert hosts.redist_platform("aarch64") == "linux-sbsa"
    assert hosts.redist_platform("ppc64le") is None
    assert hosts.repo_arch("aarch64") == "sbsa"
    assert hosts.repo_arch("x86_64") == "x86_64"
