#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_repo
short_description: NVIDIA's CUDA repository with a fingerprint-pinned key; its package set pinned; removal
version_added: "0.1.0"
description:
  - Executes the repository part of a role's plan, and the package part of its removal. What to configure
    is decided on the controller by C(gpufleet.nvidia.nvidia_plan) (C(plugins/module_utils/plan/repo.py))
    and comes in O(repo), the plan's C(repo) - the repository's URL, the key's URL and pinned OpenPGP
    fingerprint, the keyring and source file paths, and the package manager. This module decides nothing
    about which repository or packages.
  - O(state=present) downloads the repository key, checks its OpenPGP fingerprint against
    O(repo.key_fingerprint), renders the source file from O(repo.url) and O(repo.keyring) (apt - a deb822
    C(.sources) whose C(Signed-By) names that keyring; dnf - a C(.repo) with C(gpgcheck=1), C(repo_gpgcheck=1)
    and that C(gpgkey)) and writes the key and the source file atomically. With apt it also refreshes apt's
    index of this repository only (C(apt-get update) of its source file); a new key or source is tried from a
    staging copy first, so a Release whose signature does not verify with the pinned key, an index whose hash
    differs from the signed Release, or an unreachable repository fails with the reason before anything in
    C(/etc/apt) changes.
  - O(state=pinned) (apt) reads apt's verified index of the repository, resolves the whole package set (the
    requested O(specs), the plan's C(packages.specs), and, within the repository, their dependencies at the
    versions the set requires), refuses a set that mixes CUDA majors (or, for toolkits, X.Y releases), writes
    apt preferences that pin every package of the set to its version, and reports which are missing, which
    holds a move needs released and which to hold, from the installed state that C(probe/packages.py) reads
    (the same reader as the C(packages) subset of C(gpufleet.nvidia.nvidia_facts)). With dnf there is nothing
    to pin; RV(packages) then holds only O(specs) and C(index=false).
  - The key goes into a keyring file that only this source's Signed-By (or gpgkey) names (no global trust, no
    cuda-keyring package).
  - A host that already has its own source of the repository (NVIDIA's installation guide - cuda-keyring's
    C(/etc/apt/sources.list.d/cuda-<distro>-<arch>.list), or C(/etc/yum.repos.d/cuda-rhel9.repo)) is adopted
    when the plan says so (O(repo.adopt)); O(state=present) then fetches no key and writes no source or
    keyring (a second source of the same URL with another Signed-By would break every C(apt-get update)),
    refreshes apt's index from the adopted file only, and removes gpufleet's own source file and keyring of an
    earlier run that the plan lists in O(repo.remove_own) (check mode reports it, diff mode shows it).
    O(state=pinned) reads the index of the adopted source.
  - O(state=absent) removes what gpufleet installed with packages, as the plan of C(<role>_state=absent)
    lists it in O(remove) - each name checked against gpufleet's record of O(packages_for), read on the host
    right before (the pin file of the cuDNN or CUDA toolkit set, without the packages that were there before
    gpufleet pinned it, and the driver's record of the packages its installs added); a name not in it is
    refused.
    apt first simulates the purge (and C(autoremove)) - the dependencies apt installed for them that the
    removal leaves unneeded go too (not those that were unneeded before), and a package someone installed
    that needs one of them is named and the removal refused, nothing changed. dnf asks C(rpm -e --test) the
    same. Then it purges them (apt, holds included - C(--allow-change-held-packages)) or removes them (dnf),
    removes the record, and with O(repo.remove_own) gpufleet's own source file and keyring (only those two
    paths, the source only with gpufleet's header).
  - Used by the internal role C(gpufleet.nvidia.internal) (entry point repository.yml) and the install and
    removal phases of the roles C(gpufleet.nvidia.cuda_toolkit), C(gpufleet.nvidia.cudnn) and
    C(gpufleet.nvidia.nvidia_driver).
options:
  state:
    description:
      - V(present) writes the key and the repository file (and refreshes apt's index of it).
      - V(pinned) resolves the package set of O(specs) from the repository's index and writes its apt pins.
      - V(absent) removes the packages O(remove) of gpufleet's record of O(packages_for), the record, and with
        O(repo.remove_own) gpufleet's own source and keyring.
    type: str
    choices: [present, pinned, absent]
    default: present
  repo:
    description:
      - The repository as the plan decided it (C(__<role>_plan.plan.repo); for nvidia_driver
        C(__nvidia_driver_plan.repo)). Every value written into a file is checked to be one token.
      - Required with O(state=present) and O(state=pinned); with O(state=absent) only where gpufleet's own
        source and keyring go (O(repo.remove_own)).
    type: dict
    suboptions:
      url:
        description: The repository's URL (NVIDIA's C(.../compute/cuda/repos/<dir>/<arch>/) or a mirror's).
        type: str
        required: true
      key_url:
        description: The URL of the repository's signing key.
        type: str
        required: true
      key_fingerprint:
        description:
          - The key's pinned OpenPGP fingerprint (40 hex digits). Empty - no fingerprint is pinned, and
            O(state=present) refuses the key, naming C(<role>_repo_key_fingerprint).
        type: str
        default: ""
      keyring:
        description: Where the key is written (the keyring the source file names).
        type: str
        required: true
      path:
        description: Where the source file is written.
        type: str
        required: true
      manager:
        description: The package manager of the host.
        type: str
        required: true
        choices: [apt, dnf]
      repo_dir:
        description: The repository directory for the OS (e.g. C(ubuntu2404), C(rhel9)); informational.
        type: str
      arch:
        description: The repository's arch directory (C(x86_64) or C(sbsa)); informational.
        type: str
      adopt:
        description:
          - The host's own source of this repository the plan adopts
            (C(plugins/module_utils/plan/sources.py)), or null - gpufleet writes its own. With it,
            O(state=present) writes no key and no source.
        type: dict
        suboptions:
          path:
            description: The adopted source file (its apt index is refreshed from it alone).
            type: str
            required: true
          keyring:
            description:
              - The keyring its Signed-By or gpgkey names (empty - an inline key or apt's global keyrings).
            type: str
            default: ""
          uri:
            description: The URI as the adopted source writes it (what apt's index of it is listed under).
            type: str
            default: ""
          owner:
            description: The package that owns the file (C(cuda-keyring)), if any; informational.
            type: str
          line:
            description: The line its entry starts on; informational.
            type: int
          id:
            description: The dnf section's id; informational.
            type: str
      remove_own:
        description:
          - gpufleet's own source file and keyring (O(repo.path), O(repo.keyring)) of an earlier run that the
            adopted source supersedes; removed by O(state=present) when there. No other path is accepted, and
            the source file only with gpufleet's header.
        type: list
        elements: str
        default: []
      words:
        description: The plan's words for the adoption; informational.
        type: str
        default: ""
  packages_for:
    description:
      - With O(state=pinned), the role whose packages O(specs) are (its pin file, its checks).
      - With O(state=absent), the role whose record O(remove) is checked against (V(nvidia_driver) only
        there).
    type: str
    choices: [cudnn, cuda_toolkit, nvidia_driver]
  remove:
    description:
      - With O(state=absent), the packages to remove (the removal plan's), each one gpufleet's record of
        O(packages_for) holds as its own; those not installed are skipped.
    type: list
    elements: str
    default: []
  specs:
    description:
      - With O(state=pinned), the package specs of the plan (C(packages.specs)), e.g.
        C(libcudnn9-cuda-13=9.14.0*) or C(cuda-toolkit-13-0).
    type: list
    elements: str
  cuda_major:
    description:
      - With O(state=pinned) and O(packages_for=cudnn), the CUDA major of the build (the set may hold no
        other).
    type: str
    default: ""
  versions:
    description:
      - With O(state=pinned) and O(packages_for=cuda_toolkit), the toolkit versions of the plan (the set may
        hold no other X.Y release).
    type: list
    elements: str
    default: []
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
  refresh:
    description:
      - With O(state=present) and apt, run C(apt-get update) for this repository's source only (from a
        staging copy of the key and source first when either changes).
      - With O(state=present) and dnf, when the key or the C(.repo) changes, C(dnf makecache) of a staging
        copy of both (its own cache directory) must read the repository, C(repomd.xml)'s signature checked,
        before either is written.
    type: bool
    default: true
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
    description:
      - A PEM file of CA certificates to verify the key's server with (a site CA, a TLS-inspecting proxy);
        empty or unset - the system's CA store. C(apt-get update) keeps apt's own trust (the host's CA store).
      - The roles pass their C(<role>_ca_path) here, and their C(<role>_http_proxy), C(_https_proxy) and
        C(_no_proxy) as the task's environment, which C(apt-get update) reads too where apt's own
        configuration names no proxy.
    type: path
author: gpufleet maintainers (!UNKNOWN)
notes:
  - Check mode is supported. O(state=present) fetches and checks the key and reports whether the key or the
    source file would change; it writes nothing and runs no C(apt-get update). O(state=pinned) resolves the
    set from the index apt already has and reports whether the pin file would change; on a first run in
    check mode apt has no index of the repository yet, and RV(packages) says C(index=false). O(state=absent)
    runs apt's simulations (or C(rpm -e --test)) and the refusals, and reports what would go.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: O(state=present) fetches and checks the key (network); nothing is written in either state.
  diff_mode:
    support: partial
    details:
      - O(state=present) shows the removal of gpufleet's own superseded source and keyring
        (O(repo.remove_own)); O(state=absent) that of the record, the source and the keyring.
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Plan the cudnn role for this host (on the controller)
  gpufleet.nvidia.nvidia_plan:
    role: cudnn
  register: __cudnn_plan

- name: NVIDIA CUDA repository, as the plan decided it
  gpufleet.nvidia.nvidia_repo:
    repo: "{{ __cudnn_plan.plan.repo }}"
    caller: cudnn

- name: The cuDNN package set from the repository's index, each package pinned to its version (apt)
  gpufleet.nvidia.nvidia_repo:
    state: pinned
    repo: "{{ __cudnn_plan.plan.repo }}"
    packages_for: cudnn
    specs: "{{ __cudnn_plan.plan.packages.specs }}"
    cuda_major: "{{ __cudnn_plan.plan.main.cuda_major }}"
  register: __cudnn_pkg_set
"""

RETURN = r"""
repo:
  description: The repository as given in O(repo) (C(manager) is V(apt) or V(dnf)).
  returned: always
  type: dict
content:
  description: The source file rendered from O(repo) (what is, or would be, at O(repo.path)).
  returned: when state=present and no source is adopted
  type: str
fingerprint:
  description: The fingerprint found in the downloaded key (equal to the pinned one).
  returned: when state=present and no source is adopted
  type: str
adopted:
  description: The host's source file adopted (O(repo.adopt.path)); nothing of gpufleet's was written.
  returned: when state=present and O(repo.adopt) is set
  type: str
removed:
  description:
    - gpufleet's own source file and keyring removed (or, in check mode, that would be); with
      O(state=absent) also the record of O(packages_for).
  returned: when state=present and O(repo.adopt) is set, and when state=absent
  type: list
  elements: str
packages:
  description:
    - The resolved set (apt, index read) - specs (name=version of the whole set), names, installed (name ->
      version on the target), missing (specs not installed at their version), unhold (held packages whose
      version the set changes, or that it replaces or removes), hold (names the role holds with
      C(<role>_hold) - the set and what stays pinned, but for the packages installed before gpufleet and not
      held, whose hold state stays the admin's), hold_missing (those of hold not held now - what the
      install adds or moves, and any the admin released) and index (true).
    - From the set gpufleet pinned before (its pin file) that the new set lacks and the host still has -
      replaced (cuDNN packages of another CUDA major, which apt replaces with the new set; NVIDIA's packages
      conflict), remove (with O(remove_unlisted)) and kept (still pinned, and held).
    - Without an index (a first run in check mode) or with dnf - specs (O(specs)) and index (false); the
      plan's packages stand.
    - With O(state=absent) - remove (the packages of O(remove) that were installed) and also (what only they
      pulled in, apt).
  returned: when state=pinned or state=absent
  type: dict
pin:
  description: The apt preferences written with O(state=pinned) (path, content).
  returned: when state=pinned and the index was read
  type: dict
"""

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import repo as install_repo
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages

# The filesystem root whose package database is read (tests point it at a fake tree).
HOST_ROOT = "/"
LIST_EXTENSIONS = (".lz4", ".gz", ".xz", ".zst", ".bz2", ".lzma")
ROLES = ("cudnn", "cuda_toolkit", "nvidia_driver")


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
    if caller in ROLES:
        return caller
    return params.get("packages_for") or "<role>"


def apt_env():
    return {"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C"}


def refresh(module, repo, prefix, source):
    """apt-get update of this repository's source only (other lists kept); refuse what apt refused."""
    cmd = ["apt-get", "update", "-o", f"Dir::Etc::SourceList={source}"]
    cmd += ["-o", "Dir::Etc::SourceParts=/nonexistent", "-o", "APT::Get::List-Cleanup=0"]
    rc, out, err = module.run_command(cmd, environ_update=apt_env())
    var = f"{prefix}_repo_key_fingerprint"
    refusal = install_repo.apt_update_refusal(f"{out}\n{err}", rc, repo["url"], var)
    if refusal:
        raise install_repo.RepoError(refusal)


def refresh_staged(module, repo, prefix, key):
    """A new key or source is tried from a staging directory first: apt must accept the repository (signature,
    index hashes) before anything in /etc/apt changes. apt keeps its lists by URL, so they stay valid."""
    stage = tempfile.mkdtemp(prefix="gpufleet-repo-")
    try:
        os.chmod(stage, 0o755)  # apt's methods run as _apt and read the keyring
        keyring = os.path.join(stage, os.path.basename(repo["keyring"]))
        source = os.path.join(stage, os.path.basename(repo["path"]))
        staged = install_repo.render_source(repo, keyring=keyring).encode()
        for path, data in ((keyring, key), (source, staged)):
            with open(path, "wb") as handle:
                handle.write(data)
            os.chmod(path, 0o644)
        refresh(module, repo, prefix, source)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def refresh_staged_dnf(module, repo, prefix, key):
    """A new key or .repo is tried from a staging directory first: dnf must read the repository's metadata,
    repomd.xml's signature checked with the key (repo_gpgcheck), before anything in /etc/yum.repos.d or the
    keyring changes. Its cache and the key it imports for that stay in the staging directory."""
    stage = tempfile.mkdtemp(prefix="gpufleet-repo-")
    try:
        keyring = os.path.join(stage, os.path.basename(repo["keyring"]))
        reposdir = os.path.join(stage, "repos.d")
        os.mkdir(reposdir)
        source = os.path.join(reposdir, os.path.basename(repo["path"]))
        staged = install_repo.render_source(repo, keyring=keyring).encode()
        for path, data in ((keyring, key), (source, staged)):
            with open(path, "wb") as handle:
                handle.write(data)
        cmd = ["dnf", "--assumeyes", f"--setopt=reposdir={reposdir}", f"--setopt=cachedir={stage}/cache"]
        cmd += ["--setopt=skip_if_unavailable=False", "makecache"]
        rc, out, err = module.run_command(cmd, environ_update=apt_env())
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    var = f"{prefix}_repo_key_fingerprint"
    refusal = install_repo.dnf_makecache_refusal(f"{out}\n{err}", rc, repo["url"], var)
    if refusal:
        raise install_repo.RepoError(refusal)


def index_uris(repo):
    """The URIs apt's index of the repository may be listed under (indextargets' REPO_URI, without the
    trailing slash): the plan's URL and, for an adopted source, the URI as that source writes it."""
    uris = [repo["url"], ((repo.get("adopt") or {}).get("uri")) or ""]
    return {uri.rstrip("/") for uri in uris if uri}


def read_index(module, repo):
    """The text of apt's verified copy of the repository's Packages (None when apt has none)."""
    fmt = "$(CREATED_BY)\t$(REPO_URI)\t$(FILENAME)"
    rc, out, _err = module.run_command(["apt-get", "indextargets", "--format", fmt], environ_update=apt_env())
    if rc != 0:
        return None
    uris = index_uris(repo)
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == "Packages" and parts[1].rstrip("/") in uris:
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


def wanted_cuda(params):
    """What the set may hold (install/repo.check_one_major): cudnn - the build's CUDA major; cuda_toolkit -
    the toolkit versions."""
    what = params["packages_for"]
    wanted = params["cuda_major"] if what == "cudnn" else params["versions"]
    if not wanted:
        option = "cuda_major" if what == "cudnn" else "versions"
        raise install_repo.RepoError(f"{option} is required with state=pinned and packages_for={what}")
    return wanted


def pinned(module, repo, result):
    """The whole package set from the repository's index, each package pinned to its version."""
    p = module.params
    what, specs = p["packages_for"], list(p["specs"])
    result["packages"] = {"specs": specs, "index": False}
    if repo["manager"] != "apt":
        return result  # dnf installs the plan's specs as they are: nothing to pin
    wanted = wanted_cuda(p)
    text = read_index(module, repo)
    if text is None:
        if module.check_mode:
            return result  # a first run in check mode: nothing fetched yet, the plan's packages stand
        raise install_repo.RepoError(
            f"apt has no index of {repo['url']}: the repository was not refreshed (see the Sources phase)"
        )
    var = "cudnn_version" if what == "cudnn" else "cuda_toolkit_versions"
    members = install_repo.resolve_set(install_repo.parse_index(text), specs, repo["url"], var)
    install_repo.check_one_major(members, what, wanted, var, repo["url"])
    # gpufleet's record of the set it pinned before and the package database, read through the one reader
    # right before the decisions
    record = probe_packages.pin_record(HOST_ROOT, what)
    previous = [(r["name"], r["version"]) for r in record]
    installed = probe_packages.installed_state(HOST_ROOT)
    packages, pins = install_repo.pinned_packages(what, members, previous, installed, p["remove_unlisted"])
    theirs = install_repo.not_owned(pins, record, installed)
    result["packages"] = dict(install_repo.hold_ours(packages, theirs, installed), index=True)
    pin = install_repo.pin_file(what, pins, theirs)
    result["pin"] = pin
    if _read(pin["path"]) != pin["content"].encode():
        result["changed"] = True
        if not module.check_mode:
            _write(module, pin["path"], pin["content"].encode(), 0o644)
    return result


def own_removals(repo):
    """[(path, content)] of gpufleet's own source file and keyring the plan supersedes (``repo.remove_own``)
    that are there. Only the plan's own two paths are ever removed, and the source file only when it carries
    gpufleet's header: a file someone else put there is refused, not deleted."""
    removals = []
    for path in repo.get("remove_own") or []:
        if path not in (repo["path"], repo["keyring"]):
            raise install_repo.RepoError(
                f"repo.remove_own: {path} is not gpufleet's source file {repo['path']} or keyring "
                f"{repo['keyring']}; only those are removed"
            )
        data = _read(path)
        if data is None:
            continue
        if path == repo["path"] and not data.startswith(install_repo.GPUFLEET_HEADER.encode()):
            raise install_repo.RepoError(
                f"{path} does not start with gpufleet's header ({install_repo.GPUFLEET_HEADER}): it is not "
                "gpufleet's and is not removed; remove it yourself if the adopted source replaces it"
            )
        removals.append((path, data))
    return removals


def adopted(module, repo, result):
    """The host's own source of the repository (``repo.adopt``): no key and no source written; apt's index
    refreshed from the adopted file only, then gpufleet's own superseded source and keyring removed."""
    adopt = repo["adopt"]
    removals = own_removals(repo)
    result.update(adopted=adopt["path"], removed=[path for path, _data in removals], changed=bool(removals))
    result["diff"] = [
        {
            "before_header": path,
            "before": data.decode("utf-8", "replace"),
            "after_header": "(removed)",
            "after": "",
        }
        for path, data in removals
    ]
    if module.check_mode:
        return result
    if repo["manager"] == "apt" and module.params["refresh"]:  # apt must accept it before anything goes
        refresh(module, repo, var_prefix(module.params), adopt["path"])
    for path, _data in removals:
        os.unlink(path)
    return result


def present(module, repo, result):
    """The key (its fingerprint checked) and the source file, apt's index of it refreshed first."""
    p = module.params
    if repo.get("adopt"):
        return adopted(module, repo, result)
    prefix = var_prefix(p)
    content = install_repo.render_source(repo)  # the fields are checked before anything is fetched
    key = install_repo.fetch_key(repo["key_url"], p["timeout"], p["validate_certs"], p["ca_path"] or None)
    var = f"{prefix}_repo_key_fingerprint"
    result.update(content=content, fingerprint=install_repo.check_key(key, repo["key_fingerprint"], var))
    wanted = ((repo["keyring"], key), (repo["path"], content.encode()))
    changes = [(path, data) for path, data in wanted if _read(path) != data]
    result["changed"] = bool(changes)
    if module.check_mode:
        return result
    if repo["manager"] == "apt" and p["refresh"]:
        if changes:
            refresh_staged(module, repo, prefix, key)
        else:
            refresh(module, repo, prefix, repo["path"])
    elif changes and p["refresh"]:  # dnf reads the metadata at its next run: a staging copy reads it first
        refresh_staged_dnf(module, repo, prefix, key)
    for path, data in changes:
        _write(module, path, data, 0o644)
    return result


def apt_removal(module, what, names):
    """The packages apt's simulation says a purge of ``names`` (gpufleet's) also takes that only they needed
    (dependencies apt installed, left unneeded: install/repo.removal_set); RepoError when it would take a
    package someone installed, or when apt cannot simulate it. Nothing is changed here."""
    env = apt_env()
    answers = []
    for args in (["autoremove"], ["purge", "--autoremove", *names]):
        cmd = ["apt-get", "--simulate", "--allow-change-held-packages", *args]
        rc, out, err = module.run_command(cmd, environ_update=env)
        if rc != 0:
            first = " ".join((err or out or "").strip().splitlines()[:1])[:300]
            raise install_repo.RepoError(
                f"apt-get --simulate {args[0]} failed (rc={rc}): {first}; nothing removed"
            )
        answers.append(install_repo.simulated_removals(out))
    auto = probe_packages.auto_installed(HOST_ROOT)
    found = install_repo.removal_set(names, answers[1], set(answers[0]), auto)
    if found["others"]:
        raise install_repo.RepoError(install_repo.removal_refusal(what, found["others"], names))
    return found["also"]


def dnf_removal(what, names):
    """rpm's answer to removing ``names``: RepoError when an installed package needs one of them (dnf
    would remove it too) or rpm cannot tell. dnf's clean_requirements_on_remove takes what only they pulled
    in."""
    blockers = probe_packages.rpm_removal_blockers(HOST_ROOT, names)
    if blockers is None:
        raise install_repo.RepoError(
            f"{what}_state=absent: rpm -e --test could not tell what needs {' '.join(names)}; nothing removed"
        )
    if blockers:
        raise install_repo.RepoError(install_repo.removal_refusal(what, blockers, names))
    return []


def _remove_packages(module, manager, names, also):
    """Purge (apt: configuration files too, as NVIDIA's guide removes the driver) or remove (dnf)."""
    if manager == "apt":
        verb, cmd = "purge", ["apt-get", "--yes", "--allow-change-held-packages", "purge", *names, *also]
        env = dict(apt_env(), DEBIAN_FRONTEND="noninteractive")
    else:
        verb, cmd, env = "remove", ["dnf", "--assumeyes", "remove", *names], apt_env()
    rc, out, err = module.run_command(cmd, environ_update=env)
    if rc != 0:
        last = " ".join((err or out or "").strip().splitlines()[-1:])[:300]
        raise install_repo.RepoError(f"{cmd[0]} {verb} {' '.join(names)} failed (rc={rc}): {last}")


def absent(module, repo, result):
    """Removal (<role>_state: absent): the plan's packages, each checked against gpufleet's record of
    ``packages_for`` read now (never a package it did not install), with what only they pulled in, after the
    package manager said nothing else goes; then the record itself and, when the plan asks
    (``repo.remove_own``), gpufleet's own source file and keyring."""
    p = module.params
    what, asked = p["packages_for"], sorted(set(p["remove"]))
    found = probe_packages.record_of(HOST_ROOT, what)
    strangers = [n for n in asked if n not in (found or {}).get("owned", [])]
    if strangers:
        where = found["path"] if found else "none on this host"
        raise install_repo.RepoError(
            f"remove: {' '.join(strangers)} not in gpufleet's record of {what} ({where}): only what gpufleet "
            "installed is removed; nothing was removed"
        )
    installed = probe_packages.installed_state(HOST_ROOT, asked)
    names = [n for n in asked if n in installed]
    manager = (found or {}).get("manager")
    also = []
    if names:
        also = apt_removal(module, what, names) if manager == "apt" else dnf_removal(what, names)
    files = own_removals(repo) if repo else []
    if found:  # the record goes with what it lists (a path inside HOST_ROOT)
        record = os.path.join(HOST_ROOT, found["path"].lstrip("/"))
        files.insert(0, (record, _read(record) or b""))
    result.update(packages={"remove": names, "also": also}, removed=[path for path, _data in files])
    result["changed"] = bool(names or files)
    result["diff"] = [
        {
            "before_header": path,
            "before": data.decode("utf-8", "replace"),
            "after_header": "(removed)",
            "after": "",
        }
        for path, data in files
    ]
    if module.check_mode:
        return result
    if names:
        _remove_packages(module, manager, names, also)
    for path, _data in files:
        os.unlink(path)
    return result


def run(module):
    repo = module.params["repo"]
    result = {"changed": False, "repo": repo}
    if module.params["state"] == "absent":
        return absent(module, repo, result)
    if not repo:
        raise install_repo.RepoError(f"repo is required with state={module.params['state']}")
    if module.params["state"] == "pinned":
        if module.params["packages_for"] == "nvidia_driver":
            raise install_repo.RepoError("packages_for=nvidia_driver is only for state=absent")
        return pinned(module, repo, result)
    return present(module, repo, result)


REPO_OPTIONS = {
    "url": {"type": "str", "required": True},
    # a public key's URL, fingerprint and file: no secret
    "key_url": {"type": "str", "required": True, "no_log": False},
    "key_fingerprint": {"type": "str", "default": "", "no_log": False},
    "keyring": {"type": "str", "required": True, "no_log": False},
    "path": {"type": "str", "required": True},
    "manager": {"type": "str", "required": True, "choices": ["apt", "dnf"]},
    "repo_dir": {"type": "str"},
    "arch": {"type": "str"},
    "adopt": {
        "type": "dict",
        "options": {
            "path": {"type": "str", "required": True},
            "keyring": {"type": "str", "default": "", "no_log": False},
            "uri": {"type": "str", "default": ""},
            "owner": {"type": "str"},
            "line": {"type": "int"},
            "id": {"type": "str"},
        },
    },
    "remove_own": {"type": "list", "elements": "str", "default": []},
    "words": {"type": "str", "default": ""},
}
ARGUMENT_SPEC = {
    "state": {"type": "str", "choices": ["present", "pinned", "absent"], "default": "present"},
    "repo": {"type": "dict", "options": REPO_OPTIONS},
    "packages_for": {"type": "str", "choices": ["cudnn", "cuda_toolkit", "nvidia_driver"]},
    "remove": {"type": "list", "elements": "str", "default": []},
    "specs": {"type": "list", "elements": "str"},
    "cuda_major": {"type": "str", "default": ""},
    "versions": {"type": "list", "elements": "str", "default": []},
    "remove_unlisted": {"type": "bool", "default": False},
    "caller": {"type": "str", "default": ""},
    "refresh": {"type": "bool", "default": True},
    "timeout": {"type": "int", "default": 30},
    "validate_certs": {"type": "bool", "default": True},
    "ca_path": {"type": "path"},
}


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        required_if=[
            ("state", "present", ("repo",)),
            ("state", "pinned", ("repo", "packages_for", "specs")),
            ("state", "absent", ("packages_for",)),
        ],
        supports_check_mode=True,
    )
    try:
        result = run(module)
    except install_repo.RepoError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
