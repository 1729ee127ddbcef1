# Copyright: gpufleet contributors
# Apache-2.0
"""Jinja2 filters over gpufleet's NVIDIA knowledge base (controller side, same module_utils as the modules).

cuda_min_driver     '12.8' | gpufleet.nvidia.cuda_min_driver          -> '570.26' (None when unpublished)
cuda_driver_floor   '13.2' | gpufleet.nvidia.cuda_driver_floor        -> '580.65.06' (minor-version floor)
gpu_architecture    '0x2335' | gpufleet.nvidia.gpu_architecture       -> 'Hopper' (PCI id, CC, name or item,
                    or a GPU of the facts: ansible_facts.nvidia.gpus[0] | gpufleet.nvidia.gpu_architecture)
gpu_info            '0x2335' | gpufleet.nvidia.gpu_info               -> the resolved GPU dict
nvidia_version_compare  '12.8' | gpufleet.nvidia.nvidia_version_compare('13.0', '<') -> True
nvidia_version      'R580' | gpufleet.nvidia.nvidia_version           -> '580'
driver_branch       '580.95.05' | gpufleet.nvidia.driver_branch       -> '580'
driver_native_cuda  '580' | gpufleet.nvidia.driver_native_cuda        -> '13.0'

Bad input fails the task with the parser's one-line message (it names the value and the accepted forms).
See docs/compat.md.
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpus import (
    GpuSpecError,
    item_from_fact,
    resolve_gpu,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat as compat_rules
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import (
    VersionError,
    parse_branch,
    parse_version,
    version_compare,
)


def _fail(err):
    raise AnsibleFilterError(str(err)) from None


def cuda_min_driver(cuda_version):
    try:
        return compat_rules.cuda_min_driver(cuda_version)
    except (compat_rules.CompatInputError, VersionError) as err:
        return _fail(err)


def cuda_driver_floor(cuda_version):
    try:
        version = parse_version(cuda_version, "cuda_version", min_parts=2)
    except VersionError as err:
        return _fail(err)
    floor = compat_rules.major_floor(version)
    return str(floor) if floor is not None else None


def _gpu_item(value):
    if isinstance(value, dict):  # a `gpus` item, or a GPU of ansible_facts.nvidia.gpus (its known ids only)
        return item_from_fact(value) or value
    if isinstance(value, int) and not isinstance(value, bool):
        return {"pci_device_id": value}
    text = str(value).strip()
    if text.lower().startswith("sm_") or (text.count(".") == 1 and text.replace(".", "").isdigit()):
        return {"compute_capability": text}
    if text.lower().startswith("0x") or (
        len(text) in (4, 9) and all(c in "0123456789abcdefABCDEF:" for c in text)
    ):
        return {"pci_device_id": text}
    return {"name": text}


def gpu_info(value):
    try:
        gpu, _warnings = resolve_gpu(_gpu_item(value))
    except GpuSpecError as err:
        return _fail(err)
    return gpu


def gpu_architecture(value):
    return gpu_info(value)["architecture"]


def nvidia_version_compare(left, right, operator="=="):
    try:
        return version_compare(left, right, operator, "left", "right")
    except VersionError as err:
        return _fail(err)


def nvidia_version(value):
    try:
        return str(parse_version(value, "version"))
    except VersionError as err:
        return _fail(err)


def driver_branch(value):
    try:
        return str(parse_branch(value, "driver"))
    except VersionError as err:
        return _fail(err)


def driver_native_cuda(value):
    try:
        native = compat_rules.branch_native_cuda(parse_branch(value, "driver"))
    except VersionError as err:
        return _fail(err)
    return str(native) if native is not None else None


class FilterModule:
    """gpufleet NVIDIA filters."""

    def filters(self):
        return {
            "cuda_min_driver": cuda_min_driver,
            "cuda_driver_floor": cuda_driver_floor,
            "gpu_architecture": gpu_architecture,
            "gpu_info": gpu_info,
            "nvidia_version_compare": nvidia_version_compare,
            "nvidia_version": nvidia_version,
            "driver_branch": driver_branch,
            "driver_native_cuda": driver_native_cuda,
        }
