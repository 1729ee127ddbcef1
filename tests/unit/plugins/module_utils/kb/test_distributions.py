"""kb: distribution names (os-release ID <-> Ansible) and compute capability -> architecture lookups."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import arch as kb_arch
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import distributions as kb_distributions
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts


@pytest.mark.parametrize(
    ("os_release_id", "ansible"),
    [("ubuntu", "Ubuntu"), ("debian", "Debian"), ("rhel", "RedHat"), ("rocky", "Rocky"),
     ("almalinux", "AlmaLinux"), ("ol", "OracleLinux"), ("centos", "CentOS"), ("arch", "Arch")],
)  # fmt: skip
def test_ansible_names(os_release_id, ansible):
    assert kb_distributions.ansible_name(os_release_id) == ansible


@pytest.mark.parametrize(
    ("name", "os_release_id"),
    [("Ubuntu", "ubuntu"), ("RedHat", "rhel"), ("Red Hat Enterprise Linux", "rhel"), ("OracleLinux", "ol"),
     ("Oracle Linux", "ol"), ("AlmaLinux", "almalinux"), ("Rocky Linux", "rocky"), ("CentOS", "rhel"),
     ("openSUSE Leap", "opensuse-leap"), ("Amazon", "amzn"), ("ubuntu", "ubuntu"), ("", "")],
)  # fmt: skip
def test_os_release_ids(name, os_release_id):
    assert kb_distributions.os_release_id(name) == os_release_id


def test_every_ansible_name_has_the_same_os_key_as_its_id():
    for os_release_id, name in kb_distributions.ANSIBLE_NAMES.items():
        assert kb_hosts.os_key(name, "9") == kb_hosts.os_key(os_release_id, "9")


def test_cc_architecture():
    assert kb_arch.cc_architecture("9.0") == "Hopper"
    assert kb_arch.cc_architecture("10.7") == "Rubin"
    assert kb_arch.cc_architecture("12.2") is None
    assert kb_arch.cc_architecture("12.2", by_major=True) == "Blackwell"
    assert kb_arch.cc_architecture("7.3", by_major=True) is None  # Volta and Turing share major 7
    assert kb_arch.cc_architecture(None) is None


def test_family_table_agrees_with_the_exact_table():
    for cc, arch in kb_arch.CC_ARCH.items():
        family = kb_arch.CC_MAJOR_ARCH.get(cc.split(".")[0])
        assert family in (None, arch) or cc == "10.7"  # Rubin is the one exact exception of major 10
