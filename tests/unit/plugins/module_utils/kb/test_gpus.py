"""GPU identification: the real H200 fixture (GPUs of the facts as items), fallbacks, bad items.

The readers moved to the probes: sysfs detection is probe/gpu.py (tests/unit/.../probe/test_gpu.py), the
loaded driver probe/driver.py (probe/test_driver.py), pci.ids names probe/pciids.py (probe/test_pciids.py).
Identification is pure and lives in kb/gpus.py (the probes and the plans both ask it)."""

import re
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpus
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpus import (
    GpuSpecError,
    item_from_fact,
    items_from_facts,
    parse_compute_capability,
    parse_pci_id,
    resolve_gpu,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import gpu as probe_gpu
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import VersionError, parse_version

FIXTURE = Path(__file__).resolve().parents[4] / "data/compat/h200-ubuntu2404"


def make_sysfs(root, slot, attrs):
    """A fake /sys/bus/pci/devices/<slot> with the given attribute files."""
    path = root / "sys/bus/pci/devices" / slot
    path.mkdir(parents=True)
    for name, value in attrs.items():
        (path / name).write_text(value + "\n", encoding="ascii")
    return path


def h200_attrs():
    attrs = {}
    for line in (FIXTURE / "sys-bus-pci-0000_00_06.0-attrs.txt").read_text(encoding="ascii").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            attrs[key] = value
    return attrs


@pytest.fixture
def h200_root(tmp_path):
    make_sysfs(tmp_path, "0000:00:06.0", h200_attrs())
    proc = tmp_path / "proc/driver/nvidia"
    proc.mkdir(parents=True)
    (proc / "version").write_text((FIXTURE / "proc-driver-nvidia-version.txt").read_text(encoding="ascii"))
    return tmp_path


def test_h200_fixture_detected_and_resolved(h200_root):
    (fact,), _, _ = probe_gpu.scan_pci(Root(str(h200_root)))
    assert (
        fact["pci_bus_id"],
        fact["pci_device_id"],
        fact["pci_subsystem_vendor_id"],
        fact["pci_subsystem_id"],
        fact["pci_class"],
    ) == ("0000:00:06.0", "0x2335", "0x10DE", "0x18BF", "0x030200")
    found = items_from_facts([fact])
    assert found == [
        {
            "pci_device_id": "0x2335",
            "pci_subsystem_vendor_id": "0x10DE",
            "pci_subsystem_id": "0x18BF",
            "pci_bus_id": "0000:00:06.0",
        }
    ]
    gpu, warnings = resolve_gpu(found[0])
    assert warnings == []
    assert gpu["name"] == "NVIDIA H200"
    assert gpu["architecture"] == "Hopper"
    assert gpu["compute_capability"] == "9.0"
    assert gpu["sm"] == "sm_90"
    assert gpu["kernel_module_support"] == "either"
    assert gpu["legacy_branch"] is None
    assert gpu["data_center"] is True
    assert (gpu["pci_device_id"], gpu["pci_subsystem_id"]) == ("0x2335", "0x18BF")


def test_no_sysfs_no_items(tmp_path):
    gpus, _, _ = probe_gpu.scan_pci(Root(str(tmp_path)))
    assert items_from_facts(gpus) == []
    assert items_from_facts(None) == []


def test_sysfs_filters_and_sorts(tmp_path):
    make_sysfs(tmp_path, "0000:02:00.0", {"vendor": "0x10de", "device": "0x1db5", "class": "0x030200"})
    make_sysfs(tmp_path, "0000:01:00.0", {"vendor": "0x10de", "device": "0x2330", "class": "0x030000"})
    make_sysfs(
        tmp_path, "0000:03:00.0", {"vendor": "0x10de", "device": "0x22a3", "class": "0x068000"}
    )  # NVSwitch
    make_sysfs(tmp_path, "0000:04:00.0", {"vendor": "0x8086", "device": "0x1234", "class": "0x030000"})
    make_sysfs(tmp_path, "0000:05:00.0", {"vendor": "0x10de", "device": "zzzz", "class": "0x030000"})
    make_sysfs(tmp_path, "0000:06:00.0", {"vendor": "0x10de"})
    gpus, nvswitches, _ = probe_gpu.scan_pci(Root(str(tmp_path)))
    assert nvswitches == 1
    # the GPU with an unreadable device id is in the facts ("unknown"), but no item identifies it
    assert [g["pci_bus_id"] for g in gpus] == ["0000:01:00.0", "0000:02:00.0", "0000:05:00.0"]
    found = items_from_facts(gpus)
    assert [g["pci_bus_id"] for g in found] == ["0000:01:00.0", "0000:02:00.0"]
    assert "pci_subsystem_id" not in found[1]
    resolved = [resolve_gpu(g)[0]["architecture"] for g in found]
    assert resolved == ["Hopper", "Volta"]


def test_item_from_fact_keeps_only_known_identification():
    assert item_from_fact({"pci_device_id": None, "compute_capability": "unknown", "name": "unknown"}) is None
    assert item_from_fact("0x2335") is None
    assert item_from_fact({"compute_capability": "9.0", "name": "NVIDIA H200", "uuid": "GPU-1"}) == {
        "compute_capability": "9.0",
        "name": "NVIDIA H200",
    }


def test_item_from_fact_carries_the_pci_ids_name():
    fact = {"pci_device_id": "0x3FFF", "pci_ids_name": "GR150 [Future Rubin]", "name": "unknown"}
    assert item_from_fact(fact) == {"pci_device_id": "0x3FFF", "pci_ids_name": "GR150 [Future Rubin]"}
    assert item_from_fact({"pci_device_id": "0x2335", "pci_ids_name": None}) == {"pci_device_id": "0x2335"}
    assert resolve_gpu(item_from_fact(fact))[0]["architecture"] == "Rubin"


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"pci_device_id": "0x1DB5"}, ("Tesla V100-SXM2-32GB", "Volta", "7.0", "proprietary", 580)),
        ({"pci_device_id": "1db5"}, ("Tesla V100-SXM2-32GB", "Volta", "7.0", "proprietary", 580)),
        ({"pci_device_id": 0x1DB5}, ("Tesla V100-SXM2-32GB", "Volta", "7.0", "proprietary", 580)),
        ({"pci_device_id": "10de:1db5"}, ("Tesla V100-SXM2-32GB", "Volta", "7.0", "proprietary", 580)),
        ({"pci_device_id": "0x1DB510DE"}, ("Tesla V100-SXM2-32GB", "Volta", "7.0", "proprietary", 580)),
        (
            {"pci_device_id": "0x2335", "pci_subsystem_id": "0x18BF10DE"},
            ("NVIDIA H200", "Hopper", "9.0", "either", None),
        ),
        (
            {"pci_device_id": "0x2335", "pci_subsystem_id": "10de:18bf"},
            ("NVIDIA H200", "Hopper", "9.0", "either", None),
        ),
        (
            {"pci_device_id": "0x2342", "pci_subsystem_id": "0x1809"},
            ("NVIDIA GH200 480GB", "Hopper", "9.0", "open", None),
        ),
        ({"pci_device_id": "0x2901"}, ("NVIDIA B200", "Blackwell", "10.0", "open", None)),
        ({"pci_device_id": "0x1EB8"}, ("Tesla T4", "Turing", "7.5", "either", None)),
        ({"pci_device_id": "0x20B2"}, ("NVIDIA A100-SXM4-80GB", "Ampere", "8.0", "either", None)),
        ({"pci_device_id": "0x102D"}, ("Tesla K80", "Kepler", "3.7", "proprietary", 470)),
        ({"pci_device_id": "0x15F8"}, ("Tesla P100-PCIE-16GB", "Pascal", "6.0", "proprietary", 580)),
        ({"pci_device_id": "0x17FD"}, ("Tesla M40", "Maxwell", "5.2", "proprietary", 580)),
        ({"pci_device_id": "0x06C0"}, ("GeForce GTX 480", "Fermi", "2.0", "proprietary", 390)),
        ({"pci_device_id": "0x0020"}, ("RIVA TNT", "Celsius", None, "proprietary", 71)),
        (
            {"compute_capability": "7.0"},
            ("GPU with compute capability 7.0", "Volta", "7.0", "proprietary", 580),
        ),
        ({"compute_capability": 9.0}, ("GPU with compute capability 9.0", "Hopper", "9.0", "either", None)),
        (
            {"compute_capability": "sm_120"},
            ("GPU with compute capability 12.0", "Blackwell", "12.0", "open", None),
        ),
        (
            {"compute_capability": "100"},
            ("GPU with compute capability 10.0", "Blackwell", "10.0", "open", None),
        ),
        ({"name": "Tesla V100-SXM2-32GB"}, ("Tesla V100-SXM2-32GB", "Volta", "7.0", "proprietary", 580)),
        ({"name": "nvidia h200"}, ("nvidia h200", "Hopper", "9.0", "either", None)),
        ({"name": "H200"}, ("H200", "Hopper", "9.0", "either", None)),
        ({"name": "V100"}, ("V100", "Volta", "7.0", "proprietary", 580)),
    ],
)
def test_resolve(item, expected):
    gpu, warnings = resolve_gpu(item)
    assert warnings == []
    got = (gpu["name"], gpu["architecture"], gpu["compute_capability"], gpu["kernel_module_support"])
    assert got + (gpu["legacy_branch"],) == expected


