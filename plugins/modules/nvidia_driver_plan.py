#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
"""Ansible module nvidia_driver_plan: the NVIDIA driver plan of a host, from the request and its facts."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_driver_plan
short_description: Plan the NVIDIA driver install of a host from the role's variables and the host's facts
description:
  - Makes the one driver plan of a run of the C(nvidia_driver) role, from the request (the role's variables,
    each option here is C(nvidia_driver_<option>)) and the host's facts (O(facts), what
    C(ansible_facts.nvidia) of M(gpufleet.nvidia.nvidia_facts) holds).
  - Refuses, before any change, a driver gpufleet did not install where packages would meet it (NVIDIA's
    runfile, see O(replace_runfile); packages of another repository, see O(existing); a DKMS tree of the
    nvidia module that no package owns). A host-managed driver is left as it is.
  - Validates the request (branch, exact version, kernel module flavor, reboot policy, MOK files (the key
    a PEM private key, the certificate PEM or DER, judged from the facts' C(driver.mok_files)), the
    C(auto|true|false) switches) and checks GPUs, branch, flavor and CUDA with the rules of
    M(gpufleet.nvidia.nvidia_compat) (unless O(compat_check=false)). Every
    refusal is one line naming the role's variable, its value and what is allowed, and only the variable
    that is wrong; the module fails with them before anything is changed.
  - Returns the plan (packages, pin packages, dnf module stream, holds and versionlocks, the change of
    state, services, package sources, verify expectations, the reboot decision before the install) computed
    by C(plugins/module_utils/plan/driver/); the role's tasks only execute it.
  - Refuses O(reboot=auto) and O(reboot=always) on the Ansible controller itself (O(is_controller)).
  - Changes nothing, and reads nothing when O(facts) is given; without O(facts) it gathers the C(gpu) and
    C(driver) subsets of the facts itself, with O(mok_key) and O(mok_cert) as the C(mok_paths) of
    M(gpufleet.nvidia.nvidia_facts).
version_added: "0.2.0"
author: gpufleet maintainers (!UNKNOWN)
options:
  facts:
    description:
      - The host's facts, C(ansible_facts.nvidia) as returned by M(gpufleet.nvidia.nvidia_facts) with at
        least the C(gpu) and C(driver) subsets (see C(docs/facts.md)).
      - The MOK files are judged from C(driver.mok_files) (gathered with C(mok_paths) listing O(mok_key) and
        O(mok_cert)); a MOK path the facts do not describe is not judged.
      - Not given, the module gathers them on the host (under O(root)).
    type: dict
  root:
    description: Root of the tree to gather facts from when O(facts) is not given (tests, images).
    type: path
    default: /
  branch:
    description: C(nvidia_driver_branch), the requested driver branch (C(580), C(R580)).
    type: str
    required: true
  version:
    description: C(nvidia_driver_version), an optional exact driver version inside O(branch) (C(580.95.05)).
    type: str
    default: ""
  kernel_module:
    description:
      - C(nvidia_driver_kernel_module), C(auto), C(open) or C(proprietary).
      - C(auto) takes nvidia_compat's recommendation for the GPUs, else NVIDIA's default for the branch.
    type: str
    default: auto
  source:
    description: C(nvidia_driver_source), where packages come from, C(nvidia_repo) or C(distro).
    type: str
    default: nvidia_repo
  reboot:
    description: C(nvidia_driver_reboot), the reboot policy C(auto), C(never) or C(always).
    type: str
    default: auto
  ubuntu_server:
    description: C(nvidia_driver_ubuntu_server), on Ubuntu's archive use the C(-server) driver packages.
    type: bool
    default: true
  fabricmanager:
    description: C(nvidia_driver_fabricmanager), C(auto) (when NVSwitches are present), C(true) or C(false).
    type: raw
    default: auto
  dcgm:
    description: C(nvidia_driver_dcgm), plan DCGM packages and its service.
    type: bool
    default: false
  build_kernel_module:
    description: C(nvidia_driver_build_kernel_module), C(auto) (not in a container), C(true) or C(false).
    type: raw
    default: auto
  replace_runfile:
    description: C(nvidia_driver_replace_runfile), allow removing a runfile-installed driver first.
    type: bool
    default: false
  existing:
    description:
      - C(nvidia_driver_existing), what to do with an installed driver whose packages come from another
        repository than O(source) (facts C(driver.packages[].origin)). C(refuse) fails the plan, naming the
        packages, their repository and the choices; C(replace) removes them first (a C(source_change)
        transition).
      - A DKMS tree of the nvidia module that no package owns (facts C(driver.dkms)) is refused either way,
        naming how to remove it; a runfile driver is O(replace_runfile)'s.
    type: str
    default: refuse
  mok_key:
    description: C(nvidia_driver_mok_key), path on the host of the MOK private key (DKMS under Secure Boot).
    type: str
    default: ""
  mok_cert:
    description: C(nvidia_driver_mok_cert), path on the host of the MOK certificate matching O(mok_key).
    type: str
    default: ""
  hold:
    description: C(nvidia_driver_hold), hold (apt) or versionlock (dnf) the driver packages.
    type: bool
    default: true
  persistenced:
    description: C(nvidia_driver_persistenced), enable (start where a driver is loaded) nvidia-persistenced.
    type: bool
    default: true
  debian_mirror:
    description:
      - C(nvidia_driver_debian_mirror), the Debian mirror URI of the non-free source (distro, Debian).
      - Empty takes the host's own Debian URI (facts C(host.os.debian_mirror)) when the facts have it, else
        C(http://deb.debian.org/debian).
    type: str
    default: ""
  is_controller:
    description:
      - The host is the Ansible controller itself (never rebooted).
      - With O(reboot=auto) or O(reboot=always) the plan is refused; O(reboot=never) is fine.
    type: bool
    default: false
  gpus:
    description:
      - C(nvidia_driver_gpus), GPUs to check instead of the facts' (items as M(gpufleet.nvidia.nvidia_compat)
        accepts them). Empty = the GPUs of O(facts).
    type: list
    elements: dict
    default: []
  cuda_version:
    description: C(nvidia_driver_cuda_version), the CUDA version the host must run (empty = not checked).
    type: str
    default: ""
  compat_check:
    description: Check GPUs, branch, flavor and CUDA (C(not nvidia_driver_skip_compat_check)).
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: The module changes nothing; check mode runs it fully.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - The after-install reboot decision is the filter C(gpufleet.nvidia.driver_reboot) over a fresh facts read.
seealso:
  - module: gpufleet.nvidia.nvidia_facts
  - module: gpufleet.nvidia.nvidia_compat
"""

