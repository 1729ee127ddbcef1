# Copyright: gpufleet contributors
# Apache-2.0
"""The options of gpufleet's controller-side actions, declared once for the action and its documentation.

Stdlib only. ``plugins/action/<name>.py`` validates its task's arguments with these specs;
``plugins/modules/<name>.py`` documents the same options (ansible-test's validate-modules compares them).
"""

from __future__ import annotations

PLAN_ROLES = ["nvidia_driver", "cuda_toolkit", "cudnn"]
PLAN_PHASES = ["preflight", "installed", "initramfs", "reboot", "verify"]

NVIDIA_PLAN = {
    "role": {"type": "list", "elements": "str", "required": True, "choices": PLAN_ROLES},
    "phase": {"type": "str", "default": "preflight", "choices": PLAN_PHASES},
    "facts": {"type": "dict"},
    "root": {"type": "path", "default": "/"},
    "fail_on_errors": {"type": "bool", "default": True},
    "planned": {"type": "dict"},
    "changed": {"type": "bool", "default": False},
    "rebooted": {"type": "bool", "default": False},
}

NVIDIA_COMPAT = {
    "facts": {"type": "dict"},
    "gpus": {"type": "list", "elements": "dict"},
    "driver_version": {"type": "str"},
    "driver_branch": {"type": "str"},
    "kernel_module": {"type": "str", "choices": ["auto", "open", "proprietary"], "default": "auto"},
    "cuda_version": {"type": "str"},
    "cudnn_version": {"type": "str"},
    "cudnn_cuda_major": {"type": "str"},
    "os": {"type": "dict", "options": {"distribution": {"type": "str"}, "version": {"type": "str"}}},
    "machine": {"type": "str"},
    "cuda_forward_compat": {"type": "bool", "default": False},
    "fail_on_incompatible": {"type": "bool", "default": True},
}

# the playbooks whose own gpufleet_* variables nvidia_inputs checks (plan/playbook_vars.PLAYBOOKS: a unit
# test keeps the two equal; this layer imports nothing of the collection)
INPUT_PLAYBOOKS = ["cuda", "cudnn", "driver", "driver_upgrade", "preflight", "site"]

NVIDIA_INPUTS = {
    "playbook": {"type": "str", "required": True, "choices": INPUT_PLAYBOOKS},
}
