# Copyright: gpufleet contributors
# Apache-2.0
"""GPU identification: PCI ids / compute capability / name -> name, architecture, CC, module support.

Stdlib only, Python >= 3.9, and nothing outside kb/: the probes (target) and the plans (controller) both
identify GPUs here. Pure identification through the kb tables (gpu_ids.py, arch.py): nothing here reads the
host (the GPUs of a host are ``ansible_facts.nvidia.gpus``, read by probe/gpu.py; the pci.ids name of a
device the tables cannot place comes with the item, read by probe/pciids.py).

Public API (stable; documented in docs/compat.md):
  items_from_facts(facts_gpus) -> [gpus items]  (item_from_fact(gpu) -> item or None)
  resolve_gpu(item, index=0) -> (gpu dict, [warnings]); raises GpuSpecError
  lookup_device(devid, subvendor=None, subdevice=None) -> table entry dict or None
  parse_pci_id(value, param) -> int
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import arch as kb_arch
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpu_ids as kb_gpu_ids

NVIDIA_VENDOR_ID = 0x10DE

_CHIP_RE = re.compile(r"^(G[A-Z]{1,2}[0-9]{1,3}[A-Z]?)")
_HEX_RE = re.compile(r"^(?:0[xX])?([0-9A-Fa-f]{1,8})$")
_PAIR_RE = re.compile(r"^(?:0[xX])?([0-9A-Fa-f]{4}):(?:0[xX])?([0-9A-Fa-f]{4})$")
_SM_RE = re.compile(r"^(?:sm_?|compute_)?([1-9][0-9]?)([0-9])[a-z]?$", re.IGNORECASE)
# "9.0", "12-1" (the two-part versions that versions.parse_version accepts, kept here: kb imports only kb)
_CC_RE = re.compile(r"^[Rr]?([0-9]{1,6})([.-])([0-9]{1,6})\Z")

ITEM_FORMS = (
    "{pci_device_id: '0x2335'[, pci_subsystem_id: '0x18BF']}, "
    "{compute_capability: '9.0'} or {name: 'NVIDIA H200'}"
)


class GpuSpecError(ValueError):
    """A malformed item of the ``gpus`` parameter (the message names it and shows the accepted forms)."""


# ---------------------------------------------------------------------------------------------------
# The device table (generated from NVIDIA's supported-gpus.json)
# ---------------------------------------------------------------------------------------------------
_TABLE = None
_NAMES = None


def _table():
    global _TABLE, _NAMES
    if _TABLE is None:
        table, names = {}, {}
        for line in kb_gpu_ids.DATA.splitlines():
            if not line:
                continue
            key, name, legacy, module = line.split("|")
            entry = {"key": key, "name": name, "legacybranch": legacy or None, "module": module}
            table[key] = entry
            names.setdefault(_norm_name(name), []).append(entry)
        _TABLE, _NAMES = table, names
    return _TABLE


def _norm_name(name):
    name = " ".join(str(name).lower().split())
    return name[len("nvidia ") :] if name.startswith("nvidia ") else name


def lookup_device(devid, subvendor=None, subdevice=None):
    """The table entry for a device (exact subsystem match first, then the device's base entry)."""
    table = _table()
    dev = f"{devid:04X}"
    if subdevice is not None:
        sub_vendor = NVIDIA_VENDOR_ID if subvendor is None else subvendor
        entry = table.get(f"{dev}:{sub_vendor:04X}:{subdevice:04X}")
        if entry is None and subvendor is None:
            # subsystem given without vendor: any vendor with that subsystem device id
            suffix = f":{subdevice:04X}"
            for key, candidate in table.items():
                if key.startswith(dev + ":") and key.endswith(suffix):
                    entry = candidate
                    break
        if entry is not None:
            return dict(entry, devid=devid)
    entry = table.get(dev)
    return dict(entry, devid=devid) if entry else None


def parse_pci_id(value, param):
    """A 16-bit PCI id from 0x2335, "0x2335", "2335", "10de:2335" or nvidia-smi's "0x233510DE"."""
    if isinstance(value, bool):
        raise GpuSpecError(
            f"{param}: {value!r} is not a PCI id; accepted forms: '0x2335', '2335', '10de:2335'"
        )
    if isinstance(value, int):
        if 0 <= value <= 0xFFFF:
            return value
        raise GpuSpecError(f"{param}: {value!r} is not a 16-bit PCI id; accepted forms: '0x2335', '2335'")
    text = str(value).strip()
    pair = _PAIR_RE.match(text)
    if pair:
        return int(pair.group(2), 16)
    match = _HEX_RE.match(text)
    if match:
        digits = match.group(1)
        if len(digits) == 8 and digits[4:].upper() == "10DE":  # nvidia-smi pci.device_id: 0x233510DE
            return int(digits[:4], 16)
        if len(digits) <= 4:
            return int(digits, 16)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    raise GpuSpecError(f"{param}: {shown} is not a PCI id; accepted forms: '0x2335', '2335', '10de:2335'")


def _parse_subsystem(value, param):
    """(subvendor or None, subdevice) from "0x18BF", "10de:18bf" or nvidia-smi's "0x18BF10DE"."""
    if isinstance(value, str):
        text = value.strip()
        pair = _PAIR_RE.match(text)
        if pair:
            return int(pair.group(1), 16), int(pair.group(2), 16)
        match = _HEX_RE.match(text)
        if match and len(match.group(1)) == 8:
            digits = match.group(1)
            return int(digits[4:], 16), int(digits[:4], 16)
    return None, parse_pci_id(value, param)


def parse_compute_capability(value, param):
    """'9.0', 9.0, '12.1', 'sm_90', 'sm_120', '90' -> normalized 'X.Y' string."""
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        sm = _SM_RE.match(str(value).strip())
        if sm and (not isinstance(value, str) or "." not in value):
            return f"{int(sm.group(1))}.{sm.group(2)}"
    text = value if isinstance(value, str) else repr(value) if isinstance(value, float) else ""
    match = _CC_RE.match(text.strip())
    if match is None:
        raise GpuSpecError(
            f"{param}: {value!r} is not a compute capability; accepted forms: '9.0', '12.1', 'sm_90'"
        )
    return f"{int(match.group(1))}.{int(match.group(3))}"


# ---------------------------------------------------------------------------------------------------
# pci.ids names (read on the host by probe/pciids.py; given here with the item)
# ---------------------------------------------------------------------------------------------------
def pci_ids_chip(pci_ids_name):
    """The chip code at the start of a pci.ids device name ("GH100 [H200 SXM 141GB]" -> "GH100"), or None."""
    chip = _CHIP_RE.match(pci_ids_name.strip()) if isinstance(pci_ids_name, str) else None
    return chip.group(1) if chip else None


def wants_pci_ids_name(devid):
    """True when a device's pci.ids name can add to the tables: its id is not in the device table, or no
    id range names its chip (the probe reads pci.ids only for those)."""
    return lookup_device(devid) is None or kb_arch.chip_for_device(devid) is None


# ---------------------------------------------------------------------------------------------------
# Resolution
# ---------------------------------------------------------------------------------------------------
def _legacy_int(legacybranch):
    if not legacybranch:
        return None
    try:
        return int(legacybranch.split(".")[0])
    except ValueError:
        return None


def is_data_center(name):
    """True when the marketing name is a data-center part (medium: name patterns)."""
    return any(re.search(p, name or "") for p in kb_arch.DATA_CENTER_NAME_PATTERNS)


def _arch_defaults(arch):
    info = kb_arch.ARCHITECTURES.get(arch)
    if info is None:
        return "unknown", None
    return info["kernel_module"], info["legacy_branch"]


def _gpu(name, arch, cc, module, legacy, *, source, confidence, devid=None, subsys=None, data_center=None):
    return {
        "name": name,
        "architecture": arch,
        "compute_capability": cc,
        "sm": ("sm_" + cc.replace(".", "")) if cc else None,
        "kernel_module_support": module,
        "legacy_branch": legacy,
        "data_center": data_center,
        "pci_device_id": f"0x{devid:04X}" if devid is not None else None,
        "pci_subsystem_id": f"0x{subsys:04X}" if subsys is not None else None,
        "source": source,
        "confidence": confidence,
    }


def _from_entry(entry, devid, subsys, pci_ids_name=None):
    legacy = _legacy_int(entry["legacybranch"])
    arch, cc, confidence = None, None, kb_arch.HIGH
    if entry["legacybranch"] in kb_arch.LEGACY_BRANCH_ARCH:
        arch = kb_arch.LEGACY_BRANCH_ARCH[entry["legacybranch"]]
        confidence = kb_arch.MEDIUM
    chip = kb_arch.chip_for_device(devid) or pci_ids_chip(pci_ids_name)
    info = kb_arch.chip_info(chip)
    if info is not None and (arch is None or arch == info[0]):
        arch, cc = info[0], info[1]
        confidence = kb_arch.MEDIUM  # device-id ranges / pci.ids chip codes are community data
    if arch is None:
        arch = {"470.xx": "Kepler"}.get(entry["legacybranch"], "unknown")
    flag = entry["module"]
    module = {"P": "proprietary", "O": "open", "E": "either"}[flag]
    if legacy is not None:
        # legacy entries list "kernelopen" but NVIDIA's install guide says pre-Turing needs the proprietary
        # module (high: https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/kernel-modules.html)
        module = "proprietary"
    return _gpu(
        entry["name"],
        arch,
        cc,
        module,
        legacy,
        source="supported-gpus.json",
        confidence=confidence,
        devid=devid,
        subsys=subsys,
        data_center=is_data_center(entry["name"]),
    )


def _by_pci_id(item, param):
    """(gpu, warnings) of an item with ``pci_device_id`` [+ subsystem ids, + ``pci_ids_name``]."""
    devid = parse_pci_id(item["pci_device_id"], param + ".pci_device_id")
    subvendor = subsys = None
    if item.get("pci_subsystem_id") not in (None, ""):
        subvendor, subsys = _parse_subsystem(item["pci_subsystem_id"], param + ".pci_subsystem_id")
    if item.get("pci_subsystem_vendor_id") not in (None, ""):
        subvendor = parse_pci_id(item["pci_subsystem_vendor_id"], param + ".pci_subsystem_vendor_id")
    pci_ids_name = item.get("pci_ids_name") if isinstance(item.get("pci_ids_name"), str) else None
    entry = lookup_device(devid, subvendor, subsys)
    if entry is not None:
        return _from_entry(entry, devid, subsys, pci_ids_name), []
    return _by_chip(devid, subsys, pci_ids_name)


def _by_chip(devid, subsys, pci_ids_name):
    """(gpu, warnings) of a PCI id missing from the device table: its chip from its pci.ids name or the id
    ranges."""
    label = f"PCI device 0x{devid:04X}"
    chip = pci_ids_chip(pci_ids_name)
    if kb_arch.chip_info(chip):
        label, source = f"{label} ({pci_ids_name.strip()})", "pci.ids"
    else:
        chip, source = kb_arch.chip_for_device(devid), "device-id range"
    # None only without a chip: a pci.ids chip is checked above, and every id range names a chip of CHIPS
    info = kb_arch.chip_info(chip) if chip is not None else None
    if info is None:
        hint = "" if pci_ids_name else " (or its pci.ids name as pci_ids_name)"
        warning = (
            f"{label} is not in the knowledge base (NVIDIA supported-gpus.json) and its chip is unknown: "
            "architecture unknown, GPU rules skipped for it; give gpus as {compute_capability: 'X.Y'}"
            f"{hint} to check it"
        )
        unknown = {"source": "none", "confidence": kb_arch.LOW, "devid": devid, "subsys": subsys}
        return _gpu(label, "unknown", None, "unknown", None, **unknown), [warning]
    arch, cc = info[0], info[1]
    module, legacy = _arch_defaults(arch)
    warning = (
        f"{label} is not in the knowledge base (NVIDIA supported-gpus.json); architecture {arch} "
        f"(chip {chip}) inferred from {source}"
    )
    gpu = _gpu(
        label, arch, cc, module, legacy, source=source, confidence=kb_arch.MEDIUM, devid=devid, subsys=subsys
    )
    return gpu, [warning]


def _by_compute_capability(item, param):
    cc = parse_compute_capability(item["compute_capability"], param + ".compute_capability")
    arch = kb_arch.cc_architecture(cc) or "unknown"
    module, legacy = _arch_defaults(arch)
    name = item.get("name") or f"GPU with compute capability {cc}"
    warnings = []
    if arch == "unknown":
        warnings.append(
            f"{name}: compute capability {cc} is not in the knowledge base: GPU rules skipped for it"
        )
    dc = is_data_center(item["name"]) if item.get("name") else None
    gpu = _gpu(
        name, arch, cc, module, legacy, source="compute_capability", confidence=kb_arch.HIGH, data_center=dc
    )
    return gpu, warnings


def _by_name(item):
    name = str(item["name"])
    _table()
    matches = _NAMES.get(_norm_name(name))
    if not matches:
        wanted = _norm_name(name)
        pattern = re.compile(r"(^|[\s-])" + re.escape(wanted) + r"($|[\s-])")
        matches = [e for key, es in _NAMES.items() if pattern.search(key) for e in es]
    resolved = []
    for entry in matches or ():
        devid = int(entry["key"].split(":")[0], 16)
        resolved.append(_from_entry(entry, devid, None))
    archs = {(g["architecture"], g["compute_capability"], g["kernel_module_support"]) for g in resolved}
    if len(archs) == 1:
        gpu = dict(resolved[0], name=name, pci_device_id=None, pci_subsystem_id=None, source="name")
        gpu["data_center"] = is_data_center(resolved[0]["name"]) or is_data_center(name)
        return gpu, []
    if len(archs) > 1:
        warning = (
            f"{name}: the name matches GPUs of different kinds "
            f"({', '.join(sorted({a[0] for a in archs}))}): give pci_device_id or compute_capability"
        )
    else:
        warning = (
            f"{name}: no GPU of that name in the knowledge base: architecture unknown, "
            "GPU rules skipped for it"
        )
    return _gpu(name, "unknown", None, "unknown", None, source="name", confidence=kb_arch.LOW), [warning]


def resolve_gpu(item, index=0):
    """Resolve one ``gpus`` item into a GPU description; returns (gpu, warnings). Pure: reads nothing.

    ``item`` is a dict with ``pci_device_id`` [+ ``pci_subsystem_id``, + ``pci_ids_name``: the device's
    name in pci.ids, which the facts carry for devices the tables cannot place], or ``compute_capability``,
    or ``name`` (see item_from_fact() for a GPU of ``ansible_facts.nvidia.gpus``). Unknown GPUs resolve to
    architecture "unknown" with a warning; malformed items raise GpuSpecError naming ``gpus[index]``.
    """
    param = f"gpus[{index}]"
    if not isinstance(item, dict):
        raise GpuSpecError(f"{param}: {item!r} is not a mapping; accepted forms: {ITEM_FORMS}")
    if item.get("pci_device_id") not in (None, ""):
        return _by_pci_id(item, param)
    if item.get("compute_capability") not in (None, ""):
        return _by_compute_capability(item, param)
    if item.get("name") not in (None, ""):
        return _by_name(item)
    raise GpuSpecError(f"{param}: {item!r} names no GPU; accepted forms: {ITEM_FORMS}")


# ---------------------------------------------------------------------------------------------------
# GPUs of the facts (ansible_facts.nvidia.gpus, probe/gpu.py) as ``gpus`` items
# ---------------------------------------------------------------------------------------------------
FACT_ITEM_KEYS = (
    "pci_device_id",
    "pci_subsystem_vendor_id",
    "pci_subsystem_id",
    "pci_ids_name",
    "compute_capability",
    "name",
)


def item_from_fact(gpu):
    """The ``gpus`` item of one GPU of the facts (its known identification only), or None when it has none.

    A GPU of the facts carries ``pci_device_id`` etc. (null when unknown) and ``compute_capability`` /
    ``name`` ("unknown" when unknown); only known values are kept, plus ``pci_bus_id`` to say which it is.
    """
    if not isinstance(gpu, dict):
        return None
    item = {k: gpu[k] for k in FACT_ITEM_KEYS if gpu.get(k) not in (None, "", "unknown")}
    if not item:
        return None
    if gpu.get("pci_bus_id") not in (None, "", "unknown"):
        item["pci_bus_id"] = gpu["pci_bus_id"]
    return item


def items_from_facts(gpus):
    """The ``gpus`` items of ``ansible_facts.nvidia.gpus`` (GPUs that nothing identifies are left out)."""
    return [item for item in (item_from_fact(g) for g in gpus or ()) if item is not None]
