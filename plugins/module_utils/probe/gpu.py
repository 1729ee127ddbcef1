# Copyright: gpufleet contributors
# Apache-2.0
"""GPUs: sysfs PCI (works without a driver), enriched by NVML through ctypes, else `nvidia-smi`."""

from __future__ import annotations

import contextlib
import ctypes
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import arch as kb_arch
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpus as kb_gpus
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import pciids as probe_pciids
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import (
    UNKNOWN,
    run_command,
    run_isolated,
    which,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.ldcache import NVML_SONAME

NVIDIA_VENDOR = "0x10de"
DISPLAY_CLASS = "0x03"  # PCI base class 0x03, display controller (0x0300 VGA, 0x0302 3D, 0x0380 other)
NVSWITCH_CLASS = "0x0680"  # bridge, other: NVSwitch
PCI_DEVICES = "/sys/bus/pci/devices"
_PCI_ID = re.compile(r"^0x[0-9a-f]{4}$")


def _identify(item):
    """kb/gpus.resolve_gpu of an observed value; None when the value is not one it can read."""
    try:
        gpu, _warnings = kb_gpus.resolve_gpu(item)
    except kb_gpus.GpuSpecError:  # a probe never fails for an odd value it observed
        return None
    return gpu


def _device_item(device_id, pci_ids_name=None):
    """The ``gpus`` item of an observed PCI device id (with its pci.ids name when the probe found one)."""
    item = {"pci_device_id": device_id}
    if pci_ids_name:
        item["pci_ids_name"] = pci_ids_name
    return item


def architecture(compute_capability, device_id=None, name=None, pci_ids_name=None):
    """(architecture, reason): the device/CC identification of kb/gpus.py, else kb/arch.py by CC family."""
    if compute_capability and compute_capability != UNKNOWN:
        known = _identify({"compute_capability": compute_capability})
        if known and known.get("architecture") not in (None, UNKNOWN):
            return known["architecture"], None
    if device_id and device_id != UNKNOWN:
        known = _identify(_device_item(device_id, pci_ids_name))
        if known and known.get("architecture") not in (None, UNKNOWN):
            return known["architecture"], None
    if compute_capability and compute_capability != UNKNOWN:
        arch = kb_arch.cc_architecture(compute_capability, by_major=True)
        if arch:
            return arch, None
        return UNKNOWN, f"compute capability {compute_capability} is not in the architecture table"
    return (
        UNKNOWN,
        "compute capability unknown (no NVML, no nvidia-smi) and device id not in the knowledge base",
    )


def identify_offline(gpu):
    """Name and compute capability from the knowledge base by PCI device id (no driver needed)."""
    if gpu.get("device_id") in (None, UNKNOWN):
        return
    known = _identify(_device_item(gpu["device_id"], gpu.get("pci_ids_name")))
    if not known or known.get("source") in (None, "none"):
        return
    if gpu["name"] == UNKNOWN and known.get("name"):
        gpu["name"] = known["name"]
    if gpu["compute_capability"] == UNKNOWN and known.get("compute_capability"):
        gpu["compute_capability"] = known["compute_capability"]


def normalize_bus_id(bus_id):
    """'00000000:00:06.0' or '0000:00:06.0' -> '0000:00:06.0'."""
    match = re.match(r"^([0-9a-fA-F]+):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$", (bus_id or "").strip())
    if not match:
        return (bus_id or "").strip().lower()
    domain = int(match.group(1), 16) & 0xFFFF
    return f"{domain:04x}:{match.group(2).lower()}:{match.group(3).lower()}.{match.group(4)}"


def _attr(root, device, name):
    text, _reason = root.read_text(f"{PCI_DEVICES}/{device}/{name}", limit=4096)
    return text.strip().lower() if text else None


def _pci_id(value):
    """'0x18bf' -> '0x18BF' (the `gpus` item form of nvidia_compat); None when not a 16-bit PCI id."""
    return "0x" + value[2:].upper() if value and _PCI_ID.match(value) else None


def new_gpu(source, **fields):
    """One GPU entry of the facts (the one schema, for sysfs and NVML/nvidia-smi GPUs alike)."""
    gpu = {
        "index": None,
        "name": UNKNOWN,
        "pci_bus_id": UNKNOWN,
        "vendor_id": NVIDIA_VENDOR,
        "device_id": UNKNOWN,
        "subsystem_vendor_id": UNKNOWN,
        "subsystem_device_id": UNKNOWN,
        "pci_class": UNKNOWN,
        "kernel_driver": UNKNOWN,
        "architecture": UNKNOWN,
        "compute_capability": UNKNOWN,
        "memory_mib": None,
        "uuid": UNKNOWN,
        "vbios": UNKNOWN,
        "persistence_mode": None,
        "mig_mode": UNKNOWN,
        "source": source,
        "pci_ids_name": None,
        "reasons": {},
    }
    gpu.update(fields)
    gpu["pci_device_id"] = _pci_id(gpu["device_id"])
    gpu["pci_subsystem_vendor_id"] = _pci_id(gpu["subsystem_vendor_id"])
    gpu["pci_subsystem_id"] = _pci_id(gpu["subsystem_device_id"])
    return gpu


def _sysfs_gpu(root, device, pci_class):
    driver = root.readlink(f"{PCI_DEVICES}/{device}/driver")
    return new_gpu(
        "sysfs",
        pci_bus_id=normalize_bus_id(device),
        device_id=_attr(root, device, "device") or UNKNOWN,
        subsystem_vendor_id=_attr(root, device, "subsystem_vendor") or UNKNOWN,
        subsystem_device_id=_attr(root, device, "subsystem_device") or UNKNOWN,
        pci_class=pci_class,
        kernel_driver=driver.rstrip("/").split("/")[-1] if driver else "none",
    )


def scan_pci(root):
    """(gpus, nvswitch_count, reason) from sysfs: NVIDIA display controllers and NVSwitches."""
    names, reason = root.listdir(PCI_DEVICES)
    if names is None:
        if not root.exists(PCI_DEVICES):
            return [], 0, f"{PCI_DEVICES} not present under root"
        return [], 0, reason
    gpus = []
    nvswitches = 0
    for device in names:
        if _attr(root, device, "vendor") != NVIDIA_VENDOR:
            continue
        pci_class = _attr(root, device, "class") or ""
        if pci_class[:6] == NVSWITCH_CLASS:
            nvswitches += 1
        elif pci_class[:4] == DISPLAY_CLASS:
            gpus.append(_sysfs_gpu(root, device, pci_class))
    return gpus, nvswitches, None


# ---------------------------------------------------------------- NVML (runs in a forked child)
class _PciInfo(ctypes.Structure):  # nvmlPciInfo_t (v3)
    _fields_ = (
        ("busIdLegacy", ctypes.c_char * 16),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pciDeviceId", ctypes.c_uint),
        ("pciSubSystemId", ctypes.c_uint),
        ("busId", ctypes.c_char * 32),
    )


class _Memory(ctypes.Structure):  # nvmlMemory_t
    _fields_ = (("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong))


NVML_ERROR_NOT_SUPPORTED = 3


def _nvml_text(getter, handle, buf):
    return buf.value.decode() if getter(handle, buf, 96) == 0 else None


def _nvml_mig_mode(nvml, handle):
    current, pending = ctypes.c_uint(), ctypes.c_uint()
    rc = nvml.nvmlDeviceGetMigMode(handle, ctypes.byref(current), ctypes.byref(pending))
    if rc == 0:
        return "enabled" if current.value == 1 else "disabled"
    return "unsupported" if rc == NVML_ERROR_NOT_SUPPORTED else None


def _nvml_gpu(nvml, handle, index, buf):
    """What NVML says about one device (keys only for the values it reported)."""
    gpu = {
        "index": index,
        "name": _nvml_text(nvml.nvmlDeviceGetName, handle, buf),
        "uuid": _nvml_text(nvml.nvmlDeviceGetUUID, handle, buf),
        "vbios": _nvml_text(nvml.nvmlDeviceGetVbiosVersion, handle, buf),
        "mig_mode": _nvml_mig_mode(nvml, handle),
    }
    pci = _PciInfo()
    if nvml.nvmlDeviceGetPciInfo_v3(handle, ctypes.byref(pci)) == 0:
        gpu["pci_bus_id"] = pci.busId.decode()
        gpu["pci_device_id"] = pci.pciDeviceId
        gpu["pci_subsystem_id"] = pci.pciSubSystemId
    memory = _Memory()
    if nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory)) == 0:
        gpu["memory_mib"] = memory.total // (1024 * 1024)
    mode = ctypes.c_uint()
    if nvml.nvmlDeviceGetPersistenceMode(handle, ctypes.byref(mode)) == 0:
        gpu["persistence_mode"] = mode.value == 1
    major, minor = ctypes.c_int(), ctypes.c_int()
    if nvml.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major), ctypes.byref(minor)) == 0:
        gpu["compute_capability"] = f"{major.value}.{minor.value}"
    return {k: v for k, v in gpu.items() if v is not None}


