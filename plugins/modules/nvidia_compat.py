#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0

DOCUMENTATION = r"""
---
module: nvidia_compat
short_description: Check that NVIDIA GPUs, driver, kernel module, CUDA, cuDNN and OS can work together
version_added: "0.1.0"
description:
  - Decides from gpufleet's knowledge base (NVIDIA's own tables, each fact with a source and a confidence)
    whether a plan can work on a host, before anything is installed, and says what to choose instead.
  - Checks CUDA against the driver (per-release minimum, per-major minor-version compatibility floor,
    forward compatibility across majors), CUDA against the GPUs (first and last CUDA per compute capability),
    the driver branch against the GPUs (legacy branches such as R470 for Kepler and R580 for Maxwell, Pascal
    and Volta), the kernel module flavor (open required for Blackwell and GH200, proprietary required before
    Turing, open default from R560), cuDNN against CUDA, driver and compute capability, and the OS
    against CUDA.
  - Facts of high confidence refuse (C(errors)); facts of medium or low confidence only warn (C(warnings)).
    Versions newer than the knowledge base (for example CUDA 14.0 or cuDNN 10.0) give a warning that the
    knowledge base does not know them yet.
  - Changes nothing; C(changed) is always false.
  - Decided on the Ansible controller (an action plugin); the rules run in the controller's Python, never on
    the host.
  - What the host has (its GPUs, the loaded driver, the OS) comes from O(facts), the C(ansible_facts.nvidia)
    of M(gpufleet.nvidia.nvidia_facts). Without O(facts), M(gpufleet.nvidia.nvidia_facts) runs once on the
    host with the C(gpu) and C(driver) subsets (GPUs come from sysfs PCI data, which needs no NVIDIA driver);
    when that run fails, the task fails with its message and its standard error. O(gpus), O(os),
    O(driver_version), O(driver_branch) and O(kernel_module) override what the facts say.
  - Bad input (a malformed or non-existent version, contradictory parameters) fails with one sentence that
    names the parameter, whatever O(fail_on_incompatible) says.
author: gpufleet maintainers (!UNKNOWN)
options:
  facts:
    description:
      - What M(gpufleet.nvidia.nvidia_facts) returned for this host, that is C(ansible_facts.nvidia)
        (schema in the collection's C(docs/facts.md)). Read are C(gpus), C(driver.loaded_version),
        C(driver.loaded_kernel_module) and C(host.os).
      - Given, nothing runs on the host. Not given, M(gpufleet.nvidia.nvidia_facts) runs on the host with the
        C(gpu) and C(driver) subsets.
      - All of C(ansible_facts) is accepted too (its C(nvidia) key is used).
    type: dict
  gpus:
    description:
      - "The GPUs to check. Each item is one of C({pci_device_id[, pci_subsystem_id]}) (for example
        C({pci_device_id: '0x2335', pci_subsystem_id: '0x18BF'})), C({compute_capability}) (for example
        C({compute_capability: '7.0'})) or C({name}) (for example C({name: 'Tesla V100-SXM2-32GB'}))."
      - PCI ids are accepted as C(0x2335), C(2335), C(10de:2335) or the nvidia-smi form C(0x233510DE).
      - Default is the GPUs of O(facts) (C(gpus), the NVIDIA display controllers on the PCI bus; GPUs that
        nothing identifies are left out). An empty list checks no GPU (a toolkit-only host).
      - An item may carry C(pci_ids_name), the device's name in C(pci.ids) (O(facts) carry it as
        C(gpus[].pci_ids_name) for the GPUs the knowledge base cannot place). Unknown PCI ids fall back to
        its chip code, then to the device-id ranges of the knowledge base, else architecture C(unknown)
        with a warning. Nothing else is read for an item.
    type: list
    elements: dict
  driver_version:
    description:
      - The driver version planned, for example C(580.95.05).
      - Default is the loaded driver (C(driver.loaded_version) of O(facts)), when neither O(driver_version)
        nor O(driver_branch) is given; O(kernel_module=auto) then takes the loaded module's flavor
        (C(driver.loaded_kernel_module)).
      - Must be on O(driver_branch) when both are given.
    type: str
  driver_branch:
    description:
      - The driver branch planned, for example C(580) or C(R580). Use when the exact version is not known yet.
    type: str
  kernel_module:
    description:
      - The kernel module flavor planned. V(auto) picks what the GPUs need, else open from R560 on.
    type: str
    choices: [auto, open, proprietary]
    default: auto
  cuda_version:
    description:
      - The CUDA toolkit version planned, for example C(13.0), C(12.8.1) or C(12-8).
      - Quote it in YAML (unquoted C(12.10) would be read as C(12.1)).
    type: str
  cudnn_version:
    description:
      - The cuDNN version planned, for example C(9.14.0) or C(9.14.0.64).
    type: str
  cudnn_cuda_major:
    description:
      - The CUDA major the cuDNN build is for (C(11), C(12) or C(13)).
      - Default is the major of O(cuda_version); a different value is a contradiction and fails.
    type: str
  os:
    description:
      - The target OS as C(distribution) (the C(ID) of os-release, for example C(ubuntu), C(debian),
        C(rhel), or Ansible's name, for example C(Ubuntu), C(RedHat)) and C(version) (its C(VERSION_ID), for
        example C(24.04)).
      - Default is C(host.os) of O(facts).
      - A distribution gpufleet does not know (a misspelling) is refused before anything is gathered.
    type: dict
    suboptions:
      distribution:
        description: Distribution id, for example C(ubuntu).
        type: str
      version:
        description: Distribution version, for example C(24.04).
        type: str
  machine:
    description:
      - The target's CPU architecture as C(uname -m) names it, for example C(x86_64) or C(aarch64) (an Arm
        server such as Grace, NVIDIA's C(sbsa) platform). gpufleet provisions those two; any other is an
        error.
      - Default is C(host.machine) of O(facts). A Jetson (C(host.tegra) of O(facts), a Tegra SoC running
        Jetson Linux) is an error too (JetPack installs its driver, CUDA and cuDNN); giving O(machine) checks
        the plan for that architecture instead of the facts' host.
    type: str
  cuda_forward_compat:
    description:
      - Allow a CUDA major newer than the driver's through NVIDIA's forward-compatibility package
        (C(cuda-compat-<major>-<minor>)). Accepted only when every GPU is a data-center part and the driver's
        branch is a base NVIDIA's forward-compatibility table lists for that package (for example R535 or R570
        for C(cuda-compat-13-0)); other branches are end of life or new feature branches and are refused.
    type: bool
    default: false
  fail_on_incompatible:
    description:
      - Fail the task when the plan cannot work (any error). With V(false) the result only reports it.
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
    details: The check runs on the controller; only M(gpufleet.nvidia.nvidia_facts) runs on the host.
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: It only reads (the facts); the same answer in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
    details: Without O(facts), M(gpufleet.nvidia.nvidia_facts) probes a Linux host; with O(facts) nothing runs
      on the host.
notes:
  - Sources and confidence of every fact are listed in the collection's C(docs/compat.md).
  - The knowledge base describes Linux x86_64.
seealso:
  - module: gpufleet.nvidia.nvidia_facts
  - module: gpufleet.nvidia.nvidia_plan
  - name: CUDA minor version compatibility
    description: NVIDIA's rules for running a newer CUDA minor release on an older driver.
    link: https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
"""

