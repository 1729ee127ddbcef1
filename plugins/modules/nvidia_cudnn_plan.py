#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_cudnn_plan
short_description: Plan the cuDNN builds of a host (validated variables, trees, links, verify targets)
version_added: "0.2.0"
description:
  - Validates the C(cudnn) role's variables (every error names the variable, its value and what is allowed,
    and only the variable that is wrong; an unknown CUDA major is refused here, before any manifest is read),
    checks each build against the host's GPUs, loaded driver and OS with the rules of
    C(gpufleet.nvidia.nvidia_compat) (C(plan/compat.py)), and returns what the role's tasks execute - per
    build the versioned tree, the C(current-cuda<M>) link, the prune pattern and the verify library; the
    linker-cache file; the redist locations.
  - The main build's CUDA major, when O(cudnn_cuda_major) is empty, is the major of the default CUDA that
    C(gpufleet.nvidia.nvidia_cuda_plan) decides (C(plan/cuda.default_cuda)) from O(cuda_toolkit_versions) and
    O(cuda_toolkit_default) as the host sets them, else from the cuda_toolkit role's default list.
  - Never reaches the network. Host facts come from O(facts) (what C(ansible_facts.nvidia) holds); only when
    they are not given are they gathered, as C(gpufleet.nvidia.nvidia_facts) does.