def _nvml_system(nvml, buf):
    result = {"driver_version": None, "cuda_driver_version_int": None, "gpus": []}
    if nvml.nvmlSystemGetDriverVersion(buf, 96) == 0:
        result["driver_version"] = buf.value.decode()
    cuda_version = ctypes.c_int()
    getter = getattr(nvml, "nvmlSystemGetCudaDriverVersion_v2", None) or nvml.nvmlSystemGetCudaDriverVersion
    if getter(ctypes.byref(cuda_version)) == 0:
        result["cuda_driver_version_int"] = cuda_version.value
    return result


def nvml_query(library=NVML_SONAME):
    """Everything NVML says about the GPUs (call through run_isolated: it loads a vendor library)."""
    nvml = ctypes.CDLL(library)
    rc = nvml.nvmlInit_v2()
    if rc != 0:
        return {"error": f"nvmlInit_v2 returned {rc}"}
    try:
        buf = ctypes.create_string_buffer(96)
        result = _nvml_system(nvml, buf)
        count = ctypes.c_uint()
        rc = nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
        if rc != 0:
            result["error"] = f"nvmlDeviceGetCount_v2 returned {rc}"
            return result
        for index in range(count.value):
            handle = ctypes.c_void_p()
            if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) == 0:
                result["gpus"].append(_nvml_gpu(nvml, handle, index, buf))
        return result
    finally:
        nvml.nvmlShutdown()


