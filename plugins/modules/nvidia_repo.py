#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_repo
short_description: NVIDIA's CUDA repository with a fingerprint-pinned key (deb822 or dnf .repo)
version_added: "0.1.0"
description:
  - Plans the repository for the target's OS (ubuntu2204, ubuntu2404, debian12, debian13, rhel8, rhel9,
    rhel10; Rocky, AlmaLinux and Oracle Linux map to rhelN), downloads the repository key, checks its OpenPGP
    fingerprint against the pinned one, and writes the key and the repository file atomically.
  - O(state=planned) returns the plan and package specs and changes nothing.
  - Used by the internal role C(gpufleet.nvidia.internal) (entry point repository.yml). The key goes into a
    keyring file that only this source's Signed-By names (no global trust, no cuda-keyring package).
options:
  state:
    description: V(present) writes the key and repository file; V(planned) only reports.
    type: str
    choices: [present, planned]
    default: present
  distribution:
    description: C(ansible_facts['distribution']), e.g. Ubuntu, Debian, RedHat, Rocky, AlmaLinux.
    type: str
    required: true
  distribution_version:
    description: C(ansible_facts['distribution_version']).
    type: str
    required: true
  machine:
    description: C(ansible_facts['machine']).
    type: str
    default: x86_64
  base_url:
    description: A site mirror of NVIDIA's CUDA repositories (empty = NVIDIA's own).
    type: str
    default: ""
  key_fingerprint:
    description: Override of the pinned key fingerprint (40 hex digits); empty = gpufleet's pinned one.
    type: str
    default: ""
  timeout:
    description: Network timeout in seconds.
    type: int
    default: 30
  packages_for:
    description:
      - Also plan the packages of V(cudnn) or V(cuda_toolkit) for O(source) and report which are missing on
        the target (its package database, read by C(probe/packages.py)). V(none) plans only the repository.
    type: str
    choices: [none, cudnn, cuda_toolkit]
    default: none
  source:
    description: V(nvidia_repo) (NVIDIA's packages) or V(distro) (the distribution's archive).
    type: str
    choices: [nvidia_repo, distro]
    default: nvidia_repo
  versions:
    description: Requested versions (cuda_toolkit - the toolkit versions; cudnn - one cuDNN version).
    type: list
    elements: str
    default: []
  cuda_major:
    description: cudnn - the CUDA major of the build.
    type: str
    default: ""
  dev:
    description: cudnn - also the development packages.
    type: bool
    default: true
author: gpufleet contributors
notes:
  - Check mode is supported; the key is fetched and checked, nothing is written.
attributes:
  check_mode:
    support: full
    details: O(state=present) fetches and checks the key and reports whether a file would change.
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: NVIDIA CUDA repository
  gpufleet.nvidia.nvidia_repo:
    distribution: "{{ ansible_facts['distribution'] }}"
    distribution_version: "{{ ansible_facts['distribution_version'] }}"
    machine: "{{ ansible_facts['machine'] }}"
"""

RETURN = r"""
repo:
  description: The plan (repo_dir, url, key_url, key_fingerprint, keyring, path, content, manager).
  returned: always
  type: dict
fingerprint:
  description: The fingerprint found in the downloaded key.
  returned: when state=present
  type: str
packages:
  description:
    - specs (pinned package specs), names (bare names), hold (names to hold), installed (name -> version on
      the target), missing (specs not installed at the requested version).
  returned: when packages_for is not none
  type: dict
"""

import os
import re
from urllib.error import URLError
from urllib.request import Request, urlopen

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import Packages

# The filesystem root whose package database is read (tests point it at a fake tree).
HOST_ROOT = "/"


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _write(module, path, data, mode):
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    tmp = f"{path}.gpufleet-tmp-{os.getpid()}"
    with open(tmp, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, mode)
    module.atomic_move(tmp, path)


def installed_versions(names):
    """name -> installed version (deb: Version; rpm: version-release) of the names that are installed.

    Read through the one package-database reader (probe/packages.py), under HOST_ROOT.
    """
    packages = Packages(Root(HOST_ROOT))
    found = {}
    for name in names:
        package = packages.get(name)
        if package:
            found[name] = re.sub(r"^[0-9]+:", "", package["version"])
    return found


def package_plan(module, plan):
    p = module.params
    rdir = plan["repo_dir"]
    if p["packages_for"] == "cudnn":
        if p["source"] == "distro":
            repo_plan.distro_cudnn_plan(p["distribution"], p["distribution_version"])
        if len(p["versions"]) != 1:
            raise repo_plan.RepoPlanError("cudnn_version: exactly one version per package plan")
        specs = repo_plan.cudnn_packages(p["versions"][0], p["cuda_major"], rdir, dev=p["dev"])
        names = repo_plan.package_names(specs, rdir)
        hold = names[:1]  # the library; -dev/-headers depend on its exact version
    elif p["source"] == "distro":
        distro = repo_plan.distro_cuda_plan(p["distribution"], p["distribution_version"], p["versions"])
        specs = names = hold = distro["packages"]
    else:
        specs = repo_plan.cuda_toolkit_packages(p["versions"], rdir)
        names = repo_plan.package_names(specs, rdir)
        hold = []
    installed = installed_versions(names)
    missing = []
    for spec, name in zip(specs, names):
        want = spec[len(name) + 1 :].rstrip("*")
        have = installed.get(name)
        if have is None or (want and not have.startswith(want.split("*")[0])):
            missing.append(spec)
    return {"specs": specs, "names": names, "hold": hold, "installed": installed, "missing": missing}


def run(module):
    p = module.params
    plan = repo_plan.repo_config(
        p["distribution"], p["distribution_version"], p["machine"], p["base_url"], p["key_fingerprint"]
    )
    result = {"changed": False, "repo": plan}
    if p["packages_for"] != "none":
        result["packages"] = package_plan(module, plan)
    if p["state"] == "planned":
        return result
    url = plan["key_url"]
    try:
        with urlopen(Request(url, headers={"User-Agent": "gpufleet"}), timeout=p["timeout"]) as resp:
            key = resp.read()
    except (URLError, OSError) as exc:
        raise repo_plan.RepoPlanError(
            f"cannot fetch the repository key {url}: {getattr(exc, 'reason', exc)}"
        ) from None
    result["fingerprint"] = repo_plan.check_key(key, plan["key_fingerprint"], "<role>_repo_key_fingerprint")
    content = plan["content"].encode()
    for path, data in ((plan["keyring"], key), (plan["path"], content)):
        if _read(path) != data:
            result["changed"] = True
            if not module.check_mode:
                _write(module, path, data, 0o644)
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["present", "planned"], "default": "present"},
            "distribution": {"type": "str", "required": True},
            "distribution_version": {"type": "str", "required": True},
            "machine": {"type": "str", "default": "x86_64"},
            "base_url": {"type": "str", "default": ""},
            "key_fingerprint": {"type": "str", "default": ""},
            "timeout": {"type": "int", "default": 30},
            "packages_for": {"type": "str", "choices": ["none", "cudnn", "cuda_toolkit"], "default": "none"},
            "source": {"type": "str", "choices": ["nvidia_repo", "distro"], "default": "nvidia_repo"},
            "versions": {"type": "list", "elements": "str", "default": []},
            "cuda_major": {"type": "str", "default": ""},
            "dev": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    try:
        result = run(module)
    except repo_plan.RepoPlanError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
