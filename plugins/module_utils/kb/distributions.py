# Copyright: gpufleet contributors
# Apache-2.0
"""Knowledge base: distribution names, as /etc/os-release writes them (ID) and as Ansible reports them.

Pure data (stdlib only). The OS *key* ('ubuntu2404', ...) is kb/hosts.py's os_key(); this file only
translates names so that the probe (os-release ID -> Ansible's ``distribution``) and the compatibility
rules (any of those names -> the os-release ID its tables use) agree.
Sources: os-release(5) ``ID`` values (high: https://www.freedesktop.org/software/systemd/man/latest/os-release.html
and each distribution's /etc/os-release); Ansible's ``distribution`` fact names (high:
ansible.module_utils.facts.system.distribution, and ``distro.id().capitalize()`` for the others in
ansible.module_utils.common.sys_info.get_distribution).
"""

from __future__ import annotations

# os-release ID -> ansible_facts.distribution
ANSIBLE_NAMES = {
    "ubuntu": "Ubuntu",
    "debian": "Debian",
    "rhel": "RedHat",
    "rocky": "Rocky",
    "almalinux": "AlmaLinux",
    "ol": "OracleLinux",
    "centos": "CentOS",
    "fedora": "Fedora",
    "sles": "SLES",
    "opensuse-leap": "openSUSE Leap",
    "amzn": "Amazon",
}

# Other spellings (lower case) -> the os-release ID the compatibility tables (kb/cuda.py) use.
# CentOS is checked as RHEL (NVIDIA's guides list no CentOS; it is built from RHEL sources).
_ALIASES = {
    "red hat enterprise linux": "rhel",
    "redhat": "rhel",
    "centos": "rhel",
    "oracle linux": "ol",
    "oraclelinux": "ol",
    "opensuse": "opensuse-leap",
    "opensuse leap": "opensuse-leap",
    "amazon": "amzn",
    "rocky linux": "rocky",
}


def ansible_name(os_release_id):
    """'ubuntu' -> 'Ubuntu', 'rhel' -> 'RedHat'; an ID not listed is capitalized as Ansible does."""
    text = str(os_release_id or "").strip().lower()
    return ANSIBLE_NAMES.get(text, text.capitalize())


def os_release_id(distribution):
    """'Ubuntu' -> 'ubuntu', 'RedHat' -> 'rhel', 'OracleLinux' -> 'ol'; unknown names lower-cased."""
    text = " ".join(str(distribution or "").strip().lower().split())
    return _ALIASES.get(text, text)