EXAMPLES = r"""
- name: Gather the facts the plan needs
  gpufleet.nvidia.nvidia_facts:
    gather_subset: [gpu, driver]
  register: __nvidia_driver_facts

- name: Plan branch 580 (kernel module chosen for the GPUs)
  gpufleet.nvidia.nvidia_driver_plan:
    facts: "{{ __nvidia_driver_facts.ansible_facts.nvidia }}"
    branch: "580"
    kernel_module: auto
    source: nvidia_repo
  register: __nvidia_driver_planned

- name: Install what the plan says
  ansible.builtin.apt:
    name: "{{ __nvidia_driver_planned.plan.install_packages }}"
  when: __nvidia_driver_planned.plan.install
"""

RETURN = r"""
plan:
  description: The plan; with C(errors) the module fails and the plan must not be executed.
  returned: always
  type: dict
  contains:
    made:
      description: "A package plan was made (false when the request was refused first)"
      type: bool
    errors: {description: "Refusals, one line each, naming the role variable", type: list, elements: str}
    warnings:
      description: "Warnings (also emitted as Ansible warnings)"
      type: list
      elements: str
    os: {description: OS key (kb/hosts.py), type: str, sample: ubuntu2404}
    family: {description: "ubuntu, debian or rhel", type: str}
    pkg_mgr: {description: apt or dnf, type: str}
    source: {description: nvidia_repo or distro, type: str}
    branch: {description: "The branch, digits only", type: str, sample: "580"}
    version: {description: The exact version or null, type: str}
    flavor:
      description: "The resolved kernel module flavor (open or proprietary)"
      type: str
    install:
      description: "Packages are to be installed (false for a host-managed driver)"
      type: bool
    host_managed:
      description: "The driver comes from outside (host.driver_managed_externally)"
      type: bool
    host_managed_reason: {description: Why, type: str}
    host_managed_report: {description: What to tell the user about a host-managed driver, type: str}
    container: {description: The host is a container, type: bool}
    use_nvidia_repo: {description: NVIDIA's repository is the source, type: bool}
    debian_source:
      description: The Debian non-free source C({needed, uri, suites, components}).
      type: dict
    pin_packages:
      description: "Installed first (apt, R590+ branch pin)"
      type: list
      elements: str
    packages:
      description: "Driver packages (apt/dnf specs)"
      type: list
      elements: str
    kernel_packages: {description: Kernel module packages, type: list, elements: str}
    header_packages:
      description:
        - "Headers for the running kernel (DKMS), and for every installed kernel without an NVIDIA module
          whose headers are missing (facts C(driver.kernels); DKMS plans that build the module only)"
      type: list
      elements: str
    fabricmanager_packages: {description: Fabric manager packages, type: list, elements: str}
    dcgm_packages: {description: DCGM packages, type: list, elements: str}
    install_packages:
      description: "packages + kernel + fabric manager + DCGM (installed by name)"
      type: list
    dnf_module: {description: dnf module stream with profile or null, type: str}
    dnf_module_reset: {description: Module reset before a stream change, type: str}
    dnf_module_reset_needed:
      description: "Reset the stream first (branch change; a flavor switch is dnf module switch-to)"
      type: bool
    hold_names:
      description: "apt names to hold (empty without nvidia_driver_hold)"
      type: list
      elements: str
    versionlock_names: {description: dnf bare names to versionlock, type: list, elements: str}
    versionlock_patterns:
      description:
        - "NVIDIA's dnf branch lock (C(*nvidia*<branch>*), or C(*nvidia*<version>*)) added before the install:
          RHEL 10, and RHEL 8/9 userspace only (empty without O(hold))."
      type: list
      elements: str
    versionlock_patterns_needed:
      description: "Add the branch lock in this run (not when this plan's driver is installed and locked)"
      type: bool
    versionlock_delete:
      description: "dnf: the locked names released before a branch change, flavor switch or source change"
      type: list
      elements: str
    flavor_switch:
      description:
        - "NVIDIA's in-place kernel module flavor switch for this plan: C({apt_packages, argv}); apt_packages
          for C(apt install --autoremove --purge) (Debian/Ubuntu), argv the dnf command (RHEL 8/9
          C(dnf -y module switch-to nvidia-driver:<stream> --allowerasing), RHEL 10
          C(dnf -y install --allowerasing nvidia-open|cuda-drivers))."
      type: dict
    transition:
      description:
        - C({kind, unhold, remove, from_branches, switch_packages, switch_argv}); kind none, install,
          branch_change, flavor_switch, source_change (packages of another repository removed first,
          O(existing=replace)).
        - A flavor_switch on the same branch carries the plan's C(flavor_switch) (switch_packages for apt,
          switch_argv for dnf) and removes nothing by name.
      type: dict
    existing:
      description:
        - "What the installed driver's owners say: C({policy, foreign: [{name, version, repository}],
          undecided: [names], dkms: [{module, version, source_dir, dkms_dir, owned_by}], replace: [names]})."
        - C(foreign) are driver packages of a repository O(source) does not manage, C(undecided) those whose
          repository the facts could not tell, C(dkms) the unowned DKMS trees refused, C(replace) what is
          removed first.
      type: dict
    runfile:
      description: "C({conflict, message, remove}): remove = run nvidia-uninstall first"
      type: dict
    mok_signing:
      description: "DKMS must sign with the MOK pair (Secure Boot enabled)"
      type: bool
    services:
      description: Units to enable, each C({name, enabled, state}) (state started, or null to leave it).
      type: list
      elements: dict
    initramfs:
      description: "C({command, run}): the rebuild command and whether it runs here"
      type: dict
    verify:
      description: C({packages, check_packages, branch}) what verify expects installed.
      type: dict
    kernel_build: {description: "dkms, precompiled or none", type: str}
    build_kernel_module: {description: Kernel module packages are planned, type: bool}
    reboot:
      description:
        - "The reboot decision before the install C({reboot, needed, reason})"
        - "Without an NVIDIA GPU (facts C(gpus) empty) an installed module that is not loaded needs a reboot
          only when facts C(driver.boot_pending) says the running kernel's initramfs or nvidia module changed
          after this boot."
      type: dict
    touches_host:
      description: "The run changes this host or reboots it (drain it first)"
      type: bool
    summary: {description: One line for the preflight report, type: str}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat as compat_rules
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather

ARGUMENT_SPEC = {
    "facts": {"type": "dict"},
    "root": {"type": "path", "default": "/"},
    "branch": {"type": "str", "required": True},
    "version": {"type": "str", "default": ""},
    "kernel_module": {"type": "str", "default": "auto"},
    "source": {"type": "str", "default": "nvidia_repo"},
    "reboot": {"type": "str", "default": "auto"},
    "ubuntu_server": {"type": "bool", "default": True},
    "fabricmanager": {"type": "raw", "default": "auto"},
    "dcgm": {"type": "bool", "default": False},
    "build_kernel_module": {"type": "raw", "default": "auto"},
    "replace_runfile": {"type": "bool", "default": False},
    "existing": {"type": "str", "default": "refuse"},
    "mok_key": {"type": "str", "default": "", "no_log": False},  # a path on the host, not the key itself
    "mok_cert": {"type": "str", "default": ""},
    "hold": {"type": "bool", "default": True},
    "persistenced": {"type": "bool", "default": True},
    "debian_mirror": {"type": "str", "default": ""},
    "is_controller": {"type": "bool", "default": False},
    "gpus": {"type": "list", "elements": "dict", "default": []},
    "cuda_version": {"type": "str", "default": ""},
    "compat_check": {"type": "bool", "default": True},
}


def check_compat(params, request, facts):
    """plan.compat.check on the request, its messages in the role's words."""
    gave = bool(params["gpus"])
    try:
        result = compat_rules.check(
            gpus=dp.compat_gpus(params["gpus"], facts),
            driver_branch=request["branch"],
            driver_version=request["version"] or None,
            kernel_module=request["kernel_module"],
            cuda_version=params["cuda_version"] or None,
            os_info=dp.compat_os(facts),
        )
    except compat_rules.CompatInputError as exc:
        return {"errors": [dp.user_words(exc, gave)], "warnings": [], "recommended": {}}
    return {
        "errors": [dp.user_words(e, gave) for e in result["errors"]],
        "warnings": [dp.user_words(w, gave) for w in result["warnings"]],
        "recommended": result["recommended"],
    }


def make_plan(params):
    """The plan from the module's parameters (facts gathered when not given)."""
    mok_paths = [path for path in (params["mok_key"], params["mok_cert"]) if path]
    facts = params["facts"] or gather(params["root"], ["gpu", "driver"], mok_paths=mok_paths)
    request = {key: params[key] for key in dp.REQUEST_DEFAULTS if key in params}
    compat = None
    if params["compat_check"] and not dp.validate(request, facts):
        compat = check_compat(params, request, facts)
    return dp.decide(request, facts, compat)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    plan = make_plan(module.params)
    for warning in plan["warnings"]:
        module.warn(warning)
    if plan["errors"]:
        module.fail_json(msg="; ".join(plan["errors"]), changed=False, plan=plan)
    module.exit_json(changed=False, plan=plan)


if __name__ == "__main__":
    main()