options:
  cudnn_version:
    description: cuDNN version, C(X.Y.Z) or C(X.Y.Z.B).
    type: str
    default: "9.14.0"
  cudnn_cuda_major:
    description: CUDA major of the main build; empty = the major of the default CUDA.
    type: str
    default: ""
  cudnn_extra_variants:
    description: Further builds side by side, each C({version, cuda_major}), as versioned trees from NVIDIA's
      redist archives (with O(cudnn_source=nvidia_repo) beside the main build's packages).
    type: list
    elements: dict
    default: []
  cudnn_source:
    description: Where cuDNN comes from (V(distro) is refused with the reason).
    type: str
    choices: [nvidia_repo, redist, distro]
    default: redist
  cudnn_redist_base_url:
    description: redist base URL (the part before C(cudnn/redist/)).
    type: str
    default: https://developer.download.nvidia.com/compute
  cudnn_controller_cache:
    description: Whether the archives come through the controller cache (the host reads its local copy).
    type: bool
    default: false
  cudnn_controller_cache_dir:
    description: The controller's cache directory.
    type: str
    default: /var/tmp/gpufleet-redist
  cudnn_prefix:
    description: Root of the versioned trees and C(current-cuda<M>) links.
    type: str
    default: /opt/nvidia/cudnn
  cudnn_keep_versions:
    description: Older trees kept per CUDA major.
    type: int
    default: 1
  cudnn_ldconfig:
    description: Whether the main build goes into the dynamic linker cache.
    type: bool
    default: true
  cudnn_existing:
    description:
      - What to do with cuDNN gpufleet did not install, in its way (decided from the C(owners) facts).
      - A tree at the main or an extra build's C(<cudnn_prefix>/<version>-cuda<M>) without gpufleet's marker -
        C(refuse) (the default) stops before any change naming it and its owner, C(replace) moves it into a
        dated backup (never deleted).
      - C(adopt) uses the copy the linker cache already resolves for C(libcudnn.so.<major>) (an apt/dnf
        package, a hand-copied tarball) when its release matches O(cudnn_version), installing nothing for
        the main build and verifying that copy; another release is refused.
      - Switching O(cudnn_source) away from redist while gpufleet's redist cuDNN is in the linker cache needs
        C(replace) (its ld.so.conf.d entry is removed; the trees are kept).
    type: str
    choices: [refuse, adopt, replace]
    default: refuse
  cudnn_system_default:
    description:
      - Whether gpufleet's main build may become what C(libcudnn.so.<major>) resolves to where a copy gpufleet
        does not own provides it now (its ld.so.conf.d file would come first in ldconfig's order). C(false)
        refuses, saying what resolves now and what would afterwards; O(cudnn_ldconfig=false) installs
        beside it.
      - A copy that comes first anyway (for example a tarball copied into C(/usr/local/cuda/lib64), which
        NVIDIA's C(000_cuda.conf) lists) is reported in RV(plan.loader) (C(shadowed)), and verify then loads
        gpufleet's build by its path.
    type: bool
    default: false
  cudnn_skip_compat_check:
    description: Skip the compatibility rules (the result says so).
    type: bool
    default: false
  cuda_toolkit_versions:
    description: The host's cuda_toolkit_versions; omitted = the cuda_toolkit role's default list.
    type: list
    elements: str
  cuda_toolkit_default:
    description: The host's cuda_toolkit_default; omitted or empty = the last of O(cuda_toolkit_versions).
    type: str
  os_family:
    description: C(ansible_facts.os_family) (where NVIDIA's packages put the library).
    type: str
    default: Debian
extends_documentation_fragment:
  - gpufleet.nvidia.plan_checks
attributes:
  check_mode:
    support: full
    details: Reads only (the facts); the same plan, with the same refusals, in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
author: gpufleet maintainers (!UNKNOWN)
seealso:
  - module: gpufleet.nvidia.nvidia_cuda_plan
  - module: gpufleet.nvidia.nvidia_compat
"""

EXAMPLES = r"""
- name: Plan cuDNN
  gpufleet.nvidia.nvidia_cudnn_plan:
    cudnn_version: "9.14.0"
    cuda_toolkit_versions: ["12.9"]
    facts: "{{ __cudnn_facts.ansible_facts.nvidia }}"
  register: __cudnn_plan
"""

RETURN = r"""
plan:
  description: What the cudnn role executes (empty with O(check_only)).
  returned: always
  type: dict
  contains:
    variants:
      description:
        - The builds, main first - version, cuda_major, main, label (the variable it comes from), dest (with
          C({version}) for nvidia_redist to fill), link, prune_pattern, verify_lib, verify_dir.
      type: list
      elements: dict
    main:
      description: The main build (the first of RV(plan.variants)).
      type: dict
    cuda_default:
      description: The default CUDA C(X.Y) the main build's major follows when cudnn_cuda_major is empty.
      type: str
    ld_conf:
      description: The ld.so.conf.d file - path, content, wanted, backup (someone else's file is there) and
        remove (gpufleet's own file, not wanted).
      type: dict
    install:
      description: The builds gpufleet installs (all but an adopted main build); each has C(source).
      type: list
      elements: dict
    redist_install:
      description: The builds installed as versioned trees from NVIDIA's redist archives - every build with
        O(cudnn_source=redist), the O(cudnn_extra_variants) beside the packages with V(nvidia_repo) (NVIDIA's
        packages for different CUDA majors conflict); each has C(replace).
      type: list
      elements: dict
    adopted:
      description: The sonames whose existing copy is used as it is (C(cudnn_existing=adopt)).
      type: list
      elements: str
    loader:
      description: What C(libcudnn.so.<major>) resolves to before and after - soname, before (path, real,
        version, owner), after (path, owner), changes, shadowed.
      type: list
      elements: dict
    transition:
      description: A source switch away from redist - from, to, removed, kept; null when none.
      type: dict
    redist:
      description: platform, base_url (what the host reads), controller_base_url, host_cache and more.
      type: dict
compat:
  description: The compatibility answer - compatible, errors, warnings, recommended, gpus, checked (skipped).
  returned: always
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cudnn as plan_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import redist as plan_redist
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import stack
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather

PREFIX = "cudnn_"
ARGUMENT_SPEC = {
    "cudnn_version": {"type": "str", "default": "9.14.0"},
    "cudnn_cuda_major": {"type": "str", "default": ""},
    "cudnn_extra_variants": {"type": "list", "elements": "dict", "default": []},
    "cudnn_source": {"type": "str", "choices": list(plan_cudnn.SOURCES), "default": "redist"},
    "cudnn_redist_base_url": {"type": "str", "default": plan_redist.NVIDIA_BASE_URL},
    "cudnn_controller_cache": {"type": "bool", "default": False},
    "cudnn_controller_cache_dir": {"type": "str", "default": stack.CONTROLLER_CACHE},
    "cudnn_prefix": {"type": "str", "default": "/opt/nvidia/cudnn"},
    "cudnn_keep_versions": {"type": "int", "default": 1},
    "cudnn_ldconfig": {"type": "bool", "default": True},
    "cudnn_existing": {"type": "str", "choices": ["refuse", "adopt", "replace"], "default": "refuse"},
    "cudnn_system_default": {"type": "bool", "default": False},
    "cudnn_skip_compat_check": {"type": "bool", "default": False},
    "cuda_toolkit_versions": {"type": "list", "elements": "str"},
    "cuda_toolkit_default": {"type": "str"},
    "os_family": {"type": "str", "default": "Debian"},
    **stack.CHECK_ARGUMENT_SPEC,
}


def request(p):
    req = {k[len(PREFIX) :]: v for k, v in p.items() if k.startswith(PREFIX)}
    req.update(
        skip_compat=req.pop("skip_compat_check"),
        base_url=req.pop("redist_base_url"),
        cuda_versions=p["cuda_toolkit_versions"],
        cuda_default=p["cuda_toolkit_default"],
        machine=p["machine"] or os.uname().machine,
        os_family=p["os_family"],
    )
    return req


def run(module):
    p = module.params
    req = request(p)
    facts = p["facts"]
    wanted = ["gpu", "driver"] + ([] if p["check_only"] else ["owners"])
    if not (facts and set(wanted) <= set(facts.get("gather_subset") or [])):
        # the only probing, when the facts given lack a subset this plan reads
        facts = gather(gather_subset=wanted, owner_paths=[req["prefix"]])
    overrides = {k: p[k] for k in stack.OVERRIDES}
    os_info = p["os"] or ((facts or {}).get("host") or {}).get("os") or {}
    if p["check_only"]:
        builds = plan_cudnn.variants(req)
        checks = plan_cudnn.checks(builds, req["cuda_versions"], req["cuda_default"])
        found = stack.run_checks(checks, stack.compat_inputs(facts, overrides))
        return {"changed": False, "plan": {}, "compat": found}
    plan = plan_cudnn.plan(req, facts, overrides, os_info)
    return {"changed": False, "plan": plan, "compat": plan.pop("compat")}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        result = run(module)
    except stack.PlanError as exc:
        module.fail_json(msg=f"cudnn: {exc}")
    for warning in result["compat"]["warnings"]:
        module.warn(warning)
    if result["compat"]["errors"] and not module.params["check_only"]:
        module.fail_json(msg=stack.failure_message("cudnn", result["compat"]["errors"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
