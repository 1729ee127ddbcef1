"""Unit tests of nvidia_driver_state: probes on fake file-system trees, then the decision."""

import pytest
from ansible_collections.gpufleet.nvidia.plugins.modules import nvidia_driver_state as mod

# /proc/driver/nvidia/version of the project's H200 host (tests/../shared/fixtures/h200-ubuntu2404)
H200_VERSION = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n"
    "GCC version:  gcc version 15.3.0 (GCC) \n"
)
SB_GUID = "8be4df61-93ca-11d2-aa0d-00e098032b8c"


class FakeModule:
    """probe() only calls run_command/get_bin_path when root is '/'; tests use a tmp root."""

    def get_bin_path(self, _name):  # pragma: no cover - never reached with a tmp root
        return None


def write(root, path, text="", mode="w"):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if mode == "wb":
        target.write_bytes(text)
    else:
        target.write_text(text)
    return target


def params(root, **kw):
    base = {
        "branch": "580",
        "version": None,
        "kernel_module": "auto",
        "recommended_kernel_module": None,
        "source": "nvidia_repo",
        "reboot": "auto",
        "distribution": "Ubuntu",
        "distribution_version": "24.04",
        "ubuntu_server": True,
        "fabricmanager": "auto",
        "dcgm": False,
        "build_kernel_module": "auto",
        "replace_runfile": False,
        "mok_key": None,
        "mok_cert": None,
        "is_controller": False,
        "changed": False,
        "fail_on_error": True,
        "root": str(root),
    }
    base.update(kw)
    return base


@pytest.fixture
def h200(tmp_path):
    write(tmp_path, "/proc/driver/nvidia/version", H200_VERSION)
    write(tmp_path, "/sys/module/nvidia/version", "580.159.04\n")
    write(tmp_path, "/proc/sys/kernel/osrelease", "6.18.44-fc-v595\n")
    write(tmp_path, "/.dockerenv")
    write(tmp_path, "/usr/local/nvidia/lib64/libnvidia-ml.so.1")
    write(tmp_path, "/lib/libnvidia-ml.so.1")
    write(
        tmp_path,
        "/proc/self/mounts",
        "overlay / overlay rw,relatime 0 0\n"
        "nvidia /usr/local/nvidia virtiofs ro,relatime 0 0\n"
        "proc /proc proc rw,nosuid 0 0\n",
    )
    dev = tmp_path / "sys/bus/pci/devices/0000:00:06.0"
    dev.mkdir(parents=True)
    (dev / "vendor").write_text("0x10de\n")
    (dev / "class").write_text("0x030200\n")
    return tmp_path


def test_h200_probe_is_host_managed(h200):
    state = mod.probe(FakeModule(), str(h200))
    assert state["loaded_version"] == "580.159.04"
    assert state["loaded_flavor"] == "open"
    assert state["container"] is True
    assert state["readonly_driver_mount"] == "/usr/local/nvidia"
    assert state["nvml_owned_by_package"] is False
    assert state["host_managed"] is True
    assert state["efi"] is False
    assert state["secure_boot"] is None
    assert state["gpu_count"] == 1
    assert state["nvswitch_count"] == 0


def test_h200_580_is_accepted_and_never_rebooted(h200):
    state = mod.probe(FakeModule(), str(h200))
    result = mod.decide(params(h200), state)
    assert result["errors"] == []
    assert result["warnings"] == []
    assert result["transition"]["kind"] == "none"
    assert result["flavor"] == "open"
    assert result["reboot"]["reboot"] is False
    assert "host-managed" in result["reboot"]["reason"]


def test_h200_570_is_refused_clearly(h200):
    state = mod.probe(FakeModule(), str(h200))
    result = mod.decide(params(h200, branch="570"), state)
    assert len(result["errors"]) == 1
    assert "nvidia_driver_branch: '570'" in result["errors"][0]
    assert "580.159.04" in result["errors"][0]


