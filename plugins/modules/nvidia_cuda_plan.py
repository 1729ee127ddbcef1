#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_cuda_plan
short_description: Plan the CUDA toolkits of a host (validated variables, paths, alternatives, verify target)
version_added: "0.2.0"
description:
  - Validates the C(cuda_toolkit) role's variables (every error names the variable, its value and what is
    allowed, and only the variable that is wrong), checks the plan against the host's GPUs, loaded driver and
    OS with the rules of C(gpufleet.nvidia.nvidia_compat) (C(plan/compat.py)), and returns everything the
    role's tasks execute - C(/usr/local/cuda-X.Y) per version, the default toolkit, the update-alternatives
    arguments, the profile and linker-cache files, the gpufleet-installed toolkits to remove, the redist
    releases, components and platform, and the verify architecture.
  - The default CUDA is decided here once (C(plan/cuda.default_cuda)) - O(cuda_toolkit_default), else the last
    of O(cuda_toolkit_versions). C(gpufleet.nvidia.nvidia_cudnn_plan) and C(playbooks/preflight.yml) use the
    same decision.
  - Never reaches the network. Host facts come from O(facts) (what C(ansible_facts.nvidia) holds); only when
    they are not given (or lack the C(cuda) subset that O(cuda_toolkit_remove_unlisted) needs) are they
    gathered, as C(gpufleet.nvidia.nvidia_facts) does.
options:
  cuda_toolkit_versions:
    description: Toolkit versions, C(X.Y) or C(X.Y.Z). Empty is refused (with O(check_only) - no CUDA check).
    type: list
    elements: str
    default: ["13.0"]
  cuda_toolkit_default:
    description: The default toolkit; empty = the last of O(cuda_toolkit_versions).
    type: str
    default: ""
  cuda_toolkit_source:
    description: Where the toolkits come from.
    type: str
    choices: [nvidia_repo, redist, distro]
    default: redist
  cuda_toolkit_redist_base_url:
    description: redist base URL (the part before C(cuda/redist/)).
    type: str
    default: https://developer.download.nvidia.com/compute
  cuda_toolkit_redist_components:
    description: redist components; empty = nvcc, headers and runtime of the CUDA major.
    type: list
    elements: str
    default: []
  cuda_toolkit_redist_releases:
    description: C(X.Y) -> C(X.Y.Z) overrides of the built-in redist release table.
    type: dict
    default: {}
  cuda_toolkit_controller_cache:
    description: Whether the archives come through the controller cache (the host reads its local copy).
    type: bool
    default: false
  cuda_toolkit_controller_cache_dir:
    description: The controller's cache directory.
    type: str
    default: /var/tmp/gpufleet-redist
  cuda_toolkit_remove_unlisted:
    description: Plan the removal of gpufleet-installed toolkits (those with gpufleet's marker) not listed.
    type: bool
    default: false
  cuda_toolkit_profile:
    description: Whether C(/etc/profile.d/gpufleet-cuda.sh) is wanted.
    type: bool
    default: true
  cuda_toolkit_ldconfig:
    description: Whether C(/etc/ld.so.conf.d/gpufleet-cuda.conf) is wanted.
    type: bool
    default: true
  cuda_toolkit_verify_arch:
    description: The verify kernel's architecture; empty = C(sm_<cc>) of the host's first GPU, else C(sm_90).
    type: str
    default: ""
  cuda_toolkit_existing:
    description:
      - Where a listed toolkit's C(/usr/local/cuda-X.Y) already holds something gpufleet did not install (a
        package's toolkit, NVIDIA's runfile's, a hand-made tree, a directory with only cuDNN in it), where
        C(/usr/local/cuda) or C(/usr/local/cuda-<major>) is a link made outside update-alternatives, or where
        the source changes from gpufleet's own redist tree to packages.
      - For O(cuda_toolkit_source=nvidia_repo) a tree of the packages is theirs (apt/dnf keep it); a runfile's
        or hand-made tree is judged as for redist.
      - C(refuse) stops before any change, naming the path and its owner; C(adopt) uses it as it is when its
        version matches (gpufleet manages only the alternatives, PATH and linker cache, and verifies it; a
        foreign link is left alone and its alternative not managed); C(replace) moves it into a dated backup
        C(<path>.gpufleet-backup-<UTC>) (never deleted) and installs; refused for a package's tree.
    type: str
    choices: [refuse, adopt, replace]
    default: refuse
  cuda_toolkit_system_default:
    description:
      - Whether gpufleet may move the host's default toolkit (C(/usr/local/cuda), C(/usr/local/cuda-<major>)
        through update-alternatives, and so what C(libcudart.so.<major>) resolves to) away from a toolkit it
        does not own. C(false) refuses such a plan, naming the link, its current toolkit and owner.
      - The same rule covers links made outside update-alternatives (C(cuda_toolkit_existing)) and gpufleet's
        own C(/etc) files holding someone else's content (refused unless C(cuda_toolkit_existing=replace),
        which keeps a backup).
    type: bool
    default: false
  cuda_toolkit_skip_compat_check:
    description: Skip the compatibility rules (the result says so).
    type: bool
    default: false
