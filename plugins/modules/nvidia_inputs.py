#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_inputs
short_description: Check a gpufleet playbook's own variables on the controller, before any host is contacted
version_added: "0.3.0"
description:
  - The first play of each of the collection's playbooks (C(site.yml), C(driver.yml), C(driver_upgrade.yml),
    C(cuda.yml), C(cudnn.yml), C(preflight.yml)) calls it on the controller. It checks the playbook's own
    C(gpufleet_*) variables - the host patterns, C(gpufleet_preflight_root), the rolling upgrade's batch size
    and drain/undrain hooks - and fails naming every wrong variable, its value and what is allowed, so that a
    play keyword (C(hosts:), C(serial:)) only ever templates a checked value and a bad hook is found before
    the first host is drained.
  - The variables are read from the task's variables (C(-e), play or inventory variables), templated. Their
    declarations (kind, default, the playbooks that read them) are one table,
    C(plugins/module_utils/plan/playbook_vars.py). The hooks are checked as every host of the play sees
    them too (a group or host variable of the inventory), each distinct value once, naming the host.
  - "Grammar: a host pattern (C(gpufleet_driver_hosts), C(gpufleet_cuda_hosts), C(gpufleet_cudnn_hosts),
    C(gpufleet_preflight_hosts)) is one non-empty string without newlines or control characters, never a
    list or a mapping; C(gpufleet_preflight_root) is an absolute, normalised path;
    C(gpufleet_driver_upgrade_serial) is what the play's C(serial) takes (a whole number >= 1, C(N%) with
    0 < N <= 100, or a non-empty list of those); C(gpufleet_driver_upgrade_drain_tasks) and
    C(gpufleet_driver_upgrade_undrain_tasks) are empty or the absolute path of a task file the controller
    can read (a relative path would resolve against the playbook's directory)."
  - The roles' own variables (C(nvidia_driver_*), C(cuda_toolkit_*), C(cudnn_*)) are checked by the roles'
    plans (M(gpufleet.nvidia.nvidia_plan)), not here.
  - Reads only; the same in check mode.
options:
  playbook:
    description: The playbook whose variables are checked (its file name without C(.yml)).
    type: str
    required: true
    choices: [cuda, cudnn, driver, driver_upgrade, preflight, site]
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
    details: Runs on the controller only; no host is contacted.
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Reads only.
  diff_mode:
    support: none
  platform:
    platforms: posix
author: gpufleet maintainers (!UNKNOWN)
seealso:
  - module: gpufleet.nvidia.nvidia_plan
"""

EXAMPLES = r"""
- name: Inputs - this playbook's own variables, before any host is contacted
  hosts: all
  gather_facts: false
  tasks:
    - name: Check every gpufleet_* variable of driver_upgrade.yml
      gpufleet.nvidia.nvidia_inputs:
        playbook: driver_upgrade
      run_once: true
      delegate_to: localhost
      tags: [always]
"""

RETURN = r"""
values:
  description: The playbook's variables that are set, templated, by name (all valid when the task succeeds).
  returned: always
  type: dict
roles:
  description: The roles of the playbook that the run's C(--tags) and C(--skip-tags) let run (a role runs
    when its name or one of its C(<role>_<phase>) tags is asked, and none of them is skipped); C(site.yml)'s
    gate plans only those.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_options import NVIDIA_INPUTS


def main():
    # The action plugin of the same name does the work on the controller with this same spec; this file
    # documents it and only runs when the action is bypassed.
    module = AnsibleModule(argument_spec=NVIDIA_INPUTS, supports_check_mode=True)
    module.fail_json(
        msg="nvidia_inputs runs on the controller as an action plugin; "
        "call it as gpufleet.nvidia.nvidia_inputs"
    )


if __name__ == "__main__":
    main()