def test_data_center_flags():
    assert resolve_gpu({"pci_device_id": "0x2B85"})[0]["data_center"] is False  # RTX 5090
    assert resolve_gpu({"name": "Tesla T4"})[0]["data_center"] is True
    assert resolve_gpu({"compute_capability": "9.0"})[0]["data_center"] is None
    assert resolve_gpu({"compute_capability": "9.0", "name": "NVIDIA H100"})[0]["data_center"] is True


def test_unknown_id_without_a_pci_ids_name():
    gpu, warnings = resolve_gpu({"pci_device_id": "0x2FFF"})
    assert gpu["architecture"] == "unknown"
    assert gpu["kernel_module_support"] == "unknown"
    assert "PCI device 0x2FFF is not in the knowledge base" in warnings[0]
    assert "(or its pci.ids name as pci_ids_name) to check it" in warnings[0]


def test_unknown_id_with_a_pci_ids_name_of_an_unknown_chip():
    gpu, warnings = resolve_gpu({"pci_device_id": "0x2FFF", "pci_ids_name": "Device 2fff"})
    assert (gpu["name"], gpu["architecture"], gpu["source"]) == ("PCI device 0x2FFF", "unknown", "none")
    assert "its chip is unknown" in warnings[0]
    assert "pci_ids_name" not in warnings[0]


