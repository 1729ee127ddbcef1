"""The GPUs and the call the compatibility tests share (test_compat*.py): each GPU as the facts give it (PCI
IDs the knowledge base resolves) or by compute capability alone, and compat.check on a fixed day."""

import datetime

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.compat import check

TODAY = datetime.date(2026, 11, 30)
H200 = {"pci_device_id": "0x2335", "pci_subsystem_id": "0x18BF"}
V100 = {"pci_device_id": "0x1DB5"}
K80 = {"pci_device_id": "0x102D"}
B200 = {"pci_device_id": "0x2901"}
RTX5090 = {"pci_device_id": "0x2B85"}
T4 = {"pci_device_id": "0x1EB8"}
RUBIN = {"compute_capability": "10.7"}
THOR = {"compute_capability": "11.0"}
VOLTA = {"compute_capability": "7.0"}


def run(today=TODAY, **kwargs):
    """compat.check(**kwargs) on ``today`` (end-of-life rules depend on the date)."""
    return check(today=today, **kwargs)
