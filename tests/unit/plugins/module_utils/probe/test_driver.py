"""probe_driver: /proc/driver/nvidia/version (real H200), Secure Boot, install method."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import driver as probe_driver
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
