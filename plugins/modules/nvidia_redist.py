#!/usr/bin/python
# Copyright: gpufleet contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvidia_redist
short_description: Install NVIDIA redist archives (CUDA, cuDNN) into a versioned prefix, verified, atomically
version_added: "0.1.0"
description:
  - Reads NVIDIA's C(redistrib_<release>.json) manifest from NVIDIA's servers, a mirror with the same
    layout, or a local directory, selects the archives of the requested components for the platform
    (and CUDA major for multi-variant components such as cuDNN), downloads each one with its sha256
    checked against the manifest, and unpacks them all into a staging directory next to O(dest) that
    is renamed onto O(dest) only when complete. An interrupted run leaves the previous install in place.
  - Optionally points a symlink O(link) at O(dest) atomically and prunes older trees beyond O(keep).
  - O(state=downloaded) only fetches and verifies the archives into O(download_dir), laid out like the
    mirror, so that the directory can serve as O(base_url) for other hosts (controller cache).
  - O(state=planned) only reads the manifest and reports the artifacts and whether O(dest) already holds them
    (what the target observes; nothing is written).
  - The roles call it with what C(gpufleet.nvidia.nvidia_plan) decided on the controller (the manifest
    release a CUDA X.Y or a cuDNN version resolves to, the components, platform, dest, link, prune pattern),
    after it validated the variables. This module resolves no release; it reads the manifest of the one it is
    given and selects the artifacts (C(plugins/module_utils/install/manifest.py)).
options:
  state:
    description:
      - V(present) installs, V(downloaded) only fetches into O(download_dir), V(planned) changes nothing.
    type: str
    choices: [present, downloaded, planned]
    default: present
  product:
    description: The redist product directory.
    type: str
    choices: [cuda, cudnn]
    required: true
  release:
    description:
      - The manifest release C(X.Y.Z) (C(redistrib_X.Y.Z.json)), as the plan resolved it -
        C(toolkits[].release) of the cuda_toolkit plan (a CUDA C(X.Y) becomes its newest known update, or what
        C(cuda_toolkit_redist_releases) says), C(variants[].release) of the cudnn plan (C(X.Y.Z) of the cuDNN
        version).
      - Anything but C(X.Y.Z) is refused (it is part of the manifest's URL).
    type: str
    required: true
  label:
    description: The variable name to put in front of error messages (e.g. C(cudnn_version)).
    type: str
    default: ""
  base_url:
    description:
      - Where C(<product>/redist/) lives.
      - NVIDIA's servers, a site mirror (same layout) or a local directory (an absolute path).
    type: str
    default: https://developer.download.nvidia.com/compute
  components:
    description:
      - Manifest component names to install (merged into one tree), as the plan chose them -
        C(toolkits[].components) of the cuda_toolkit plan, C(variants[].components) of the cudnn plan.
    type: list
    elements: str
    required: true
  optional_components:
    description:
      - Components of O(components) that may be absent from the manifest, or have no build there for
        O(platform) - the cuda_toolkit plan's C(toolkits[].optional_components) (the C(toolkit) set's
        components that NVIDIA publishes for some platforms or releases only). They are skipped then.
    type: list
    elements: str
    default: []
  cuda_variant:
    description: CUDA major for components built per CUDA major (cuDNN), e.g. C(13).
    type: str
  version:
    description:
      - When set, the version every selected component must have (e.g. cuDNN C(9.14.0.64), the cudnn plan's
        C(variants[].component_version) for a version given in full). Empty - any.
    type: str
  platform:
    description:
      - Redist platform; default from the target's machine (x86_64 -> linux-x86_64, aarch64 -> linux-sbsa;
        the one mapping in C(kb/hosts.py)).
    type: str
    choices: [linux-x86_64, linux-sbsa, linux-aarch64]
  dest:
    description:
      - The versioned install prefix (required for O(state=present)).
      - C({version}) and C({cuda_variant}) are replaced by the first component's version and O(cuda_variant).
    type: path
  link:
    description: A symlink switched atomically to O(dest) after a successful install.
    type: path
  keep:
    description:
      - How many older trees (matching O(prune_pattern), next to O(dest)) to keep besides O(dest).
      - Older ones are removed. Rollback means installing a kept version again (no download).
    type: int
  prune_pattern:
    description: Regular expression for tree names next to O(dest) that O(keep) applies to.
    type: str
  lib64_link:
    description: Add C(lib64 -> lib) in the tree (CUDA toolkit layout).
    type: bool
    default: false
  replace_foreign:
    description:
      - A O(dest) that exists without gpufleet's marker (a package's, a runfile's, a hand-made tree) is
        refused, in check mode too.
      - With C(true) it is moved aside into C(<dest>.gpufleet-backup-<UTC time>), never deleted, and the new
        tree takes its place (RV(backup)).
    type: bool
    default: false
  download_dir:
    description: Where archives are downloaded (mirror layout below it).
    type: path
    default: /var/cache/gpufleet/redist
  keep_downloads:
    description: Keep downloaded archives after a successful install (always kept for O(state=downloaded)).
    type: bool
    default: false
  timeout:
    description: Network timeout in seconds per request.
    type: int
    default: 60
  validate_certs:
    description:
      - Verify the server's TLS certificate. Requests go through C(ansible.module_utils.urls), so the
        C(https_proxy), C(http_proxy) and C(no_proxy) environment variables of the task apply.
    type: bool
    default: true
  ca_path:
    description:
      - A PEM file of CA certificates to verify the server with (a site CA, a TLS-inspecting proxy); empty or
        unset - the system's CA store.
      - The roles pass their C(<role>_ca_path) here, and their C(<role>_http_proxy), C(_https_proxy) and
        C(_no_proxy) as the task's environment.
    type: path
