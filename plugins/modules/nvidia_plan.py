#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_plan
short_description: Plan a gpufleet role for a host on the controller (variables, facts, compatibility)
version_added: "0.3.0"
description:
  - The plan of the C(nvidia_driver), C(cuda_toolkit) or C(cudnn) role for one host, decided on the Ansible
    controller (an action plugin) from the role's own variables and the host's facts. The roles call it in
    their preflight; C(playbooks/preflight.yml) calls it for all three at once, in check mode.
  - The role's variables are read by the role's own argument spec (C(meta/argument_specs.yml)) - the host's
    value where the inventory or play sets one, else the role's C(defaults/main.yml) - and typed by it; a
    value the spec refuses fails with the spec's message. The C(cudnn) plan also reads
    C(cuda_toolkit_versions) and C(cuda_toolkit_default) (the main build follows the default CUDA), with
    the cuda_toolkit role's defaults where the host sets none.
  - Every refusal names the user's variable, its value and what is allowed, before anything is gathered
    for a variable that needs no facts, and before any change or network access in every case.
  - The host's facts come from O(facts) when given (what C(ansible_facts.nvidia) holds), else
    C(gpufleet.nvidia.nvidia_facts) runs once on the host with the subsets and paths the planned roles need
    - a fact cache is never trusted for a plan, as it may describe the host before the last change.
  - With several roles the facts are gathered once, and the CUDA toolkit and cuDNN checks take the driver
    the C(nvidia_driver) plan installs instead of the driver loaded now (the stack as it will be).
  - A role switched off for the host (C(nvidia_driver_enabled), C(cuda_toolkit_enabled), C(cudnn_enabled)
    false) is planned as "disabled" - no facts, no refusal beyond its argument spec. The C(nvidia_driver)
    plan of a host without an NVIDIA GPU installs nothing unless C(nvidia_driver_install_without_gpu), and the
    variables of NVIDIA's own driver role (NVIDIA/ansible-role-nvidia-driver) set for a host are refused,
    each naming the gpufleet variable to set instead.
  - A role whose C(<role>_state) is V(absent) is planned as a removal
    (C(plugins/module_utils/plan/removal.py)) - what gpufleet installed on the host, as its records say
    (pin files, the driver's record, its marker and header), goes; what it does not own stays and is named;
    a driver that is not gpufleet's is refused naming C(nvidia_driver_state).
  - Reads only; the same plan in check mode.
options:
  role:
    description: The role(s) to plan, in order.
    type: list
    elements: str
    required: true
    choices: [nvidia_driver, cuda_toolkit, cudnn]
  phase:
    description:
      - The step of the C(nvidia_driver) role the plan is for. V(preflight) is the plan of the run; the
        others re-read the facts after a step and decide from them with O(planned) (the preflight's plan) -
        V(installed) (kernels to build for, holds and locks still missing), V(initramfs) (the images to
        rebuild), V(reboot) (the reboot decision, with O(changed)), V(verify) (what verify checks; with
        O(rebooted), the health check after the role's reboot).
      - The other roles have only V(preflight).
    type: str
    default: preflight
    choices: [preflight, installed, initramfs, reboot, verify]
  facts:
    description: The host's facts (what C(ansible_facts.nvidia) holds) instead of gathering them.
    type: dict
  root:
    description: The root C(nvidia_facts) reads when it gathers (a chroot or image; tests use fake trees).
    type: path
    default: /
  fail_on_errors:
    description: Fail the host when a plan cannot work; with V(false) the errors are returned in RV(errors).
    type: bool
    default: true
  planned:
    description: The preflight's plan (RV(plan)) for the later C(nvidia_driver) phases.
    type: dict
  changed:
    description: Whether the driver changed in this run (phases V(reboot) and V(verify), policy C(always)).
    type: bool
    default: false
  rebooted:
    description: The role rebooted the host in this run (phase V(verify)) - the health check applies.
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
    details: The plan is made on the controller; only M(gpufleet.nvidia.nvidia_facts) runs on the host.
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Reads only (the facts); the same plan in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Without O(facts), M(gpufleet.nvidia.nvidia_facts) probes a Linux host; with O(facts) nothing runs
      on the host.
author: gpufleet maintainers (!UNKNOWN)
seealso:
  - module: gpufleet.nvidia.nvidia_facts
  - module: gpufleet.nvidia.nvidia_compat
"""

EXAMPLES = r"""
- name: Plan cuDNN for this host (the role's preflight does this)
  gpufleet.nvidia.nvidia_plan:
    role: cudnn
  register: __cudnn_plan

- name: Can the default stack work on every host? (playbooks/preflight.yml)
  gpufleet.nvidia.nvidia_plan:
    role: [nvidia_driver, cuda_toolkit, cudnn]
    fail_on_errors: false
  register: __stack
"""

RETURN = r"""
plan:
  description: The plan of the role when one role is planned (the keys each role's tasks read; see the role's
    tasks and docs/roles.md); C(summary) is one line saying what it does; C(enabled) is false for a role
    switched off for the host (C(<role>_enabled)), whose plan holds nothing else the tasks act on; C(state)
    is the role's C(<role>_state), and with V(absent) the plan is a removal's (C(remove), C(kept), C(lines),
    C(nothing));
    C(progress) says what the install tasks download and install.
  returned: success, one role
  type: dict
plans:
  description: The plan of each role, by role name.
  returned: always
  type: dict
compat:
  description: The compatibility answer of each role (compatible, errors, warnings, recommended, gpus).
  returned: always
  type: dict
errors:
  description: The errors of each role whose plan cannot work, by role name (empty when every plan works).
  returned: always
  type: dict
summary:
  description: One line per planned role.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_options import NVIDIA_PLAN


def main():
    # The action plugin of the same name does the work on the controller with this same spec; this file
    # documents it and only runs when the action is bypassed.
    module = AnsibleModule(argument_spec=NVIDIA_PLAN, supports_check_mode=True)
    module.fail_json(
        msg="nvidia_plan runs on the controller as an action plugin; call it as gpufleet.nvidia.nvidia_plan"
    )


if __name__ == "__main__":
    main()