EXAMPLES = r"""
- name: Gather the host's NVIDIA facts once
  gpufleet.nvidia.nvidia_facts:
    gather_subset: [gpu, driver]
  register: __facts

- name: Check the plan of this host against those facts (nothing is read again)
  gpufleet.nvidia.nvidia_compat:
    facts: "{{ __facts.ansible_facts.nvidia }}"
    driver_branch: "580"
    cuda_version: "13.0"
    cudnn_version: "9.14.0"

- name: Check the plan of this host (nvidia_facts runs once on the host for its GPUs, loaded driver and OS)
  gpufleet.nvidia.nvidia_compat:
    cuda_version: "13.0"

- name: Would CUDA 13 work on a V100 node? (report only)
  gpufleet.nvidia.nvidia_compat:
    gpus:
      - pci_device_id: "0x1DB5"
    driver_branch: "580"
    cuda_version: "13.0"
    fail_on_incompatible: false
  register: __plan

- name: Check a plan for GPUs described by compute capability and name, on a given OS
  gpufleet.nvidia.nvidia_compat:
    gpus:
      - compute_capability: "9.0"
      - name: NVIDIA H200
    driver_version: "580.95.05"
    kernel_module: open
    cuda_version: "13.0"
    os:
      distribution: ubuntu
      version: "24.04"

- name: Would this plan work on a Grace Hopper node (an Arm server), asked from an x86_64 controller?
  gpufleet.nvidia.nvidia_compat:
    gpus:
      - name: NVIDIA GH200 480GB
    driver_branch: "580"
    cuda_version: "13.0"
    cudnn_version: "9.14.0"
    machine: aarch64
"""