author: gpufleet maintainers (!UNKNOWN)
notes:
  - Check mode is supported; it reads the manifest but changes nothing.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reads the manifest (network or local) and reports what would change; writes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: CUDA 13.0 compiler toolkit from NVIDIA's redist
  gpufleet.nvidia.nvidia_redist:
    product: cuda
    release: "13.0.2"
    components: [cuda_nvcc, cuda_crt, libnvvm, cuda_cudart, cuda_cccl, cuda_nvrtc]
    dest: /usr/local/cuda-13.0
    lib64_link: true

- name: The toolkits the cuda_toolkit plan installs (release and components resolved on the controller)
  gpufleet.nvidia.nvidia_redist:
    product: cuda
    release: "{{ item.release }}"
    components: "{{ item.components }}"
    platform: "{{ __cuda_toolkit_plan.plan.redist.platform }}"
    base_url: "{{ __cuda_toolkit_plan.plan.redist.base_url }}"
    dest: "{{ item.dest }}"
    lib64_link: true
  loop: "{{ __cuda_toolkit_plan.plan.install }}"

- name: cuDNN 9.14 for CUDA 13 from a site mirror, switch the current link, keep two old trees
  gpufleet.nvidia.nvidia_redist:
    product: cudnn
    release: "9.14.0"
    version: "9.14.0.64"
    base_url: http://mirror.example.org/nvidia
    components: [cudnn]
    cuda_variant: "13"
    dest: /opt/nvidia/cudnn/9.14.0.64-cuda13
    link: /opt/nvidia/cudnn/current-cuda13
    keep: 2
    prune_pattern: '^[0-9.]+-cuda13$'
"""

RETURN = r"""
foreign:
  description: O(dest) exists and carries no gpufleet marker (gpufleet does not own it).
  returned: with O(dest)
  type: bool
  sample: false
backup:
  description: Where a foreign O(dest) was moved with O(replace_foreign) (null when nothing was moved).
  returned: with O(dest)
  type: str
  sample: /usr/local/cuda-13.0.gpufleet-backup-20261201T101500Z
artifacts:
  description: The selected artifacts.
  returned: always
  type: list
  elements: dict
  sample:
    - component: cudnn
      version: 9.14.0.64
      relative_path: cudnn/linux-x86_64/cudnn-linux-x86_64-9.14.0.64_cuda13-archive.tar.xz
      sha256: 0123...
      size: 912345678
      url: https://developer.download.nvidia.com/compute/cudnn/redist/cudnn/linux-x86_64/...
manifest_url:
  description: The manifest read.
  returned: always
  type: str
release:
  description: The manifest release used (X.Y.Z).
  returned: always
  type: str
release_label:
  description: The manifest's release_label.
  returned: always
  type: str
installed:
  description: Whether O(dest) held exactly these artifacts before this run.
  returned: when dest is set
  type: bool
dest:
  description: The install prefix.
  returned: when dest is set
  type: str
previous_link_target:
  description: Where O(link) pointed before (empty when absent).
  returned: when link is set
  type: str
pruned:
  description: Trees removed (or that would be removed in check mode) by O(keep).
  returned: always
  type: list
  elements: str
downloaded:
  description: Archives fetched from the network in this run.
  returned: always
  type: list
  elements: str