def test_empty_debian_container_plans_userspace_only(tmp_path):
    write(tmp_path, "/.dockerenv")
    write(tmp_path, "/proc/sys/kernel/osrelease", "6.1.0-37-amd64\n")
    state = mod.probe(FakeModule(), str(tmp_path))
    assert state["host_managed"] is False
    assert state["loaded_version"] is None
    result = mod.decide(
        params(tmp_path, source="distro", branch="535", distribution="Debian", distribution_version="12"),
        state,
    )
    assert result["errors"] == []
    assert result["plan"]["build_kernel_module"] is False
    assert result["plan"]["kernel_packages"] == []
    assert "nvidia-smi" in result["plan"]["packages"]
    assert result["reboot"]["reboot"] is False
    assert "container" in result["reboot"]["reason"]


def test_bad_input_refused_before_any_change(tmp_path):
    state = mod.probe(FakeModule(), str(tmp_path))
    result = mod.decide(
        params(tmp_path, branch="58O", reboot="sometimes", mok_key="/x.priv", mok_cert="/x.der"), state
    )
    text = " | ".join(result["errors"])
    assert "nvidia_driver_branch: '58O'" in text
    assert "nvidia_driver_reboot: 'sometimes'" in text
    assert "nvidia_driver_mok_key: '/x.priv' does not exist" in text
    assert result["plan"] is None


def test_unsupported_os_is_refused(tmp_path):
    state = mod.probe(FakeModule(), str(tmp_path))
    result = mod.decide(params(tmp_path, distribution="Ubuntu", distribution_version="20.04"), state)
    assert "not supported" in result["errors"][0]


def test_secure_boot_with_dkms_needs_mok(tmp_path):
    write(tmp_path, "/proc/sys/kernel/osrelease", "6.18.44-custom\n")
    write(tmp_path, f"/sys/firmware/efi/efivars/SecureBoot-{SB_GUID}", b"\x06\x00\x00\x00\x01", mode="wb")
    state = mod.probe(FakeModule(), str(tmp_path))
    assert state["secure_boot"] is True
    result = mod.decide(params(tmp_path), state)
    assert any("Secure Boot is enabled" in e and "nvidia_driver_mok_key" in e for e in result["errors"])
    write(tmp_path, "/root/MOK.priv")
    write(tmp_path, "/root/MOK.der")
    result = mod.decide(params(tmp_path, mok_key="/root/MOK.priv", mok_cert="/root/MOK.der"), state)
    assert result["errors"] == []