RETURN = r"""
compatible:
  description: True when no error was found.
  returned: success
  type: bool
  sample: false
errors:
  description: Sentences naming the GPU, the versions in conflict and what would work (high-confidence facts).
  returned: always
  type: list
  elements: str
  sample:
    - "Tesla V100-SXM2-32GB (Volta, sm_70) is not supported by CUDA 13.0; the last CUDA for Volta
      (compute capability 7.0) is 12.9: set cuda_version <= 12.9"
warnings:
  description:
    - Things that work with limits, facts of medium or low confidence, versions not known yet.
    - Emitted as Ansible warnings (shown to the user). Ansible owns this key and drops it from the items of a
      loop, so the same list is also returned as RV(compat_warnings).
  returned: when there are warnings (outside loops)
  type: list
  elements: str
  sample:
    - "CUDA 13.2 runs on driver 580.159.04 only through minor-version compatibility: its own minimum is
      595.45.04 (R595); features such as PTX JIT of code from the newer toolkit need the newer driver: set
      driver_branch >= 595 for full support"
compat_warnings:
  description: The same list as RV(warnings), kept in registered results of loops too.
  returned: always
  type: list
  elements: str
  sample: []
recommended:
  description: What to choose for these GPUs (and the CUDA version asked for). Values are strings or null.
  returned: always
  type: dict
  contains:
    driver_branch:
      description: The oldest supported long-term or production branch that fits the GPUs and CUDA version.
      type: str
      sample: "580"
    kernel_module:
      description: The kernel module flavor for these GPUs (null when no flavor drives all of them).
      type: str
      sample: open
    cuda_max:
      description: The newest CUDA these GPUs support (the newest known when none is limited).
      type: str
      sample: "12.9"
    cudnn_max:
      description: The newest cuDNN known to support these GPUs.
      type: str
      sample: "9.10.2"
gpus:
  description: The GPUs as resolved.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Marketing name (from NVIDIA's supported-gpus list) or a description.
      type: str
      sample: NVIDIA H200
    architecture:
      description: Architecture (Kepler ... Blackwell, Rubin) or C(unknown).
      type: str
      sample: Hopper
    compute_capability:
      description: Compute capability, null when unknown.
      type: str
      sample: "9.0"
    kernel_module_support:
      description: C(open) (open required), C(proprietary) (proprietary required), C(either) or C(unknown).
      type: str
      sample: either
    legacy_branch:
      description: The last driver branch supporting the GPU, null for GPUs of current branches.
      type: int
      sample: null
    data_center:
      description: Whether the GPU is a data-center part (null when unknown).
      type: bool
      sample: true
    pci_device_id:
      description: PCI device id, when known.
      type: str
      sample: "0x2335"
    pci_subsystem_id:
      description: PCI subsystem id, when known.
      type: str
      sample: "0x18BF"
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.action_options import NVIDIA_COMPAT


def main():
    # The action plugin of the same name does the work on the controller with this same spec; this file
    # documents it and only runs when the action is bypassed.
    module = AnsibleModule(argument_spec=NVIDIA_COMPAT, supports_check_mode=True)
    module.fail_json(
        msg="nvidia_compat runs on the controller as an action plugin; "
        "call it as gpufleet.nvidia.nvidia_compat"
    )


if __name__ == "__main__":
    main()