def test_unknown_id_takes_its_chip_from_the_pci_ids_name():
    """The name probe/pciids.py found in the host's pci.ids comes with the item: nothing is read here."""
    gpu, warnings = resolve_gpu({"pci_device_id": "0x3FFF", "pci_ids_name": "GR150 [Future Rubin]"})
    assert (gpu["architecture"], gpu["compute_capability"], gpu["kernel_module_support"]) == (
        "Rubin",
        "10.7",
        "open",
    )
    assert "inferred from pci.ids" in warnings[0]
    assert gpu["name"] == "PCI device 0x3FFF (GR150 [Future Rubin])"
    assert gpu["source"] == "pci.ids"


def test_pci_ids_chip():
    assert gpus.pci_ids_chip("GH100 [H200 SXM 141GB]") == "GH100"
    assert gpus.pci_ids_chip(" GB202 [GeForce RTX 5090]") == "GB202"
    assert gpus.pci_ids_chip("Device 2fff") is None
    assert gpus.pci_ids_chip(None) is None
    assert gpus.pci_ids_chip(42) is None


def test_wants_a_pci_ids_name_only_where_the_tables_cannot_place_the_device():
    assert gpus.wants_pci_ids_name(0x2335) is False  # H200: in the table and in an id range
    assert gpus.wants_pci_ids_name(0x3FFF) is True  # not in the table
    assert gpus.wants_pci_ids_name(0x23F0) is True  # not in the table (an id range knows its chip)
    assert gpus.wants_pci_ids_name(0x0F02) is True  # GeForce GT 730 (390.xx): in the table, in no id range


def test_a_known_legacy_id_outside_the_ranges_takes_its_compute_capability_from_the_name():
    gpu, _warnings = resolve_gpu({"pci_device_id": "0x0F02"})
    assert (gpu["architecture"], gpu["compute_capability"]) == ("Fermi", None)
    gpu, warnings = resolve_gpu({"pci_device_id": "0x0F02", "pci_ids_name": "GF108 [GeForce GT 730]"})
    assert (gpu["name"], gpu["architecture"], gpu["compute_capability"]) == ("GeForce GT 730", "Fermi", "2.1")
    assert warnings == []


def test_unknown_id_in_a_known_range():
    gpu, warnings = resolve_gpu({"pci_device_id": "0x23F0"})
    assert gpu["architecture"] == "Hopper"
    assert "inferred from device-id range" in warnings[0]


