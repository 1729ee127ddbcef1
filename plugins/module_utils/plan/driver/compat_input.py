# Copyright: gpufleet contributors
# Apache-2.0
"""nvidia_compat's inputs from the driver request and the facts, and its messages in the role's words.

Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.state import section


def compat_gpus(request_gpus, facts):
    """GPU items for plan.compat.check: the request's (nvidia_driver_gpus) when given, else the facts'."""
    if request_gpus:
        return list(request_gpus)
    items = []
    for gpu in (facts or {}).get("gpus") or []:
        known = {k: v for k, v in gpu.items() if v not in (None, "", "unknown")}
        device = known.get("pci_device_id") or known.get("device_id")
        if device:
            item = {"pci_device_id": device}
            subsystem = known.get("pci_subsystem_id") or known.get("subsystem_device_id")
            if subsystem:
                item["pci_subsystem_id"] = subsystem
            if known.get("pci_ids_name"):
                item["pci_ids_name"] = known["pci_ids_name"]
        elif known.get("compute_capability"):
            item = {"compute_capability": known["compute_capability"]}
        else:
            item = {"name": known.get("name") or "unknown"}
        items.append(item)
    return items


def compat_os(facts):
    """{distribution, version} for plan.compat.check from facts host.os (None when unknown)."""
    os_info = section(section(facts, "host"), "os")
    if not os_info.get("distribution"):
        return None
    return {
        "distribution": str(os_info["distribution"]).lower(),
        "version": str(os_info.get("version") or ""),
    }


_COMPAT_NAMES = {
    "cuda_version": "nvidia_driver_cuda_version",
    "driver_branch": "nvidia_driver_branch",
    "driver_version": "nvidia_driver_version",
    "kernel_module": "nvidia_driver_kernel_module",
}
_COMPAT_NAME_RE = re.compile(r"(?<![\w.])(cuda_version|driver_branch|driver_version|kernel_module)\b")


def user_words(text, gave_gpus=False):
    """nvidia_compat's parameter names in a message -> the role's variables (gpus[i] only when given)."""
    text = _COMPAT_NAME_RE.sub(lambda m: _COMPAT_NAMES[m.group(1)], str(text))
    if gave_gpus:
        text = re.sub(r"(?<![\w.])gpus\[", "nvidia_driver_gpus[", text)
    return text
