"""probe_driver: /proc/driver/nvidia/version (real H200), Secure Boot, install method."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import driver as probe_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import Packages

from tests.data.facts import fakeroot

H200 = Path(__file__).resolve().parents[4] / "data" / "h200-ubuntu2404"
GUID = "8be4df61-93ca-11d2-aa0d-00e098032b8c"


def test_proc_version_open_of_the_h200():
    text = (H200 / "proc-driver-nvidia-version.txt").read_text()
    assert probe_driver.parse_proc_version(text) == {"version": "580.159.04", "kernel_module": "open"}


def test_proc_version_proprietary():
    text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024\n"
    assert probe_driver.parse_proc_version(text) == {"version": "550.127.05", "kernel_module": "proprietary"}
    assert probe_driver.parse_proc_version("garbage") is None


@pytest.mark.parametrize(
    ("data", "state"),
    [(b"\x06\x00\x00\x00\x01", "enabled"), (b"\x06\x00\x00\x00\x00", "disabled"), (b"\x06", "unknown")],
)
def test_secure_boot(tmp_path, data, state):
    fakeroot.write(tmp_path, "/sys/firmware/efi/efivars/SecureBoot-" + GUID, data)
    assert probe_driver.secure_boot(Root(str(tmp_path)))[0] == state


def test_no_efi(tmp_path):
    assert probe_driver.secure_boot(Root(str(tmp_path))) == (
        "unknown",
        "no EFI variables (legacy BIOS boot or not exposed)",
    )


def test_format_cuda_int():
    assert probe_driver.format_cuda_int(13000) == "13.0"
    assert probe_driver.format_cuda_int(12080) == "12.8"
    assert probe_driver.format_cuda_int(None) == "unknown"


def test_package_installed_driver(tmp_path):
    fakeroot.dpkg_db(
        tmp_path,
        [
            ("nvidia-driver-580-open", "580.95.05-0ubuntu1", "hold ok installed", "amd64"),
            ("libnvidia-compute-580", "580.95.05-0ubuntu1", "install ok installed", "amd64"),
            ("cuda-compat-13-0", "580.95.05-0ubuntu1", "install ok installed", "amd64"),
        ],
        {"libnvidia-compute-580": ["/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"]},
    )
    root = Root(str(tmp_path))
    packages = Packages(root)
    host = {"container": "none", "reasons": {}}
    nvml = (
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        "libnvidia-compute-580",
    )
    driver = probe_driver.probe(root, False, packages, nvml=nvml, gpu_driver_info={}, host=host)
    assert driver["install_method"] == "package"
    assert driver["package"] == {
        "name": "nvidia-driver-580-open",
        "version": "580.95.05-0ubuntu1",
        "held": True,
        "manager": "deb",
    }
    assert (driver["version"], driver["branch"], driver["kernel_module"]) == ("580.95.05", "580", "open")
    assert host["driver_managed_externally"] is False


def test_no_driver_at_all(tmp_path):
    root = Root(str(tmp_path))
    host = {"container": "none", "reasons": {}}
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host)
    assert (driver["installed"], driver["install_method"], driver["version"]) == (False, "none", "unknown")
    assert driver["reasons"]["version"] == "no NVIDIA driver found"


# ------------------------------------------------------------------ the loaded module (moved from plan/gpus)
def proc_version(root, text):
    fakeroot.write(root, "/proc/driver/nvidia/version", text)


def test_h200_fixture_driver(tmp_path):
    proc_version(tmp_path, (H200 / "proc-driver-nvidia-version.txt").read_text())
    assert probe_driver.read_loaded_module(Root(str(tmp_path))) == (
        {"version": "580.159.04", "kernel_module": "open", "source": "/proc/driver/nvidia/version"},
        None,
    )
    driver = probe_driver.probe(
        Root(str(tmp_path)),
        False,
        Packages(Root(str(tmp_path))),
        nvml=None,
        gpu_driver_info={},
        host=host_fact(),
    )
    assert (driver["loaded_version"], driver["loaded_kernel_module"], driver["branch"]) == (
        "580.159.04",
        "open",
        "580",
    )


def host_fact():
    return {"container": "none", "reasons": {}}


def test_proprietary_driver_and_sys_module_fallback(tmp_path):
    root = Root(str(tmp_path))
    proc_version(tmp_path, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.195.03  Release Build\n")
    assert probe_driver.read_loaded_module(root)[0]["kernel_module"] == "proprietary"
    proc_version(tmp_path, "garbage\n")
    fakeroot.write(tmp_path, "/sys/module/nvidia/version", "575.57.08\n")
    assert probe_driver.read_loaded_module(root) == (
        {"version": "575.57.08", "kernel_module": None, "source": "/sys/module/nvidia/version"},
        "unrecognized content in /proc/driver/nvidia/version",
    )
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host_fact())
    assert (driver["loaded_version"], driver["loaded_kernel_module"], driver["version"]) == (
        "575.57.08",
        None,
        "575.57.08",
    )
    assert driver["reasons"]["loaded_kernel_module"] == (
        "/sys/module/nvidia/version does not say the flavor "
        "(unrecognized content in /proc/driver/nvidia/version)"
    )


def test_no_driver_no_loaded_module(tmp_path):
    root = Root(str(tmp_path))
    assert probe_driver.read_loaded_module(root) == (None, None)
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host_fact())
    assert (driver["loaded_version"], driver["loaded_kernel_module"]) == (None, None)
    assert driver["reasons"]["loaded_version"] == (
        "no nvidia kernel module loaded (/proc/driver/nvidia/version and /sys/module/nvidia/version absent)"
    )
    assert driver["module_for_running_kernel"] == {"version": None, "kernel_module": None}
    assert driver["reasons"]["module_for_running_kernel"] == "runtime probe skipped: root is not /"
    assert (driver["packages"], driver["runfile_markers"]) == ([], [])


# ------------------------------------------------------------------ the module the running kernel would load
def modinfo(answers):
    calls = []

    def run_command(argv, timeout=10.0, env=None):
        calls.append(argv)
        rc, out = answers[argv[2]]
        reason = None if rc == 0 else f"modinfo exited {rc}: modinfo: ERROR: Module nvidia not found."
        return rc, out, "", reason

    return run_command, calls


@pytest.mark.parametrize(
    ("license_text", "flavor"), [("Dual MIT/GPL\n", "open"), ("NVIDIA\n", "proprietary")]
)
def test_module_for_running_kernel(monkeypatch, license_text, flavor):
    run_command, calls = modinfo({"version": (0, "580.95.05\n"), "license": (0, license_text)})
    monkeypatch.setattr(probe_driver, "which", lambda name, root=None: "/usr/sbin/modinfo")
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": "580.95.05", "kernel_module": flavor},
        None,
    )
    assert calls == [
        ["/usr/sbin/modinfo", "-F", "version", "nvidia"],
        ["/usr/sbin/modinfo", "-F", "license", "nvidia"],
    ]


def test_module_for_running_kernel_absent_or_odd(monkeypatch):
    monkeypatch.setattr(probe_driver, "which", lambda name, root=None: None)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": None, "kernel_module": None},
        "modinfo not found",
    )
    monkeypatch.setattr(probe_driver, "which", lambda name, root=None: "/usr/sbin/modinfo")
    run_command, _ = modinfo({"version": (1, "")})
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": None, "kernel_module": None},
        "modinfo exited 1: modinfo: ERROR: Module nvidia not found.",
    )
    run_command, _ = modinfo({"version": (0, "580.95.05\n"), "license": (0, "GPL\n")})
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": "580.95.05", "kernel_module": None},
        "modinfo: license 'GPL' names no known flavor",
    )


# ------------------------------------------------------------------ packages and runfile markers
def test_driver_packages_and_runfile_markers(tmp_path):
    fakeroot.dpkg_db(
        tmp_path,
        [
            ("nvidia-driver-580-open", "580.95.05-0ubuntu1", "hold ok installed", "amd64"),
            ("libnvidia-compute-580", "580.95.05-0ubuntu1", "install ok installed", "amd64"),
            ("linux-modules-nvidia-580-open-generic", "6.8.0-88.89", "install ok installed", "amd64"),
            ("nvidia-fabricmanager-580", "580.95.05-1", "install ok installed", "amd64"),
            ("datacenter-gpu-manager-4-core", "1:4.4.1-1", "install ok installed", "amd64"),
            ("firmware-nvidia-gsp", "580.95.05-1", "install ok installed", "amd64"),
            ("libcuda1", "580.95.05-1", "install ok installed", "amd64"),
            ("cuda-drivers-580", "580.95.05-1", "install ok installed", "amd64"),
            ("cuda-toolkit-13-0", "13.0.2-1", "install ok installed", "amd64"),  # not a driver package
            ("libcudnn9-cuda-13", "9.14.0.64-1", "install ok installed", "amd64"),  # neither
            ("nvidia-driver-570", "570.1-1", "deinstall ok config-files", "amd64"),  # removed
        ],
    )
    fakeroot.write(tmp_path, "/var/log/nvidia-installer.log", "old runfile install\n")
    root = Root(str(tmp_path))
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host_fact())
    assert driver["packages"] == [
        {"name": "cuda-drivers-580", "version": "580.95.05-1", "held": False},
        {"name": "datacenter-gpu-manager-4-core", "version": "1:4.4.1-1", "held": False},
        {"name": "firmware-nvidia-gsp", "version": "580.95.05-1", "held": False},
        {"name": "libcuda1", "version": "580.95.05-1", "held": False},
        {"name": "libnvidia-compute-580", "version": "580.95.05-0ubuntu1", "held": False},
        {"name": "linux-modules-nvidia-580-open-generic", "version": "6.8.0-88.89", "held": False},
        {"name": "nvidia-driver-580-open", "version": "580.95.05-0ubuntu1", "held": True},
        {"name": "nvidia-fabricmanager-580", "version": "580.95.05-1", "held": False},
    ]
    assert driver["runfile_markers"] == ["/var/log/nvidia-installer.log"]
    assert driver["install_method"] == "package"  # a leftover installer log is not a runfile install
    fakeroot.write(tmp_path, "/usr/bin/nvidia-uninstall", "#!/bin/sh\n")
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host_fact())
    assert driver["runfile_markers"] == ["/usr/bin/nvidia-uninstall", "/var/log/nvidia-installer.log"]


def test_rpm_driver_packages_held_by_versionlock():
    qa = "kmod-nvidia-open-dkms\t3:580.95.05-1.el9\tx86_64\nnvidia-driver\t3:580.95.05-1.el9\tx86_64\n"
    locked = probe_packages.parse_versionlock("nvidia-driver-3:580.95.05-1.el9.*\n")
    db = probe_packages.parse_rpm_qa(qa, locked)
    fake = type("P", (), {"all": lambda self: db})()
    assert probe_packages.Packages.driver_packages(fake) == [
        {"name": "kmod-nvidia-open-dkms", "version": "3:580.95.05-1.el9", "held": False},
        {"name": "nvidia-driver", "version": "3:580.95.05-1.el9", "held": True},
    ]
