# Copyright: gpufleet contributors
# Apache-2.0
"""Options the plan modules (nvidia_cuda_plan, nvidia_cudnn_plan) share: the facts and the overrides of
playbooks/preflight.yml (the argument spec that matches is plan/stack.CHECK_ARGUMENT_SPEC); and the
descriptions of their attributes (each module says its support)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  facts:
    description: C(ansible_facts.nvidia) as gathered by C(gpufleet.nvidia.nvidia_facts); empty = gather here.
    type: dict
  machine:
    description: The host's machine (C(ansible_facts.machine)) for the redist platform; empty = this host's.
    type: str
    default: ""
  check_only:
    description:
      - Validate and run the compatibility rules only (C(playbooks/preflight.yml)) - no source plan, and an
        incompatible plan is returned in RV(compat) instead of failing.
    type: bool
    default: false
  gpus:
    description: GPUs to check instead of the facts' (items as C(nvidia_compat) takes them).
    type: list
    elements: dict
  driver_version:
    description: A planned driver version instead of the loaded one.
    type: str
  driver_branch:
    description: A planned driver branch instead of the loaded driver.
    type: str
  kernel_module:
    description: The planned kernel module flavor.
    type: str
    choices: [auto, open, proprietary]
    default: auto
  os:
    description: The OS to check instead of the facts' C(host.os).
    type: dict
  cuda_forward_compat:
    description: Allow a CUDA major newer than the driver's (data-center GPUs, forward compatibility).
    type: bool
    default: false
attributes:
  check_mode:
    description: Can run in check mode and return what would change, without changing the target.
  diff_mode:
    description: Returns what changed (or would change, in check mode) in diff mode.
  platform:
    description: The target operating systems it can run against.
    support: N/A
"""
