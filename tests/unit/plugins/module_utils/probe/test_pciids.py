"""probe_pciids: NVIDIA device names from the pci.ids of a fake root tree; the GPU probe's pci_ids_name."""

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import common as probe_common
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import gpu as probe_gpu
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import pciids as probe_pciids
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root

from tests.data.facts import fakeroot

PCI_IDS = (
    "# comment\n10de  NVIDIA Corporation\n\t2335  GH100 [H200 SXM 141GB]\n\t3fff  GR150 [Future Rubin]\n"
    "\t\t10de 1234  some subsystem\n\t3FFE  GB202 [Upper case id]\n10df  Emulex\n\t3ffd  Not NVIDIA\n"
)


def test_nvidia_devices_of_a_pci_ids_text():
    assert probe_pciids.nvidia_devices(PCI_IDS) == {
        0x2335: "GH100 [H200 SXM 141GB]",
        0x3FFF: "GR150 [Future Rubin]",
        0x3FFE: "GB202 [Upper case id]",
    }


def test_names_under_root(tmp_path):
    fakeroot.write(tmp_path, "/usr/share/misc/pci.ids", PCI_IDS)
    assert probe_pciids.names(Root(str(tmp_path)), {0x3FFF}) == ({0x3FFF: "GR150 [Future Rubin]"}, None)
    found, reason = probe_pciids.names(Root(str(tmp_path)), {0x3FFF, 0x3FFD})
    assert found == {0x3FFF: "GR150 [Future Rubin]"}
    assert reason == "not listed in /usr/share/misc/pci.ids"


def test_names_from_the_next_file_that_lists_the_device(tmp_path):
    fakeroot.write(tmp_path, "/usr/share/misc/pci.ids", "10de  NVIDIA Corporation\n\t2335  GH100 [H200]\n")
    fakeroot.write(tmp_path, "/usr/share/hwdata/pci.ids", PCI_IDS)
    found, reason = probe_pciids.names(Root(str(tmp_path)), {0x2335, 0x3FFF})
    assert found == {0x2335: "GH100 [H200]", 0x3FFF: "GR150 [Future Rubin]"}
    assert reason is None


def test_no_pci_ids_under_root(tmp_path):
    found, reason = probe_pciids.names(Root(str(tmp_path)), {0x3FFF})
    assert found == {}
    assert reason.startswith("no pci.ids under root (/usr/share/misc/pci.ids, ")


def test_unreadable_pci_ids(tmp_path, monkeypatch):
    fakeroot.write(tmp_path, "/usr/share/misc/pci.ids", PCI_IDS)
    real_open = probe_common.open_file

    def open_file(path, mode="rb"):
        if path.endswith("/pci.ids"):
            raise PermissionError(13, "Permission denied", path)
        return real_open(path, mode)

    monkeypatch.setattr(probe_common, "open_file", open_file)
    assert probe_pciids.names(Root(str(tmp_path)), {0x3FFF}) == (
        {},
        "cannot read /usr/share/misc/pci.ids: Permission denied",
    )


def _unknown_gpu(root, device):
    dev = "/sys/bus/pci/devices/0000:01:00.0"
    fakeroot.write(root, f"{dev}/vendor", "0x10de\n")
    fakeroot.write(root, f"{dev}/class", "0x030200\n")
    fakeroot.write(root, f"{dev}/device", device + "\n")


def test_gpu_probe_names_an_unknown_device_from_pci_ids_under_root(tmp_path):
    _unknown_gpu(tmp_path, "0x3fff")
    fakeroot.write(tmp_path, "/usr/share/misc/pci.ids", PCI_IDS)
    (gpu,), _, _, _ = probe_gpu.probe(Root(str(tmp_path)), live=False)
    assert gpu["pci_ids_name"] == "GR150 [Future Rubin]"
    assert (gpu["name"], gpu["architecture"], gpu["compute_capability"]) == (
        "PCI device 0x3FFF (GR150 [Future Rubin])",
        "Rubin",
        "10.7",
    )
    assert "pci_ids_name" not in gpu["reasons"]


def test_gpu_probe_says_why_an_unknown_device_has_no_pci_ids_name(tmp_path):
    _unknown_gpu(tmp_path, "0x3fff")
    (gpu,), _, _, _ = probe_gpu.probe(Root(str(tmp_path)), live=False)
    assert gpu["pci_ids_name"] is None
    assert gpu["reasons"]["pci_ids_name"].startswith("no pci.ids under root")
    assert gpu["architecture"] == "unknown"


def test_gpu_probe_reads_no_pci_ids_for_a_device_the_tables_know(tmp_path, monkeypatch):
    fakeroot.h200(tmp_path)
    fakeroot.write(tmp_path, "/usr/share/misc/pci.ids", PCI_IDS)
    monkeypatch.setattr(probe_pciids, "names", lambda *args, **kwargs: 1 / 0)
    (gpu,), _, _, _ = probe_gpu.probe(Root(str(tmp_path)), live=False)
    assert (gpu["name"], gpu["pci_ids_name"]) == ("NVIDIA H200", None)
    assert "pci_ids_name" not in gpu["reasons"]
