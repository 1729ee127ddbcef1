"""probe_gpu: sysfs detection without a driver, nvidia-smi CSV of the real H200, NVML merge."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import arch as kb_arch
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import gpu as probe_gpu
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root

from tests.data.facts import fakeroot

H200 = Path(__file__).resolve().parents[4] / "data" / "h200-ubuntu2404"


def nvml_from_csv():
    """What NVML reports on the H200, taken from its real nvidia-smi CSV (with header and units)."""
    text = (H200 / "nvidia-smi-query-gpu.csv").read_text()
    fields = [f.strip().split(" ")[0] for f in text.splitlines()[0].split(",")]
    return probe_gpu.parse_smi_csv(text, fields)


def test_parse_smi_csv_of_the_h200():
    result = nvml_from_csv()
    assert result["driver_version"] == "580.159.04"
    assert result["gpus"] == [
        {
            "index": 0,
            "name": "NVIDIA H200",
            "pci_bus_id": "00000000:00:06.0",
            "vbios": "96.00.A5.00.1A",
            "uuid": "GPU-00000000-1111-2222-3333-444444444444",
            "compute_capability": "9.0",
            "pci_device_id": 0x233510DE,
            "pci_subsystem_id": 0x18BF10DE,
            "memory_mib": 143771,
            "persistence_mode": True,
            "mig_mode": "disabled",
        }
    ]


def test_sysfs_without_driver(tmp_path):
    fakeroot.h200(tmp_path)
    (tmp_path / "sys/bus/pci/devices/0000:00:06.0/driver").unlink()
    gpus, nvswitches, reason = probe_gpu.scan_pci(Root(str(tmp_path)))
    assert reason is None
    assert nvswitches == 0
    assert [(g["pci_bus_id"], g["device_id"], g["kernel_driver"]) for g in gpus] == [
        ("0000:00:06.0", "0x2335", "none")
    ]


def test_nvswitches_and_non_gpu_functions(tmp_path):
    for i, cls in enumerate(("0x068000", "0x068000", "0x040300", "0x030200")):
        fakeroot.write(tmp_path, f"/sys/bus/pci/devices/0000:0{i}:00.0/vendor", "0x10de\n")
        fakeroot.write(tmp_path, f"/sys/bus/pci/devices/0000:0{i}:00.0/class", cls + "\n")
    gpus, nvswitches, _ = probe_gpu.scan_pci(Root(str(tmp_path)))
    assert (len(gpus), nvswitches) == (1, 2)


def test_no_sysfs_under_root(tmp_path):
    assert probe_gpu.scan_pci(Root(str(tmp_path))) == ([], 0, "/sys/bus/pci/devices not present under root")


def test_nvml_enrichment_matches_by_bus_id(tmp_path, monkeypatch):
    fakeroot.h200(tmp_path)
    monkeypatch.setattr(
        probe_gpu, "run_isolated", lambda func, args=(), timeout=10.0: (nvml_from_csv(), None)
    )
    gpus, _, info, reasons = probe_gpu.probe(Root(str(tmp_path)), live=True)
    assert reasons == []
    (gpu,) = gpus
    assert (gpu["name"], gpu["architecture"], gpu["compute_capability"], gpu["memory_mib"]) == (
        "NVIDIA H200",
        "Hopper",
        "9.0",
        143771,
    )
    assert (gpu["source"], gpu["kernel_driver"], gpu["reasons"]) == ("nvml", "nvidia", {})
    assert info["driver_version"] == "580.159.04"


def test_nvidia_smi_fallback_and_old_driver_retry(tmp_path, monkeypatch):
    fakeroot.h200(tmp_path)
    monkeypatch.setattr(
        probe_gpu,
        "run_isolated",
        lambda func, args=(), timeout=10.0: (None, "libnvidia-ml.so.1: cannot open"),
    )
    monkeypatch.setattr(probe_gpu, "which", lambda name, root=None: "/usr/bin/nvidia-smi")
    calls = []

    def fake_run(argv, timeout=10.0, env=None):
        calls.append(argv[1])
        if "compute_cap" in argv[1]:
            return 2, 'Field "compute_cap" is not a valid field to query.', "", "nvidia-smi exited 2"
        return (
            0,
            "0, NVIDIA H200, 00000000:00:06.0, 0x233510DE, 0x18BF10DE, 580.159.04, 96.00.A5.00.1A, "
            "143771, Enabled, [N/A], GPU-0\n",
            "",
            None,
        )

    monkeypatch.setattr(probe_gpu, "run_command", fake_run)
    gpus, _, info, _ = probe_gpu.probe(Root(str(tmp_path)), live=True)
    assert len(calls) == 2
    (gpu,) = gpus
    assert (gpu["source"], gpu["memory_mib"], gpu["mig_mode"]) == ("nvidia-smi", 143771, "unsupported")
    # nvidia-smi had no compute_cap: the knowledge base (kb/gpus.py) knows device 0x2335
    assert (gpu["compute_capability"], gpu["architecture"]) == ("9.0", "Hopper")


def test_everything_fails_gives_reasons(tmp_path, monkeypatch):
    fakeroot.h200(tmp_path)
    monkeypatch.setattr(
        probe_gpu, "run_isolated", lambda func, args=(), timeout=10.0: (None, "crashed with SIGSEGV")
    )
    monkeypatch.setattr(probe_gpu, "which", lambda name, root=None: None)
    (gpu,), _, info, _ = probe_gpu.probe(Root(str(tmp_path)), live=True)
    assert gpu["reasons"]["uuid"] == "NVML: crashed with SIGSEGV; nvidia-smi: nvidia-smi not found"
    assert gpu["device_id"] == "0x2335"


def test_architecture_from_the_knowledge_base():
    assert probe_gpu.architecture("9.0") == ("Hopper", None)
    assert probe_gpu.architecture("unknown", "0x2335") == ("Hopper", None)
    assert probe_gpu.architecture("unknown", "0xffff")[0] == "unknown"


def test_architecture_by_family_for_a_compute_capability_the_tables_do_not_list():
    assert probe_gpu.architecture("12.2") == ("Blackwell", None)  # CC_MAJOR_ARCH: a newer minor of 12
    assert probe_gpu.architecture("99.0") == (
        "unknown",
        "compute capability 99.0 is not in the architecture table",
    )
    assert probe_gpu.architecture("unknown", "0x2335", pci_ids_name="anything") == ("Hopper", None)
    assert probe_gpu.architecture("unknown", "0x3fff", pci_ids_name="GR150 [Future Rubin]") == ("Rubin", None)


def test_odd_observed_values_are_unknown_not_errors():
    """Only the identification's own error (GpuSpecError) is caught: an odd value observed is unknown."""
    assert probe_gpu.architecture("nine", "0xzzzz")[0] == "unknown"
    gpu = probe_gpu.new_gpu("sysfs", device_id="0x12345")
    probe_gpu.identify_offline(gpu)
    assert (gpu["name"], gpu["compute_capability"]) == ("unknown", "unknown")


