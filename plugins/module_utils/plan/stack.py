# Copyright: gpufleet contributors
# Apache-2.0
"""What the CUDA toolkit and cuDNN plans share: the error class, compat inputs from facts.

(The host cache they download to is gpufleet's convention, ``kb/gpufleet.HOST_CACHE``.)

Stdlib only, Python >= 3.9, pure. The compatibility decision is ``plan.compat.check`` (the rules
``nvidia_compat`` runs); this file turns ``ansible_facts.nvidia`` (and a preflight's overrides, or
``nvidia_compat``'s parameters) into its inputs, runs the checks a plan needs and words their input errors
with the user's variable names.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpus import GpuSpecError, resolve_gpu
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat

UNKNOWN = "unknown"
# compat.check's parameter -> the variable a user sets (messages name the user's variable)
USER_NAMES = {
    "cuda_version": "cuda_toolkit_versions",
    "driver_version": "nvidia_driver_version",
    "driver_branch": "nvidia_driver_branch",
    "kernel_module": "nvidia_driver_kernel_module",
    "gpus": "nvidia_driver_gpus",
}


class PlanError(ValueError):
    """A role variable that cannot work: names the variable, its value and what is allowed."""


def user_wording(message):
    """A compat input error worded with the user's variable instead of compat's parameter."""
    match = re.match(r"^([a-z_]+)(\[[0-9]+\])?(\.[a-z_]+)?:", message)
    if match and match.group(1) in USER_NAMES:
        return USER_NAMES[match.group(1)] + message[len(match.group(1)) :]
    return message


_COMPAT_WORDS = re.compile(r"(?<![\w.])(cuda_version|driver_version|driver_branch|kernel_module)\b")


def user_words(text, names=None):
    """compat's parameter names in a sentence -> the variables the user sets (``names``: compat parameter ->
    variable; USER_NAMES by default, the CUDA toolkit and cuDNN roles' view)."""
    names = USER_NAMES if names is None else names
    return _COMPAT_WORDS.sub(lambda m: names.get(m.group(1), m.group(1)), str(text))


def _known(value):
    return value not in (None, "", UNKNOWN)


def _known_text(gpu, *keys):
    """The first of ``keys`` the GPU of the facts knows (a string, not "unknown"); None when none does."""
    for key in keys:
        if isinstance(gpu.get(key), str) and _known(gpu[key]):
            return gpu[key]
    return None


def _pci_item(gpu):
    """The PCI identification of a GPU of the facts (sysfs spelling first, else the ``pci_*`` one); {}."""
    device = _known_text(gpu, "device_id", "pci_device_id")
    if device is None:
        return {}
    item = {"pci_device_id": device}
    for keys, target in (
        (("subsystem_device_id", "pci_subsystem_id"), "pci_subsystem_id"),
        (("subsystem_vendor_id", "pci_subsystem_vendor_id"), "pci_subsystem_vendor_id"),
    ):
        value = _known_text(gpu, *keys)
        if value is not None:
            item[target] = value
    if isinstance(gpu.get("pci_ids_name"), str) and gpu["pci_ids_name"]:
        item["pci_ids_name"] = gpu["pci_ids_name"]
    return item


def gpu_item(gpu):
    """A compat ``gpus`` item from one GPU of ``ansible_facts.nvidia.gpus`` (None: nothing identifies it).

    Its PCI ids, else its compute capability, else its name (a GPU NVML or nvidia-smi reported by name only).
    """
    candidates = [_pci_item(gpu)]
    if _known(gpu.get("compute_capability")):
        candidates.append({"compute_capability": gpu["compute_capability"]})
    if _known_text(gpu, "name") is not None:
        candidates.append({"name": gpu["name"]})
    for candidate in filter(None, candidates):
        try:
            resolve_gpu(candidate)
        except GpuSpecError:
            continue
        return candidate
    return None


def _facts_driver(driver):
    version = driver.get("loaded_version") if "loaded_version" in driver else driver.get("version")
    module = (
        driver.get("loaded_kernel_module")
        if "loaded_kernel_module" in driver
        else driver.get("kernel_module")
    )
    return (version if _known(version) else None), (module if module in ("open", "proprietary") else None)


def compat_inputs(facts, overrides=None):
    """compat.check's host inputs: the facts, or what a preflight or nvidia_compat's parameters give instead
    (overrides: gpus, driver_version, driver_branch, kernel_module, os, machine, cuda_forward_compat;
    None = facts)."""
    facts = facts or {}
    over = {k: v for k, v in (overrides or {}).items() if v not in (None, "")}
    gpus = over.get("gpus")
    if gpus is None:
        gpus = [item for item in (gpu_item(g) for g in facts.get("gpus") or []) if item]
    kernel_module = over.get("kernel_module", "auto")
    driver_version, driver_branch = over.get("driver_version"), over.get("driver_branch")
    if driver_version is None and driver_branch is None:
        driver_version, loaded_module = _facts_driver(facts.get("driver") or {})
        if kernel_module == "auto" and driver_version and loaded_module:
            kernel_module = loaded_module
    os_info = over.get("os") if (over.get("os") or {}).get("distribution") else None
    if os_info is None:
        host_os = (facts.get("host") or {}).get("os") or {}
        if host_os.get("distribution"):
            os_info = {"distribution": host_os["distribution"], "version": host_os.get("version", "")}
    host = facts.get("host") or {}
    return {
        "gpus": gpus,
        "driver_version": driver_version,
        "driver_branch": driver_branch,
        "kernel_module": kernel_module,
        "os_info": os_info,
        "cuda_forward_compat": bool(over.get("cuda_forward_compat", False)),
        "machine": over.get("machine", host.get("machine")),
        "tegra": None if "machine" in over else host.get("tegra"),
    }


def run_checks(checks, inputs):
    """Run compat.check for each (label, kwargs); one merged answer (errors/warnings once each, in order)."""
    merged = {
        "compatible": True,
        "errors": [],
        "warnings": [],
        "recommended": None,
        "gpus": [],
        "checked": [],
    }
    for label, kwargs in checks:
        try:
            found = compat.check(**inputs, **kwargs)
        except compat.CompatInputError as exc:
            raise PlanError(user_wording(str(exc))) from None
        for key in ("errors", "warnings"):
            worded = [user_words(m) for m in found[key]]
            merged[key].extend(m for m in worded if m not in merged[key])
        merged["recommended"] = found["recommended"]
        merged["gpus"] = merged["gpus"] or found["gpus"]
        merged["checked"].append(label)
    merged["compatible"] = not merged["errors"]
    return merged


def skipped_compat():
    return {
        "compatible": True,
        "errors": [],
        "warnings": [],
        "recommended": None,
        "gpus": [],
        "checked": [],
        "skipped": True,
    }


def numbered(errors):
    """The compat error sentences as one text: the sentence, or the sentences numbered when several."""
    return errors[0] if len(errors) == 1 else " ".join(f"({i}) {e}" for i, e in enumerate(errors, 1))


def failure_message(role, errors):
    """What a role fails with for an incompatible plan (the compat sentences, numbered when several)."""
    return f"{role}: the plan cannot work on this host: {numbered(errors)}"