files:
  description:
    - Paths relative to O(download_dir) of the manifest and archives.
    - For copying a controller cache to hosts.
  returned: always
  type: list
  elements: str
manifest_file:
  description: The manifest's path relative to O(download_dir) (the first of RV(files)).
  returned: always
  type: str
  sample: cuda/redist/redistrib_13.0.2.json
archive_files:
  description: The archives' paths relative to O(download_dir) (RV(files) without the manifest).
  returned: always
  type: list
  elements: str
"""

import contextlib
import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import manifest, redist
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpufleet import HOST_CACHE

ERRORS = (redist.RedistError, manifest.ManifestError)


def _request(p):
    """(platform, label, release, version, components) from the parameters; raises on bad input."""
    platform = p["platform"] or kb_hosts.redist_platform(os.uname().machine)
    if not platform:
        raise manifest.ManifestError(
            f"platform: no redist platform for machine {os.uname().machine}; set platform"
        )
    label = p["label"] or "release"
    release = manifest.check_release(p["release"], label)
    if not p["components"]:
        raise manifest.ManifestError("components: empty; name the manifest components to install")
    return platform, label, release, p["version"] or None, list(p["components"])


def _manifest_artifacts(p):
    """Read the manifest and select the artifacts: (result without any change yet, the raw manifest)."""
    platform, label, release, version, names = _request(p)
    base, product = p["base_url"], p["product"]
    murl = manifest.manifest_url(base, product, release)
    result = {"changed": False, "manifest_url": murl, "pruned": [], "downloaded": [], "artifacts": []}
    try:
        raw = redist.fetch_bytes(murl, timeout=p["timeout"], tls=_tls(p))
    except redist.RedistError as exc:
        raise redist.RedistError(f"{label}: {p['release']}: no redist manifest for it ({exc})") from None
    doc = manifest.parse_manifest(raw, murl)
    arts = manifest.select_artifacts(
        doc,
        names,
        platform=platform,
        cuda_variant=p["cuda_variant"],
        optional=p["optional_components"],
        source=murl,
        var=label if p["label"] else None,
    )
    manifest.check_versions(arts, version, label, murl)
    for art in arts:
        art["url"] = manifest.artifact_url(base, product, art["relative_path"])
    result.update(
        release=release,
        release_label=str(doc.get("release_label") or release),
        artifacts=arts,
        manifest_file=manifest.manifest_file(product, release),
        archive_files=[manifest.archive_file(product, a["relative_path"]) for a in arts],
    )
    result["files"] = [result["manifest_file"], *result["archive_files"]]
    return result, raw


def _tls(p):
    """validate_certs and ca_path for the fetches (open_url's meaning)."""
    return {"validate_certs": p.get("validate_certs", True), "ca_path": p.get("ca_path") or None}


def _local(p, art):
    return os.path.join(p["download_dir"], manifest.archive_file(p["product"], art["relative_path"]))


def downloaded(module, result, raw):
    """state=downloaded: fetch and verify the archives and the manifest into download_dir (mirror layout)."""
    p = module.params
    missing = [a for a in result["artifacts"] if not _cached(_local(p, a), a["sha256"])]
    mpath = os.path.join(p["download_dir"], result["manifest_file"])
    manifest_stale = not os.path.isfile(mpath) or _read(mpath) != raw
    result["changed"] = bool(missing) or manifest_stale
    if module.check_mode or not result["changed"]:
        return result
    for art in missing:
        redist.fetch_verified(
            art["url"], _local(p, art), art["sha256"], size=art["size"], timeout=p["timeout"], tls=_tls(p)
        )
        result["downloaded"].append(art["url"])
    if manifest_stale:
        _atomic_write(module, mpath, raw)
    return result


def _dest(p, arts):
    dest = p["dest"]
    if dest and arts:
        dest = dest.replace("{version}", arts[0]["version"]).replace(
            "{cuda_variant}", p["cuda_variant"] or ""
        )
    return dest.rstrip("/") if dest else dest


def _fetch_all(p, arts, result):
    paths = []
    for art in arts:
        if redist.is_local(art["url"]):  # a controller cache copied to this host, or a local mirror
            path = redist.verify_local(art["url"], art["sha256"], art["size"])
        else:
            path = _local(p, art)
            fetched = redist.fetch_verified(
                art["url"], path, art["sha256"], size=art["size"], timeout=p["timeout"], tls=_tls(p)
            )
            if fetched:
                result["downloaded"].append(art["url"])
        paths.append(path)
    return paths


def _install(module, dest, result):
    p = module.params
    arts = result["artifacts"]
    if (not result["installed"] or _stale(dest)) and not module.check_mode:
        redist.cleanup_stale(dest)
    if result["installed"] or module.check_mode:
        return
    paths = _fetch_all(p, arts, result)
    result["backup"] = redist.install_tree(
        dest, paths, arts, lib64_link=p["lib64_link"], replace_foreign=p["replace_foreign"]
    )
    if not p["keep_downloads"] and not redist.is_local(p["base_url"]):
        for path in paths:
            _remove(path)


def _switch_and_prune(module, dest, link_target, result):
    p = module.params
    if p["link"] and link_target != dest:
        result["changed"] = True
        if not module.check_mode:
            redist.switch_link(p["link"], dest)
    if p["keep"] is not None and p["prune_pattern"]:
        # dest is (or becomes) the link target; the previous target counts as one of the kept old trees
        victims = redist.prune_plan(os.path.dirname(dest), p["prune_pattern"], p["keep"], [dest])
        result["pruned"] = victims
        if victims:
            result["changed"] = True
            if not module.check_mode:
                for path in victims:
                    shutil.rmtree(path)


def run(module):
    p = module.params
    result, raw = _manifest_artifacts(p)
    if p["state"] == "downloaded":
        return downloaded(module, result, raw)
    dest = _dest(p, result["artifacts"])
    if not dest:
        if p["state"] == "present":
            module.fail_json(msg="dest is required with state=present", **result)
        return result
    result["dest"] = dest
    result["installed"] = redist.is_installed(dest, result["artifacts"])
    result["foreign"] = redist.foreign(dest)
    result["backup"] = None
    link_target = None
    if p["link"]:
        link_target = os.readlink(p["link"]) if os.path.islink(p["link"]) else ""
        result["previous_link_target"] = link_target
    if p["state"] == "planned":
        return result
    if result["foreign"] and not p["replace_foreign"]:
        # refused in check mode too: the real run would refuse the same tree
        module.fail_json(msg=_foreign_message(p, dest), **result)
    result["changed"] = not result["installed"] or bool(_stale(dest))
    _install(module, dest, result)
    _switch_and_prune(module, dest, link_target, result)
    return result


def _foreign_message(p, dest):
    label = f"{p['label']}: " if p["label"] else ""
    return (
        f"{label}{dest} exists and gpufleet did not install it (no {redist.MARKER}): gpufleet never "
        "replaces a tree it does not own; adopt it, move it away, or set replace_foreign to move it into a "
        "dated backup"
    )


def _cached(path, sha256):
    return os.path.isfile(path) and redist.sha256_file(path) == sha256


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def _stale(dest):
    parent, base = os.path.split(dest)
    if not os.path.isdir(parent):
        return []
    tags = (base + redist.STAGING_TAG, base + redist.RETIRED_TAG)
    return [n for n in os.listdir(parent) if n.startswith(tags)]


def _remove(path):
    with contextlib.suppress(OSError):
        os.unlink(path)


def _atomic_write(module, path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as handle:
        handle.write(data)
    module.atomic_move(tmp, path)


ARGUMENT_SPEC = {
    "state": {"type": "str", "choices": ["present", "downloaded", "planned"], "default": "present"},
    "product": {"type": "str", "choices": ["cuda", "cudnn"], "required": True},
    "release": {"type": "str", "required": True},
    "label": {"type": "str", "default": ""},
    "base_url": {"type": "str", "default": manifest.NVIDIA_BASE_URL},
    "components": {"type": "list", "elements": "str", "required": True},
    "optional_components": {"type": "list", "elements": "str", "default": []},
    "cuda_variant": {"type": "str"},
    "version": {"type": "str"},
    "platform": {"type": "str", "choices": list(manifest.PLATFORMS)},
    "dest": {"type": "path"},
    "link": {"type": "path"},
    "keep": {"type": "int"},
    "prune_pattern": {"type": "str"},
    "lib64_link": {"type": "bool", "default": False},
    "replace_foreign": {"type": "bool", "default": False},
    "download_dir": {"type": "path", "default": HOST_CACHE},
    "keep_downloads": {"type": "bool", "default": False},
    "timeout": {"type": "int", "default": 60},
    "validate_certs": {"type": "bool", "default": True},
    "ca_path": {"type": "path"},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    os.environ["LC_ALL"] = "C"
    try:
        result = run(module)
    except ERRORS as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
