# Copyright: gpufleet contributors
# Apache-2.0
"""Controller side of the public compatibility check: the parameters + the host's facts -> plan/compat.

Documentation: plugins/modules/nvidia_compat.py. The decision is ``plan.compat.check`` (pure Python, run here
in the controller's fork for this host) on the inputs ``plan.stack.compat_inputs`` takes from the facts and
the parameters; the target only runs ``nvidia_facts`` (once, gpu and driver subsets, when no facts are given).
"""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_common import (
    FACTS_MODULE,
    FactsFailed,
    facts_of,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_options import NVIDIA_COMPAT
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.compat import CompatInputError, check
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.inputs import os_parameter
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import compat_inputs, numbered

GATHER_SUBSET = ["gpu", "driver"]
# The parameters that say what the host is instead of its facts (compat_inputs' overrides).
HOST_PARAMETERS = (
    "gpus", "driver_version", "driver_branch", "kernel_module", "os", "machine", "cuda_forward_compat",
)  # fmt: skip


def host_facts(facts):
    """``ansible_facts.nvidia`` from what ``facts`` holds: that itself, or all of ``ansible_facts``."""
    if "nvidia" in facts and "schema_version" not in facts:  # all of ansible_facts was passed
        return facts["nvidia"] or {}
    return facts


def compat_result(args, facts):
    """The task's result from its validated arguments and the host's facts; reads nothing.

    Ansible owns the result's "warnings" key (it shows each one to the user) but drops it from the items of
    a loop; compat_warnings keeps the same list for registered results.
    """
    overrides = {name: args[name] for name in HOST_PARAMETERS}
    try:
        result = check(
            cuda_version=args["cuda_version"],
            cudnn_version=args["cudnn_version"],
            cudnn_cuda_major=args["cudnn_cuda_major"],
            **compat_inputs(host_facts(facts), overrides),
        )
    except CompatInputError as err:
        return {"failed": True, "changed": False, "msg": str(err)}
    warnings = result.pop("warnings")
    result.update(changed=False, compat_warnings=warnings)
    if warnings:
        result["warnings"] = list(warnings)
    if not result["compatible"] and args["fail_on_incompatible"]:
        result.update(failed=True, msg=numbered(result["errors"]))
    return result


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        _validation, args = self.validate_argument_spec(argument_spec=NVIDIA_COMPAT)
        wrong = os_parameter("os", args["os"])
        if wrong:  # before the facts: a misspelled distribution would switch the OS rules off
            raise AnsibleActionFail("; ".join(wrong))
        facts = args["facts"]
        if facts is None:
            found = self._execute_module(
                module_name=FACTS_MODULE,
                module_args={"gather_subset": list(GATHER_SUBSET)},
                task_vars=task_vars or {},
            )
            try:
                facts = facts_of(found)
            except FactsFailed as exc:
                raise AnsibleActionFail(str(exc)) from None
        result.update(compat_result(args, facts))
        return result
