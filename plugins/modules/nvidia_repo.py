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
  - O(state=planned) returns the plan and package specs and changes nothing. With apt and packages to install
    it refuses when C(ansible.builtin.apt) could not run (python3-apt missing for the module's interpreter and
    no candidate for it in apt), naming C(<role>_source).
  - O(state=present) with apt also refreshes apt's index of this repository only (C(apt-get update) of its
    source file); a Release whose signature does not verify with the pinned key, an index whose hash differs
    from the signed Release, or an unreachable repository fails with the reason, before anything is installed.
  - O(state=pinned) (apt) reads apt's verified index of the repository, resolves the whole package set (the
    requested packages and, within the repository, their dependencies at the versions the set requires),
    refuses a set that mixes CUDA majors (or, for toolkits, X.Y releases), writes apt preferences that pin
    every package of the set to its version, and reports which are missing, which holds a move needs released
    and which to hold.
  - What is missing, which holds a move releases and what a refusal says are decided by C(plan/repo.py)
    (C(package_plan), C(pinned_packages), C(python_apt_refusal)) from the installed state and python3-apt
    state that C(probe/packages.py) reads, the same reads as the C(packages) subset of
    C(gpufleet.nvidia.nvidia_facts).
  - Used by the internal role C(gpufleet.nvidia.internal) (entry point repository.yml). The key goes into a
    keyring file that only this source's Signed-By names (no global trust, no cuda-keyring package).