def test_unknown_cc_and_name():
    gpu, warnings = resolve_gpu({"compute_capability": "7.7"})
    assert gpu["architecture"] == "unknown"
    assert "compute capability 7.7 is not in the knowledge base" in warnings[0]
    gpu, warnings = resolve_gpu({"name": "Voodoo 2"})
    assert gpu["architecture"] == "unknown"
    assert "no GPU of that name" in warnings[0]
    gpu, warnings = resolve_gpu({"name": "GeForce"})
    assert gpu["architecture"] == "unknown"
    assert "matches GPUs of different kinds" in warnings[0]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("0x2335", r"^gpus\[3\]: '0x2335' is not a mapping"),
        ({}, r"^gpus\[3\]: \{\} names no GPU"),
        ({"pci_device_id": "0xZZZZ"}, r"^gpus\[3\]\.pci_device_id: '0xZZZZ' is not a PCI id"),
        ({"pci_device_id": 0x12345}, r"^gpus\[3\]\.pci_device_id: .* is not a 16-bit PCI id"),
        ({"pci_device_id": True}, r"^gpus\[3\]\.pci_device_id: True is not a PCI id"),
        ({"pci_device_id": "0x2335", "pci_subsystem_id": "x"}, r"^gpus\[3\]\.pci_subsystem_id: 'x'"),
        (
            {"compute_capability": "nine"},
            r"^gpus\[3\]\.compute_capability: 'nine' is not a compute capability",
        ),
        ({"compute_capability": "9"}, r"^gpus\[3\]\.compute_capability: '9' is not a compute capability"),
    ],
)
def test_bad_items(item, message):
    with pytest.raises(GpuSpecError, match=message):
        resolve_gpu(item, 3)


def test_parsers():
    assert parse_pci_id("  0x2335 ", "p") == 0x2335
    assert parse_compute_capability("compute_90", "p") == "9.0"
    assert parse_compute_capability("12.1", "p") == "12.1"
    with pytest.raises(GpuSpecError, match="accepted forms"):
        parse_pci_id("x" * 100, "p")


def _compute_capability_through_versions(value):
    """What parse_compute_capability answered when it parsed with versions.parse_version (before kb/)."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        sm = re.match(r"^(?:sm_?|compute_)?([1-9][0-9]?)([0-9])[a-z]?$", str(value).strip(), re.IGNORECASE)
        if sm and (not isinstance(value, str) or "." not in value):
            return f"{int(sm.group(1))}.{sm.group(2)}"
    try:
        version = parse_version(value, "p", min_parts=2, max_parts=2)
    except VersionError:
        return "error"
    return f"{version.major}.{version.minor}"


CC_TEXTS = (
    "9.0 12.1 09.00 9-0 R9.0 r12.1 9.0.1 9 9. .9 9..0 9.0a nine sm_90 SM_120 compute_90 sm_90a 90 100 1 0.0"
)
CC_VALUES = [*CC_TEXTS.split(), "", " ", " 9.0 ", "9.0\n", "1234567.0", "\u0669.\u0660", 9.0, 12.1, 12.10]
CC_VALUES += [-9.0, float("nan"), float("inf"), 1e20, 90, 120, 5, 0, True, None, [9, 0], {"cc": "9.0"}]


@pytest.mark.parametrize("value", CC_VALUES)
def test_compute_capability_parses_as_it_did_through_versions(value):
    """kb/ imports only kb/: the compute capability is parsed here, with versions.parse_version's grammar."""
    try:
        got = parse_compute_capability(value, "p")
    except GpuSpecError as err:
        assert str(err).startswith(f"p: {value!r} is not a compute capability; accepted forms: ")
        got = "error"
    assert got == _compute_capability_through_versions(value)


def test_lookup_subsystem_without_vendor():
    assert gpus.lookup_device(0x2342, None, 0x1809)["name"] == "NVIDIA GH200 480GB"
    assert gpus.lookup_device(0x2342, 0x1234, 0x1809)["name"] == "NVIDIA GH200 120GB"  # base entry
    assert gpus.lookup_device(0xFFFF) is None


def test_h200_nvidia_smi_agrees():
    """What nvidia-smi reported on the real H200 is what the knowledge base resolves its PCI ids to."""
    header, row = (FIXTURE / "nvidia-smi-query-gpu.csv").read_text(encoding="ascii").splitlines()[:2]
    fields = dict(zip([h.strip() for h in header.split(",")], [v.strip() for v in row.split(",")]))
    gpu, _w = resolve_gpu(
        {"pci_device_id": fields["pci.device_id"], "pci_subsystem_id": fields["pci.sub_device_id"]}
    )
    assert (gpu["name"], gpu["compute_capability"]) == (fields["name"], fields["compute_cap"])
    assert (gpu["architecture"], gpu["kernel_module_support"]) == ("Hopper", "either")