SMI_FIELDS = (
    "index",
    "name",
    "pci.bus_id",
    "pci.device_id",
    "pci.sub_device_id",
    "driver_version",
    "vbios_version",
    "compute_cap",
    "memory.total",
    "persistence_mode",
    "mig.mode.current",
    "uuid",
)


def _na(value):
    value = (value or "").strip()
    return None if not value or value.startswith("[") or value in ("N/A", "[N/A]") else value


def _smi_gpu(values):
    """One GPU of the nvidia-smi CSV ({field: text}) in nvml_query()'s form."""
    gpu = {}
    if _na(values.get("index")) and values["index"].isdigit():
        gpu["index"] = int(values["index"])
    for key, field in (
        ("name", "name"),
        ("pci_bus_id", "pci.bus_id"),
        ("vbios", "vbios_version"),
        ("uuid", "uuid"),
        ("compute_capability", "compute_cap"),
    ):
        if _na(values.get(field)):
            gpu[key] = values[field]
    for key, field in (("pci_device_id", "pci.device_id"), ("pci_subsystem_id", "pci.sub_device_id")):
        if _na(values.get(field)):
            with contextlib.suppress(ValueError):
                gpu[key] = int(values[field], 16)
    memory = re.match(r"^(\d+)", _na(values.get("memory.total")) or "")
    if memory:
        gpu["memory_mib"] = int(memory.group(1))
    persistence = _na(values.get("persistence_mode"))
    if persistence:
        gpu["persistence_mode"] = persistence.lower() == "enabled"
    mig = (values.get("mig.mode.current") or "").strip()
    if mig.lower() in ("enabled", "disabled"):
        gpu["mig_mode"] = mig.lower()
    elif mig in ("[N/A]", "N/A"):
        gpu["mig_mode"] = "unsupported"
    return gpu


def parse_smi_csv(text, fields=SMI_FIELDS):
    """nvidia-smi --query-gpu csv (with or without header/units) -> result like nvml_query()."""
    result = {"driver_version": None, "cuda_driver_version_int": None, "gpus": []}
    for line in (text or "").splitlines():
        if not line.strip() or line.startswith("index"):
            continue
        values = dict(zip(fields, [v.strip() for v in line.split(",")]))
        if _na(values.get("driver_version")):
            result["driver_version"] = values["driver_version"]
        result["gpus"].append(_smi_gpu(values))
    return result