extends_documentation_fragment:
  - gpufleet.nvidia.plan_checks
attributes:
  check_mode:
    support: full
    details: Reads only the facts (toolkits, owners); the same plan, with the same refusals, in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
author: gpufleet maintainers (!UNKNOWN)
seealso:
  - module: gpufleet.nvidia.nvidia_cudnn_plan
  - module: gpufleet.nvidia.nvidia_compat
"""

EXAMPLES = r"""
- name: Plan the toolkits
  gpufleet.nvidia.nvidia_cuda_plan:
    cuda_toolkit_versions: ["12.9", "13.0"]
    cuda_toolkit_default: "13.0"
    facts: "{{ __cuda_toolkit_facts.ansible_facts.nvidia }}"
    machine: "{{ ansible_facts['machine'] }}"
  register: __cuda_toolkit_plan
"""

RETURN = r"""
plan:
  description: What the cuda_toolkit role executes (with O(check_only) only versions and default).
  returned: always
  type: dict
  contains:
    versions:
      description: The listed versions as strings.
      type: list
      elements: str
    xy:
      description: Their C(X.Y).
      type: list
      elements: str
    default:
      description: The default toolkit C(X.Y).
      type: str
      sample: "13.0"
    toolkits:
      description:
        - Per version - version, xy, major, dest (C(/usr/local/cuda-X.Y)), nvcc, alternative
          (C(cuda-<major>)), release (redist C(X.Y.Z)) and components (redist).
      type: list
      elements: dict
    install:
      description: The toolkits gpufleet installs (redist) - entries of C(toolkits) whose action is not adopt.
      type: list
      elements: dict
    package_versions:
      description: The versions the package plan installs (nvidia_repo, distro) - all but the adopted ones.
      type: list
      elements: str
    adopted:
      description: Toolkit trees used as they are (C(cuda_toolkit_existing=adopt)).
      type: list
      elements: str
    retire:
      description: gpufleet redist trees moved into a backup before the packages install (source switch).
      type: list
      elements: dict
    alternatives_args:
      description: The arguments of cuda-alternatives.sh (C(--skip=<name>) for adopted foreign links, the
        default, the versions).
      type: list
      elements: str
    link_backups:
      description: Links made outside update-alternatives moved aside first - path and backup.
      type: list
      elements: dict
    default_changes:
      description: Alternatives whose value changes - name, before, after, owner of before.
      type: list
      elements: dict
    loader:
      description: What C(libcudart.so.<major>) resolves to before and after - soname, before, after,
        changes, shadowed.
      type: list
      elements: dict
    profile:
      description: The profile.d file - path, content, wanted and backup (someone else's file is there).
      type: dict
    ld_conf:
      description: The ld.so.conf.d file - path, content, wanted and backup.
      type: dict
    remove:
      description: Unlisted gpufleet toolkits - path and the alternatives names to unregister.
      type: list
      elements: dict
    remove_alternatives:
      description: The same as flat path and name pairs.
      type: list
      elements: dict
    verify:
      description: The verify step - arch, nvcc (path and expected release text) and prefixes.
      type: dict
    redist:
      description:
        - platform, base_url (what the host reads), controller_base_url, host_cache, controller_cache and
          controller_cache_dir.
      type: dict
default:
  description: The default CUDA C(X.Y) (the one decision).
  returned: always
  type: str
  sample: "13.0"
compat:
  description: The compatibility answer - compatible, errors, warnings, recommended, gpus, checked (skipped).
  returned: always
  type: dict
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cuda as plan_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import redist as plan_redist
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import stack
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather

PREFIX = "cuda_toolkit_"
ARGUMENT_SPEC = {
    "cuda_toolkit_versions": {"type": "list", "elements": "str", "default": list(plan_cuda.DEFAULT_VERSIONS)},
    "cuda_toolkit_default": {"type": "str", "default": ""},
    "cuda_toolkit_source": {"type": "str", "choices": list(plan_cuda.SOURCES), "default": "redist"},
    "cuda_toolkit_redist_base_url": {"type": "str", "default": plan_redist.NVIDIA_BASE_URL},
    "cuda_toolkit_redist_components": {"type": "list", "elements": "str", "default": []},
    "cuda_toolkit_redist_releases": {"type": "dict", "default": {}},
    "cuda_toolkit_controller_cache": {"type": "bool", "default": False},
    "cuda_toolkit_controller_cache_dir": {"type": "str", "default": stack.CONTROLLER_CACHE},
    "cuda_toolkit_remove_unlisted": {"type": "bool", "default": False},
    "cuda_toolkit_profile": {"type": "bool", "default": True},
    "cuda_toolkit_ldconfig": {"type": "bool", "default": True},
    "cuda_toolkit_verify_arch": {"type": "str", "default": ""},
    "cuda_toolkit_existing": {
        "type": "str",
        "choices": list(plan_cuda.EXISTING_POLICIES),
        "default": "refuse",
    },
    "cuda_toolkit_system_default": {"type": "bool", "default": False},
    "cuda_toolkit_skip_compat_check": {"type": "bool", "default": False},
    **stack.CHECK_ARGUMENT_SPEC,
}


def host_facts(given, subsets):
    """The facts given, or (when none are given or they lack a subset) gathered here: the only probing."""
    if given and set(subsets) <= set(given.get("gather_subset") or []):
        return given
    return gather(gather_subset=subsets)


def request(p):
    req = {k[len(PREFIX) :]: v for k, v in p.items() if k.startswith(PREFIX)}
    req.update(
        skip_compat=req.pop("skip_compat_check"),
        base_url=req.pop("redist_base_url"),
        releases=req.pop("redist_releases"),
        components=req.pop("redist_components"),
        machine=p["machine"] or os.uname().machine,
        stamp=time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
    )
    return req


def run(module):
    p = module.params
    overrides = {k: p[k] for k in stack.OVERRIDES}
    if p["check_only"]:
        return check_only(p, overrides)
    req = request(p)
    # the existing toolkits and owners matter for removals and for who owns what the role touches
    needs_cuda = req["remove_unlisted"] or req["source"] != "distro"
    subsets = ["gpu", "driver"] + (["cuda", "owners"] if needs_cuda else [])
    facts = host_facts(p["facts"], subsets) if not req["skip_compat"] or needs_cuda else p["facts"]
    owned = [t["path"] for t in (facts or {}).get("cuda", {}).get("toolkits", []) if t.get("gpufleet_marker")]
    plan = plan_cuda.plan(req, facts, overrides, owned)
    plan["remove_alternatives"] = plan_cuda.remove_alternatives(plan["remove"])
    return {"changed": False, "plan": plan, "default": plan["default"], "compat": plan.pop("compat")}


def check_only(p, overrides):
    versions = p["cuda_toolkit_versions"]
    if versions:
        plan_cuda.validate(versions, p["cuda_toolkit_default"])
    checks = plan_cuda.checks(versions) or [("no CUDA toolkit", {})]
    facts = host_facts(p["facts"], ["gpu", "driver"])
    found = stack.run_checks(checks, stack.compat_inputs(facts, overrides))
    default = plan_cuda.default_cuda(versions, p["cuda_toolkit_default"])
    plan = {"versions": [str(v) for v in versions], "default": default}
    return {"changed": False, "plan": plan, "default": default, "compat": found}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = run(module)
    except stack.PlanError as exc:
        module.fail_json(msg=f"cuda_toolkit: {exc}")
    for warning in result["compat"]["warnings"]:
        module.warn(warning)
    compat = result["compat"]
    if compat["errors"] and not module.params["check_only"]:
        module.fail_json(msg=stack.failure_message("cuda_toolkit", compat["errors"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
