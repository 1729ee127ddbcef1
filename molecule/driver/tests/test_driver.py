"""driver scenario: what nvidia_driver left on a Debian container (distro source, no kernel module)."""

import json

PACKAGES = [
    "nvidia-smi",
    "libcuda1",
    "libnvidia-ml1",
    "nvidia-kernel-support",
    "firmware-nvidia-gsp",
    "nvidia-persistenced",
]


def test_nonfree_source(host):
    src = host.file("/etc/apt/sources.list.d/gpufleet-debian-nonfree.sources")
    assert src.is_file
    assert "Components: main contrib non-free non-free-firmware" in src.content_string
    assert "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" in src.content_string


def test_userspace_packages_installed(host):
    for name in PACKAGES:
        assert host.package(name).is_installed, name


def test_no_kernel_module_packages_in_a_container(host):
    for name in ["nvidia-kernel-dkms", "nvidia-open-kernel-dkms", "dkms"]:
        assert not host.package(name).is_installed, name


def test_packages_held(host):
    held = host.check_output("apt-mark showhold").split()
    for name in PACKAGES:
        assert name in held, name


def test_nouveau_blacklisted(host):
    conf = host.file("/etc/modprobe.d/blacklist-nouveau-gpufleet.conf")
    assert conf.is_file
    assert conf.mode == 0o644
    assert "blacklist nouveau" in conf.content_string
    assert "options nouveau modeset=0" in conf.content_string


def test_modprobe_options(host):
    conf = host.file("/etc/modprobe.d/nvidia-gpufleet.conf")
    assert conf.is_file
    assert "options nvidia NVreg_PreserveVideoMemoryAllocations=1" in conf.content_string


def test_persistenced_enabled(host):
    assert host.service("nvidia-persistenced").is_enabled


def test_nvidia_smi_present_but_no_driver(host):
    assert host.file("/usr/bin/nvidia-smi").exists
    assert not host.file("/proc/driver/nvidia/version").exists


def test_plan_reports_container_and_reboot_decision(host):
    """The role's plan (gpufleet.nvidia.nvidia_plan: on the controller, nvidia_facts run on the instance):
    container detected, no reboot, the reason given, nothing left to change."""
    branch = "535" if host.system_info.release.startswith("12") else "550"
    result = host.ansible(
        "gpufleet.nvidia.nvidia_plan",
        "role=nvidia_driver",
        check=True,
        extra_vars={"nvidia_driver_branch": branch, "nvidia_driver_source": "distro"},
    )
    plan = result["plan"]
    assert plan["container"] is True
    assert plan["host_managed"] is False
    assert plan["build_kernel_module"] is False
    assert plan["reboot"]["reboot"] is False
    assert "container" in plan["reboot"]["reason"]
    assert plan["transition"]["kind"] == "none", json.dumps(plan["transition"])


def test_upgrade_playbook_did_not_drain_an_unchanged_host(host):
    """side_effect ran playbooks/driver_upgrade.yml: nothing to change, so no drain/undrain hook ran."""
    assert not host.file("/var/tmp/gpufleet-drained").exists
    assert not host.file("/var/tmp/gpufleet-undrained").exists