options:
  state:
    description:
      - V(present) writes the key and repository file (and refreshes apt's index of it); V(planned) only
        reports; V(pinned) resolves the package set from the repository's index and writes its apt pins.
    type: str
    choices: [present, planned, pinned]
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
  validate_certs:
    description:
      - Verify the server's TLS certificate when fetching the key. The fetch goes through
        C(ansible.module_utils.urls), so the C(https_proxy), C(http_proxy) and C(no_proxy) environment
        variables of the task apply.
    type: bool
    default: true
  ca_path:
    description: A PEM file of CA certificates to verify the key's server with.
    type: path
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
  refresh:
    description: With O(state=present) and apt, run C(apt-get update) for this repository's source only.
    type: bool
    default: true
  remove_unlisted:
    description:
      - With O(state=pinned), packages of the set gpufleet pinned before that the new set lacks are reported
        in C(packages.remove) for the role to remove; without it they stay installed and pinned.
    type: bool
    default: false
  caller:
    description:
      - The role this runs for (C(ansible_parent_role_names | first)); names its variables in errors
        (e.g. C(cudnn_repo_key_fingerprint)). Empty - taken from O(packages_for).
    type: str
    default: ""
author: gpufleet maintainers (!UNKNOWN)
notes:
  - Check mode is supported; the key is fetched and checked, nothing is written.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
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
    - With O(state=pinned) the specs are the whole set (name=version), plus unhold (held packages whose
      version the plan changes, or that it replaces or removes) and index (whether apt's index of the
      repository was read).
    - With O(state=pinned), from the set gpufleet pinned before (its pin file) that the new set lacks and the
      host still has - replaced (cuDNN packages of another CUDA major, which apt replaces with the new set;
      NVIDIA's packages conflict), remove (with O(remove_unlisted)) and kept (still pinned, and held for
      cuDNN).
  returned: when packages_for is not none
  type: dict
pin:
  description: The apt preferences written with O(state=pinned) (path, content).
  returned: when state=pinned and the index was read
  type: dict
"""

import os
import shutil
import tempfile
from urllib.error import URLError

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import ConnectionError as UrlConnectionError
from ansible.module_utils.urls import open_url
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages

# The filesystem root whose package database is read (tests point it at a fake tree).
HOST_ROOT = "/"
LIST_EXTENSIONS = (".lz4", ".gz", ".xz", ".zst", ".bz2", ".lzma")


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


def var_prefix(params):
    """The role whose variables the errors name: the caller's (cudnn, cuda_toolkit) or packages_for's."""
    caller = str(params.get("caller") or "").rsplit(".", 1)[-1]
    if caller in ("cudnn", "cuda_toolkit", "nvidia_driver"):
        return caller
    return params["packages_for"] if params["packages_for"] != "none" else "<role>"


def package_plan(module, plan, installed):
    """The module's request for plan/repo.package_plan, decided against the installed state."""
    p = module.params
    return repo_plan.package_plan(
        p["packages_for"],
        p["source"],
        p["versions"],
        cuda_major=p["cuda_major"],
        dev=p["dev"],
        repo_dir=plan["repo_dir"],
        distribution=p["distribution"],
        distribution_version=p["distribution_version"],
        installed=installed,
    )


def apt_env():
    return {"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C"}


def refresh(module, plan, prefix, source):
    """apt-get update of this repository's source only (other lists kept); refuse what apt refused."""
    cmd = ["apt-get", "update", "-o", f"Dir::Etc::SourceList={source}"]
    cmd += ["-o", "Dir::Etc::SourceParts=/nonexistent", "-o", "APT::Get::List-Cleanup=0"]
    rc, out, err = module.run_command(cmd, environ_update=apt_env())
    refusal = repo_plan.apt_update_refusal(f"{out}\n{err}", rc, plan["url"], f"{prefix}_repo_key_fingerprint")
    if refusal:
        raise repo_plan.RepoPlanError(refusal)


def refresh_staged(module, plan, prefix, key):
    """A new key or source is tried from a staging directory first: apt must accept the repository (signature,
    index hashes) before anything in /etc/apt changes. apt keeps its lists by URL, so they stay valid."""
    stage = tempfile.mkdtemp(prefix="gpufleet-repo-")
    try:
        os.chmod(stage, 0o755)  # apt's methods run as _apt and read the keyring
        keyring = os.path.join(stage, os.path.basename(plan["keyring"]))
        source = os.path.join(stage, os.path.basename(plan["path"]))
        for path, data in ((keyring, key), (source, repo_plan.render_deb822(plan["url"], keyring).encode())):
            with open(path, "wb") as handle:
                handle.write(data)
            os.chmod(path, 0o644)
        refresh(module, plan, prefix, source)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def read_index(module, url):
    """The text of apt's verified copy of the repository's Packages (None when apt has none)."""
    fmt = "$(CREATED_BY)\t$(REPO_URI)\t$(FILENAME)"
    rc, out, _err = module.run_command(["apt-get", "indextargets", "--format", fmt], environ_update=apt_env())
    if rc != 0:
        return None
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == "Packages" and parts[1].rstrip("/") == url.rstrip("/"):
            if not parts[2].endswith(LIST_EXTENSIONS) and os.path.exists(parts[2]):
                with open(parts[2], encoding="utf-8", errors="replace") as handle:
                    return handle.read()
            # apt keeps the lists compressed where Acquire::GzipIndexes is set (Ubuntu's container images:
            # indextargets then names <list>.lz4); apt-helper cat-file decompresses by the file's extension
            candidates = [parts[2]] + [parts[2] + ext for ext in LIST_EXTENSIONS]
            stored = next((path for path in candidates if os.path.exists(path)), None)
            if stored is None:
                return None
            rc, text, _err = module.run_command(["/usr/lib/apt/apt-helper", "cat-file", stored])
            return text if rc == 0 and text.strip() else None
    return None


def pinned(module, plan, prefix, result, installed):
    """The whole package set from the repository's index, each package pinned to its version."""
    p = module.params
    packages = package_plan(module, plan, installed)
    result["packages"] = packages
    packages["index"] = False
    if plan["manager"] != "apt":
        return result
    text = read_index(module, plan["url"])
    if text is None:
        if module.check_mode:
            return result  # a first run in check mode: nothing fetched yet, the top-level plan stands
        raise repo_plan.RepoPlanError(
            f"apt has no index of {plan['url']}: the repository was not refreshed (see the Sources phase)"
        )
    var = "cudnn_version" if p["packages_for"] == "cudnn" else "cuda_toolkit_versions"
    members = repo_plan.resolve_set(repo_plan.parse_index(text), packages["specs"], plan["url"], var)
    wanted = p["cuda_major"] if p["packages_for"] == "cudnn" else p["versions"]
    repo_plan.check_one_major(members, p["packages_for"], wanted, var, plan["url"])
    previous = repo_plan.parse_pin_file((_read(repo_plan.PIN_FILES[p["packages_for"]]) or b"").decode())
    update, pins = repo_plan.pinned_packages(
        p["packages_for"], members, previous, installed, p["remove_unlisted"]
    )
    packages.update(update, index=True)
    pin = repo_plan.pin_file(p["packages_for"], pins)
    result["pin"] = pin
    if _read(pin["path"]) != pin["content"].encode():
        result["changed"] = True
        if not module.check_mode:
            _write(module, pin["path"], pin["content"].encode(), 0o644)
    return result


def planned_refusal(plan, prefix, packages):
    """plan/repo.python_apt_refusal on the host's python3-apt, asked of the probe only when apt would install
    something (what ansible.builtin.apt needs is the same read as nvidia_facts' packages.python_apt)."""
    python_apt = None
    if plan["manager"] == "apt" and packages["missing"]:
        python_apt, _reason = probe_packages.python_apt(True)
    return repo_plan.python_apt_refusal(plan["manager"], prefix, packages["missing"], python_apt)


def fetch_key(url, timeout, validate_certs=True, ca_path=None):
    """The key's bytes through open_url: the environment's proxies (https_proxy, http_proxy, no_proxy)."""
    try:
        with open_url(
            url, http_agent="gpufleet", timeout=timeout, validate_certs=validate_certs, ca_path=ca_path
        ) as resp:
            return resp.read()
    except (URLError, OSError, UrlConnectionError) as exc:
        raise repo_plan.RepoPlanError(
            f"cannot fetch the repository key {url}: {getattr(exc, 'reason', exc)}"
        ) from None


def run(module):
    p = module.params
    prefix = var_prefix(p)
    plan = repo_plan.repo_config(
        p["distribution"],
        p["distribution_version"],
        p["machine"],
        p["base_url"],
        p["key_fingerprint"],
        prefix=prefix,
    )
    result = {"changed": False, "repo": plan}
    # the package database, read once through the one reader, right before the decisions
    installed = probe_packages.installed_state(HOST_ROOT) if p["packages_for"] != "none" else {}
    if p["state"] == "pinned":
        return pinned(module, plan, prefix, result, installed)
    if p["packages_for"] != "none":
        result["packages"] = package_plan(module, plan, installed)
    if p["state"] == "planned":
        refusal = result.get("packages") and planned_refusal(plan, prefix, result["packages"])
        if refusal:
            raise repo_plan.RepoPlanError(refusal)
        return result
    key = fetch_key(plan["key_url"], p["timeout"], p.get("validate_certs", True), p.get("ca_path"))
    result["fingerprint"] = repo_plan.check_key(
        key, plan["key_fingerprint"], f"{prefix}_repo_key_fingerprint"
    )
    changes = [
        (path, data)
        for path, data in ((plan["keyring"], key), (plan["path"], plan["content"].encode()))
        if _read(path) != data
    ]
    result["changed"] = bool(changes)
    if module.check_mode:
        return result
    if plan["manager"] == "apt" and p.get("refresh", True):
        if changes:
            refresh_staged(module, plan, prefix, key)
        else:
            refresh(module, plan, prefix, plan["path"])
    for path, data in changes:
        _write(module, path, data, 0o644)
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["present", "planned", "pinned"], "default": "present"},
            "distribution": {"type": "str", "required": True},
            "distribution_version": {"type": "str", "required": True},
            "machine": {"type": "str", "default": "x86_64"},
            "base_url": {"type": "str", "default": ""},
            "key_fingerprint": {"type": "str", "default": "", "no_log": False},  # of a public key: no secret
            "timeout": {"type": "int", "default": 30},
            "packages_for": {"type": "str", "choices": ["none", "cudnn", "cuda_toolkit"], "default": "none"},
            "source": {"type": "str", "choices": ["nvidia_repo", "distro"], "default": "nvidia_repo"},
            "versions": {"type": "list", "elements": "str", "default": []},
            "cuda_major": {"type": "str", "default": ""},
            "dev": {"type": "bool", "default": True},
            "refresh": {"type": "bool", "default": True},
            "remove_unlisted": {"type": "bool", "default": False},
            "caller": {"type": "str", "default": ""},
            "validate_certs": {"type": "bool", "default": True},
            "ca_path": {"type": "path"},
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
