"""NVIDIA's own driver role's variables (plan/driver/nvidia_role.py, issue 37): each one a host sets is
refused before any change, naming it, its value and the gpufleet variable to set instead (with the value
where the translation is exact); gpufleet honours none of them."""

import json
import re

import pytest
import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import roles
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver import nvidia_role
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import PlanError

from tests.data.roles import ROLES, variables

# NVIDIA/ansible-role-nvidia-driver defaults/main.yml at f68d4a7 (its newest commit), every variable and value
# (its long quoted values wrapped with YAML's escaped line break, which adds nothing to the value)
NVIDIA_DEFAULTS = r"""
nvidia_driver_package_state: present
nvidia_driver_package_version: ''
nvidia_driver_persistence_mode_on: yes
nvidia_driver_skip_reboot: no
nvidia_driver_module_file: /etc/modprobe.d/nvidia.conf
nvidia_driver_module_params: ''
nvidia_driver_add_repos: yes
nvidia_driver_branch: "515"
epel_package: "https://dl.fedoraproject.org/pub/epel/\
  epel-release-latest-{{ ansible_distribution_major_version }}.noarch.rpm"
epel_repo_key: "https://dl.fedoraproject.org/pub/epel/\
  RPM-GPG-KEY-EPEL-{{ ansible_distribution_major_version }}"
nvidia_driver_rhel_cuda_repo_baseurl: "https://developer.download.nvidia.com/compute/cuda/\
  repos/{{ _rhel_repo_dir }}/"
nvidia_driver_rhel_cuda_repo_gpgkey: "https://developer.download.nvidia.com/compute/cuda/repos/\
  {{ _rhel_repo_dir }}/D42D0685.pub"
nvidia_driver_rhel_branch: "{{ nvidia_driver_branch }}"
nvidia_driver_ubuntu_branch: "{{ nvidia_driver_branch }}"
nvidia_driver_ubuntu_install_from_cuda_repo: no
nvidia_driver_ubuntu_packages_suffix: "-server"
nvidia_driver_ubuntu_packages:
- "nvidia-headless-{{ nvidia_driver_ubuntu_branch }}{{ nvidia_driver_ubuntu_packages_suffix }}"
old_nvidia_driver_ubuntu_cuda_repo_gpgkey_id: "7fa2af80"
nvidia_driver_ubuntu_cuda_repo_baseurl: "https://developer.download.nvidia.com/compute/cuda/\
  repos/{{ _ubuntu_repo_dir }}"
nvidia_driver_ubuntu_cuda_keyring_package: "cuda-keyring_1.0-1_all.deb"
nvidia_driver_ubuntu_cuda_keyring_url: "{{ nvidia_driver_ubuntu_cuda_repo_baseurl }}/\
  {{ nvidia_driver_ubuntu_cuda_keyring_package }}"
nvidia_driver_ubuntu_cuda_package: "cuda-drivers-{{ nvidia_driver_ubuntu_branch }}"
"""
OURS = set(variables("nvidia_driver"))
MODPROBE_ITEMS = ["NVreg_EnableGpuFirmware=0", 'NVreg_A=1 NVreg_B="x"']


def test_every_variable_of_nvidias_role_that_bears_the_drivers_name_is_in_the_table():
    theirs = yaml.safe_load(NVIDIA_DEFAULTS)
    named = {n for n in theirs if "nvidia_driver" in n} - {"nvidia_driver_branch"}  # the same in both roles
    assert set(nvidia_role.NVIDIA_ROLE) == named
    assert not set(nvidia_role.NVIDIA_ROLE) & OURS  # none is gpufleet's
    assert "nvidia_driver_branch" in OURS


@pytest.mark.parametrize("name", sorted(nvidia_role.NVIDIA_ROLE))
def test_each_refusal_names_it_its_value_and_only_gpufleets_real_variables(name):
    value = yaml.safe_load(NVIDIA_DEFAULTS)[name]
    (message,) = nvidia_role.nvidia_role_errors({name: value, "nvidia_driver_branch": "580"})
    assert message.startswith(f"{name}={value!r} (allowed: unset: a variable of NVIDIA's role "), message
    assert "NVIDIA/ansible-role-nvidia-driver" in message
    named = set(re.findall(r"\bnvidia_driver_[a-z_]+[a-z]", message.split("):", 1)[1]))
    assert named <= OURS, named - OURS