def test_gpu_named_without_a_driver_from_the_knowledge_base(tmp_path):
    fakeroot.h200(tmp_path)
    (gpu,), _, _, _ = probe_gpu.probe(Root(str(tmp_path)), live=False)
    assert (gpu["name"], gpu["architecture"], gpu["compute_capability"]) == ("NVIDIA H200", "Hopper", "9.0")
    assert gpu["memory_mib"] is None
    assert gpu["reasons"]["memory_mib"] == "runtime probe skipped: root is not /"


def test_normalize_bus_id():
    assert probe_gpu.normalize_bus_id("00000000:00:06.0") == "0000:00:06.0"
    assert probe_gpu.normalize_bus_id("0000:C1:00.0") == "0000:c1:00.0"


def test_one_class_filter_every_display_controller(tmp_path):
    """NVIDIA PCI base class 0x03 (VGA 0x0300, 3D 0x0302, other 0x0380) are GPUs; audio and bridges not."""
    for i, cls in enumerate(("0x030000", "0x030200", "0x038000", "0x040300", "0x060400")):
        fakeroot.write(tmp_path, f"/sys/bus/pci/devices/0000:0{i}:00.0/vendor", "0x10de\n")
        fakeroot.write(tmp_path, f"/sys/bus/pci/devices/0000:0{i}:00.0/class", cls + "\n")
        fakeroot.write(tmp_path, f"/sys/bus/pci/devices/0000:0{i}:00.0/device", "0x2335\n")
    gpus, nvswitches, _ = probe_gpu.scan_pci(Root(str(tmp_path)))
    assert [g["pci_class"] for g in gpus] == ["0x030000", "0x030200", "0x038000"]
    assert nvswitches == 0


def test_pci_ids_in_the_form_of_gpus_items(tmp_path):
    fakeroot.h200(tmp_path)
    (gpu,), _, _ = probe_gpu.scan_pci(Root(str(tmp_path)))
    assert (gpu["pci_device_id"], gpu["pci_subsystem_vendor_id"], gpu["pci_subsystem_id"]) == (
        "0x2335",
        "0x10DE",
        "0x18BF",
    )
    (tmp_path / "sys/bus/pci/devices/0000:00:06.0/subsystem_device").unlink()
    (gpu,), _, _ = probe_gpu.scan_pci(Root(str(tmp_path)))
    assert (gpu["subsystem_device_id"], gpu["pci_subsystem_id"]) == ("unknown", None)


def test_nvml_only_gpu_has_the_same_schema(tmp_path):
    (gpu,) = probe_gpu.merge(
        [],
        [{"pci_bus_id": "00000000:C1:00.0", "pci_device_id": 0x233510DE, "pci_subsystem_id": 0x18BF10DE}],
        "nvml",
    )
    sysfs = probe_gpu.new_gpu("sysfs")
    assert set(gpu) == set(sysfs)
    assert (gpu["pci_bus_id"], gpu["pci_device_id"], gpu["pci_subsystem_id"]) == (
        "0000:c1:00.0",
        "0x2335",
        "0x18BF",
    )


# The compute capability -> architecture table probe/gpu.py had before it used kb/arch.py (issue 11): the
# results must stay identical.
OLD_PROBE_CC_ARCH = {
    "3": "Kepler", "5": "Maxwell", "6": "Pascal", "7.0": "Volta", "7.2": "Volta", "7.5": "Turing",
    "8.0": "Ampere", "8.6": "Ampere", "8.7": "Ampere", "8.8": "Ampere", "8.9": "Ada Lovelace", "9": "Hopper",
    "10": "Blackwell", "11": "Blackwell", "12": "Blackwell",
}  # fmt: skip


def old_architecture(cc):
    if cc in kb_arch.CC_ARCH:  # the old probe asked the knowledge base first
        return kb_arch.CC_ARCH[cc]
    return OLD_PROBE_CC_ARCH.get(cc) or OLD_PROBE_CC_ARCH.get(cc.split(".")[0]) or "unknown"


@pytest.mark.parametrize("cc", [f"{major}.{minor}" for major in range(1, 15) for minor in range(10)])
def test_architecture_results_are_those_of_the_old_table(cc):
    assert probe_gpu.architecture(cc)[0] == old_architecture(cc)