def smi_query(timeout=10.0):
    """(result, reason) from nvidia-smi; retries without compute_cap for old drivers."""
    smi = which("nvidia-smi")
    if smi is None:
        return None, "nvidia-smi not found"
    fields = list(SMI_FIELDS)
    for _attempt in range(2):
        rc, out, _err, reason = run_command(
            [smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"], timeout=timeout
        )
        if rc == 0:
            return parse_smi_csv(out, fields), None
        if "compute_cap" in fields and "compute_cap" in (reason or "") + out:
            fields.remove("compute_cap")
            continue
        break
    return None, reason


MERGED_KEYS = (
    "index",
    "name",
    "uuid",
    "vbios",
    "memory_mib",
    "persistence_mode",
    "mig_mode",
    "compute_capability",
)


def _runtime_only_gpu(bus, data, source):
    """A GPU NVML/nvidia-smi reports but sysfs does not show (e.g. a container without /sys/bus/pci)."""
    device = data.get("pci_device_id")
    subsystem = data.get("pci_subsystem_id")
    known = isinstance(subsystem, int)
    return new_gpu(
        source,
        pci_bus_id=bus or UNKNOWN,
        device_id=("0x%04x" % (device >> 16)) if isinstance(device, int) else UNKNOWN,
        subsystem_vendor_id=("0x%04x" % (subsystem & 0xFFFF)) if known else UNKNOWN,
        subsystem_device_id=("0x%04x" % (subsystem >> 16)) if known else UNKNOWN,
        reasons={"pci_class": f"GPU not visible in sysfs ({PCI_DEVICES} under root)"},
    )


def merge(sysfs_gpus, enriched, source):
    """Enrich sysfs GPUs with NVML/nvidia-smi data (matched by PCI bus id); keep GPUs only one side saw."""
    by_bus = {g["pci_bus_id"]: g for g in sysfs_gpus}
    for data in enriched:
        bus = normalize_bus_id(data.get("pci_bus_id", ""))
        gpu = by_bus.get(bus)
        if gpu is None:
            gpu = _runtime_only_gpu(bus, data, source)
            by_bus[gpu["pci_bus_id"]] = gpu
        gpu["source"] = source
        for key in MERGED_KEYS:
            if data.get(key) is not None:
                gpu[key] = data[key]
    return [by_bus[k] for k in sorted(by_bus)]


def name_from_pci_ids(root, gpus):
    """``pci_ids_name`` of each GPU whose device id the knowledge base cannot place alone (probe/pciids.py);
    the others keep None."""
    wanted = [
        g for g in gpus if g["pci_device_id"] and kb_gpus.wants_pci_ids_name(int(g["pci_device_id"], 16))
    ]
    if not wanted:
        return
    found, reason = probe_pciids.names(root, {int(g["pci_device_id"], 16) for g in wanted})
    for gpu in wanted:
        gpu["pci_ids_name"] = found.get(int(gpu["pci_device_id"], 16))
        if gpu["pci_ids_name"] is None:
            gpu["reasons"]["pci_ids_name"] = reason


def finish(root, gpus, enrich_reason):
    """pci.ids names, architecture names and reasons for every field still unknown."""
    name_from_pci_ids(root, gpus)
    for gpu in gpus:
        identify_offline(gpu)
        arch, reason = architecture(
            gpu["compute_capability"], gpu.get("device_id"), gpu.get("name"), gpu["pci_ids_name"]
        )
        gpu["architecture"] = arch
        if reason:
            gpu["reasons"]["architecture"] = reason
        for key in (
            "index",
            "name",
            "compute_capability",
            "memory_mib",
            "uuid",
            "vbios",
            "persistence_mode",
            "mig_mode",
        ):
            if gpu[key] in (None, UNKNOWN) and key not in gpu["reasons"]:
                gpu["reasons"][key] = enrich_reason or "not reported by {}".format(gpu["source"])
    return gpus


def probe(root, live, timeout=10.0):
    """(gpus, nvswitch_count, driver_info, reasons): driver_info is what NVML/nvidia-smi said globally."""
    reasons = []
    gpus, nvswitches, reason = scan_pci(root)
    if reason:
        reasons.append(reason)
    driver_info = {"driver_version": None, "cuda_driver_version_int": None, "source": None, "reason": None}
    if not live:
        enrich_reason = "runtime probe skipped: root is not /"
        driver_info["reason"] = enrich_reason
        return finish(root, gpus, enrich_reason), nvswitches, driver_info, reasons
    result, nvml_reason = run_isolated(nvml_query, timeout=timeout)
    source = "nvml"
    if result and result.get("error") and not result.get("gpus"):
        nvml_reason, result = result["error"], None
    if result is None:
        result, smi_reason = smi_query(timeout=timeout)
        source = "nvidia-smi"
        if result is None:
            enrich_reason = f"NVML: {nvml_reason}; nvidia-smi: {smi_reason}"
            driver_info["reason"] = enrich_reason
            return finish(root, gpus, enrich_reason), nvswitches, driver_info, reasons
    gpus = merge(gpus, result.get("gpus", []), source)
    driver_info.update(
        driver_version=result.get("driver_version"),
        cuda_driver_version_int=result.get("cuda_driver_version_int"),
        source=source,
    )
    return finish(root, gpus, None), nvswitches, driver_info, reasons