def test_secure_boot_with_precompiled_ubuntu_modules_needs_no_mok(tmp_path):
    write(tmp_path, "/proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    write(tmp_path, f"/sys/firmware/efi/efivars/SecureBoot-{SB_GUID}", b"\x06\x00\x00\x00\x01", mode="wb")
    state = mod.probe(FakeModule(), str(tmp_path))
    result = mod.decide(params(tmp_path, source="distro"), state)
    assert result["errors"] == []
    assert result["plan"]["kernel_build"] == "precompiled"


def test_runfile_conflict_is_refused_unless_replacing(tmp_path):
    write(tmp_path, "/usr/bin/nvidia-uninstall")
    write(tmp_path, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    write(tmp_path, "/proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    state = mod.probe(FakeModule(), str(tmp_path))
    assert state["host_managed"] is False
    result = mod.decide(params(tmp_path), state)
    assert any("nvidia_driver_replace_runfile: true" in e for e in result["errors"])
    result = mod.decide(params(tmp_path, replace_runfile=True), state)
    assert result["errors"] == []
    assert result["runfile"]["message"]


def test_nvswitch_turns_fabricmanager_on(tmp_path):
    write(tmp_path, "/proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    for i in range(2):
        dev = tmp_path / f"sys/bus/pci/devices/0000:0{i}:00.0"
        dev.mkdir(parents=True)
        (dev / "vendor").write_text("0x10de\n")
        (dev / "class").write_text("0x068000\n")
    state = mod.probe(FakeModule(), str(tmp_path))
    assert state["nvswitch_count"] == 2
    plan = mod.decide(params(tmp_path), state)["plan"]
    assert plan["fabricmanager_packages"] == ["nvidia-fabricmanager-580", "libnvidia-nscq-580"]
    plan = mod.decide(params(tmp_path, fabricmanager="false"), state)["plan"]
    assert plan["fabricmanager_packages"] == []


def test_readonly_mount_picks_longest_ro_mount():
    mounts = "a / ext4 ro 0 0\nb /usr ext4 ro 0 0\nc /usr/local/nvidia virtiofs ro 0 0\nd /opt ext4 rw 0 0\n"
    assert mod._readonly_mount(mounts, ["/usr/local/nvidia/lib64/libnvidia-ml.so.1"]) == "/usr/local/nvidia"
    assert mod._readonly_mount(mounts, ["/opt/x/libnvidia-ml.so.1"]) is None
    assert mod._readonly_mount("", ["/x"]) is None


DPKG_OUT = (
    "nvidia-open-570\t570.172.08-1\thi \n"
    "nvidia-kernel-open-dkms\t570.172.08-1\thi \n"
    "nvidia-driver-pinning-590\t\tun \n"
    "libnvidia-compute-570\t570.172.08-1\tii \n"
    "nvidia-fabricmanager-570\t570.172.08-1\trc \n"
)


def fake_runner(outputs):
    def run(argv):
        return outputs.get(argv[0], (1, "", ""))

    return run


def test_packages_holds_and_branches_from_dpkg(tmp_path):
    write(tmp_path, "/proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    runner = fake_runner({"dpkg-query": (0, DPKG_OUT, ""), "modinfo": (1, "", "")})
    state = mod.probe(FakeModule(), str(tmp_path), runner=runner)
    assert state["packages"] == {
        "nvidia-open-570": "570.172.08-1",
        "nvidia-kernel-open-dkms": "570.172.08-1",
        "libnvidia-compute-570": "570.172.08-1",
    }
    assert state["held_packages"] == ["nvidia-kernel-open-dkms", "nvidia-open-570"]
    assert state["installed_branches"] == ["570"]
    result = mod.decide(params(tmp_path), state)
    assert result["transition"]["kind"] == "branch_change"
    assert result["transition"]["unhold"] == ["nvidia-kernel-open-dkms", "nvidia-open-570"]


def test_installed_module_from_modinfo(tmp_path):
    write(tmp_path, "/proc/sys/kernel/osrelease", "6.8.0-45-generic\n")

    def run(argv):
        if argv[:3] == ["modinfo", "-F", "version"]:
            return 0, "580.95.05\n", ""
        if argv[:3] == ["modinfo", "-F", "license"]:
            return 0, "Dual MIT/GPL\n", ""
        return 1, "", ""

    state = mod.probe(FakeModule(), str(tmp_path), runner=run)
    assert state["installed_version"] == "580.95.05"
    assert state["installed_flavor"] == "open"
    result = mod.decide(params(tmp_path), state)
    assert result["reboot"]["needed"] is True
    assert result["reboot"]["reboot"] is True
    assert "no NVIDIA module is loaded" in result["reboot"]["reason"]
    controller = mod.decide(params(tmp_path, is_controller=True), state)
    assert controller["reboot"]["reboot"] is False
    assert "controller" in controller["reboot"]["reason"]


def test_rpm_fallback(tmp_path):
    rpm_out = "kmod-nvidia-open-dkms\t580.95.05-1.el9\nnvidia-driver\t580.95.05-1.el9\n"
    runner = fake_runner({"dpkg-query": (127, "", ""), "rpm": (0, rpm_out, "")})
    state = mod.probe(FakeModule(), str(tmp_path), runner=runner)
    assert state["packages"]["kmod-nvidia-open-dkms"] == "580.95.05-1.el9"
    assert state["installed_branches"] == ["580"]