@pytest.mark.parametrize(
    ("name", "value", "instead"),
    [
        ("nvidia_driver_skip_reboot", True, "set nvidia_driver_reboot: never instead"),
        ("nvidia_driver_skip_reboot", "yes", "set nvidia_driver_reboot: never instead"),
        ("nvidia_driver_skip_reboot", False, "set nvidia_driver_reboot: always instead"),
        ("nvidia_driver_persistence_mode_on", "no", "set nvidia_driver_persistenced: false instead"),
        ("nvidia_driver_persistence_mode_on", True, "set nvidia_driver_persistenced: true instead"),
        ("nvidia_driver_ubuntu_branch", "535", "set nvidia_driver_branch: '535' instead"),
        ("nvidia_driver_rhel_branch", 570, "set nvidia_driver_branch: '570' instead"),
        (
            "nvidia_driver_ubuntu_install_from_cuda_repo",
            True,
            "set nvidia_driver_source: nvidia_repo instead",
        ),
        ("nvidia_driver_ubuntu_install_from_cuda_repo", False, "set nvidia_driver_source: distro instead"),
        ("nvidia_driver_ubuntu_packages_suffix", "-server", "set nvidia_driver_ubuntu_server: true instead"),
        ("nvidia_driver_ubuntu_packages_suffix", "", "set nvidia_driver_ubuntu_server: false instead"),
        ("nvidia_driver_add_repos", False, "set nvidia_driver_repo_use_existing: true instead"),
        ("nvidia_driver_add_repos", True, "set nvidia_driver_repo_use_existing: false instead"),
        (
            "nvidia_driver_package_version",
            "580.95.05-1ubuntu1",
            "set nvidia_driver_version: '580.95.05' and nvidia_driver_branch: '580' instead",
        ),
        (
            "nvidia_driver_package_version",
            "535-dkms",
            "set nvidia_driver_branch: '535' and nvidia_driver_kernel_module: proprietary instead",
        ),
        (
            "nvidia_driver_module_params",
            'options nvidia NVreg_EnableGpuFirmware=0\n# comment\noptions nvidia  NVreg_A=1 NVreg_B="x"\n',
            "set nvidia_driver_modprobe_options: " + json.dumps(MODPROBE_ITEMS) + " instead",
        ),
        (
            "nvidia_driver_module_params",
            "options nvidia_drm modeset=1",
            "no translation of 'options nvidia_drm modeset=1': gpufleet writes options of the nvidia module",
        ),
        (
            "nvidia_driver_ubuntu_cuda_repo_baseurl",
            "https://mirror.example/cuda/repos/ubuntu2404/x86_64",
            "set nvidia_driver_repo_base_url: 'https://mirror.example/cuda/repos' instead",
        ),
        (
            "nvidia_driver_rhel_cuda_repo_baseurl",
            "https://developer.download.nvidia.com/compute/cuda/repos/{{ _rhel_repo_dir }}/",
            "nothing to set: NVIDIA's repository is gpufleet's default",
        ),
        (
            "nvidia_driver_ubuntu_cuda_package",
            "cuda-drivers-580",
            "set nvidia_driver_branch: '580' and nvidia_driver_kernel_module: proprietary instead",
        ),
        (
            "nvidia_driver_package_state",
            "absent",
            "set nvidia_driver_state: absent instead",
        ),
    ],
)
def test_the_translation_is_given_with_its_value_where_it_is_exact(name, value, instead):
    (message,) = nvidia_role.nvidia_role_errors({name: value})
    assert message.split("): ", 1)[1].startswith(instead) or instead in message, message


def test_a_credential_in_a_url_is_not_shown():
    url = "https://fleet:s3cret@mirror.example/cuda/repos/rhel9/x86_64/"
    (message,) = nvidia_role.nvidia_role_errors({"nvidia_driver_rhel_cuda_repo_baseurl": url})
    assert "s3cret" not in message, message


def test_the_role_refuses_them_before_any_facts_and_not_where_it_is_disabled():
    given = {"nvidia_driver_skip_reboot": True, "nvidia_driver_ubuntu_branch": "535"}
    with pytest.raises(PlanError) as refused:
        roles.validate("nvidia_driver", variables("nvidia_driver"), given)
    assert str(refused.value) == "; ".join(nvidia_role.nvidia_role_errors(given))
    assert str(refused.value).startswith("nvidia_driver_skip_reboot=True (allowed: unset: ")
    roles.validate("nvidia_driver", variables("nvidia_driver"), {})  # nothing set: nothing refused
    roles.validate("nvidia_driver", variables("nvidia_driver", nvidia_driver_enabled=False), given)
    roles.validate("cuda_toolkit", variables("cuda_toolkit"), given)  # not the toolkit's business


def test_no_gpufleet_role_has_a_variable_of_nvidias_table():
    for role in ROLES.iterdir():
        defaults = role / "defaults" / "main.yml"
        if defaults.is_file():
            assert not set(yaml.safe_load(defaults.read_text()) or {}) & set(nvidia_role.NVIDIA_ROLE)
