# Copyright: gpufleet contributors
# Apache-2.0
"""The cuDNN plan: validated variables -> builds per CUDA major, trees, links, prune patterns, verify.

Stdlib only, Python >= 3.9, pure. The main build's CUDA major, when cudnn_cuda_major is empty, is the major
of THE default CUDA (``plan.cuda.default_cuda``) as the host sets cuda_toolkit_versions/cuda_toolkit_default,
else the cuda_toolkit role's default list.
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import cudnn as kb_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cuda as plan_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import owners as plan_owners
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import redist as plan_redist
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import (
    PlanError,
    compat_inputs,
    run_checks,
    skipped_compat,
)

SOURCES = ("nvidia_repo", "redist", "distro")
LD_CONF = "/etc/ld.so.conf.d/gpufleet-cudnn.conf"
# NVIDIA's packages install into the distribution's library directory (deb: multiarch, rpm: lib64)
PKG_LIBDIRS = {"Debian": "/usr/lib/{machine}-linux-gnu", "RedHat": "/usr/lib64"}
VERSION_ALLOWED = "X.Y.Z or X.Y.Z.B, e.g. 9.14.0 or 9.14.0.64"
KNOWN_MAJORS = tuple(sorted({row[0] for row in kb_cudnn.VARIANTS}))
_VERSION_RE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(\.[0-9]+)?\Z")


def major_allowed():
    known = ", ".join(str(m) for m in KNOWN_MAJORS)
    return f"a CUDA major such as 12 or 13 that gpufleet knows cuDNN builds for: {known}"


def main_major(cuda_major, versions=None, default=""):
    """(CUDA major of the main build, where it came from): cudnn_cuda_major, else THE default CUDA's major."""
    if cuda_major not in (None, ""):
        return str(cuda_major).strip(), "cudnn_cuda_major"
    return plan_cuda.default_cuda(versions, default).split(".", maxsplit=1)[0], "default"


def _check_major(value, var, source_note=""):
    if not re.match(r"^[0-9]+\Z", str(value)) or int(value) not in KNOWN_MAJORS:
        raise PlanError(bad(var, value, major_allowed(), source_note))


def _check_version(value, var):
    if not _VERSION_RE.match(str(value)):
        raise PlanError(bad(var, value, VERSION_ALLOWED))


def variants(req):
    """[{version, cuda_major, main, label}] of the main build and cudnn_extra_variants, validated."""
    major, origin = main_major(req["cuda_major"], req.get("cuda_versions"), req.get("cuda_default"))
    _check_version(req["version"], "cudnn_version")
    note = ""
    if origin == "default":
        cuda = plan_cuda.default_cuda(req.get("cuda_versions"), req.get("cuda_default"))
        note = (
            f"cudnn_cuda_major is empty: the major of the default CUDA toolkit {cuda} "
            "(cuda_toolkit_default / cuda_toolkit_versions)"
        )
    _check_major(major, "cudnn_cuda_major", note)
    out = [{"version": str(req["version"]), "cuda_major": major, "main": True, "label": "cudnn_version"}]
    for index, extra in enumerate(req.get("extra_variants") or []):
        var = f"cudnn_extra_variants[{index}]"
        if not isinstance(extra, dict):
            raise PlanError(bad(var, extra, "a mapping {version: X.Y.Z, cuda_major: 12}"))
        _check_version(extra.get("version", ""), f"{var}.version")
        _check_major(extra.get("cuda_major", ""), f"{var}.cuda_major")
        if str(extra["cuda_major"]) in [v["cuda_major"] for v in out]:
            raise PlanError(
                bad(f"{var}.cuda_major", extra["cuda_major"], "a CUDA major no other build of this host uses")
            )
        out.append(
            {
                "version": str(extra["version"]),
                "cuda_major": str(extra["cuda_major"]),
                "main": False,
                "label": "cudnn_extra_variants",
            }
        )
    return out


def validate(req, os_info):
    """Raise PlanError naming the one variable that is wrong; returns the builds."""
    builds = variants(req)
    for build in builds:
        build["source"] = tree_source(build, req["source"])
        build.update(redist_of(build))
    if req["source"] == "distro":
        try:
            repo_plan.distro_cudnn_plan(os_info.get("distribution", "?"), os_info.get("version", ""))
        except repo_plan.RepoPlanError as exc:
            raise PlanError(str(exc)) from None
    return builds


def redist_of(build):
    """What nvidia_redist reads for a build: the manifest release (X.Y.Z of its version), the components
    (cuDNN's one) and, for a version given in full (X.Y.Z.B), the version the component must have ("" when
    any build of the release will do)."""
    try:
        release, full = plan_redist.cudnn_release(build["version"], var=build["label"])
        components = plan_redist.default_components("cudnn", release, var=build["label"])
    except plan_redist.RedistPlanError as exc:
        raise PlanError(str(exc)) from None
    return {"release": release, "components": components, "component_version": full or ""}


def tree_source(build, source):
    """Where one build comes from. NVIDIA's packages of one cuDNN major for different CUDA majors conflict
    (libcudnn9-cuda-12 and -cuda-13 both Provide/Conflict libcudnn9 and hold the same files): with
    cudnn_source nvidia_repo the main build is the packages and each further build (cudnn_extra_variants) a
    versioned tree from NVIDIA's redist archives (cudnn_redist_base_url) beside them, outside the linker
    cache."""
    if source == "nvidia_repo" and not build["main"]:
        return "redist"
    return source


def tree_builds(builds):
    """The builds installed as versioned trees under cudnn_prefix."""
    return [b for b in builds if b["source"] == "redist"]


def pkg_libdir(os_family, machine):
    return PKG_LIBDIRS.get(os_family, PKG_LIBDIRS["RedHat"]).format(machine=machine)


def layout(build, req):
    """Tree, link, prune pattern and verify library of one build."""
    prefix, major = req["prefix"].rstrip("/"), build["cuda_major"]
    link = f"{prefix}/current-cuda{major}"
    soname = "libcudnn.so." + build["version"].split(".")[0]
    through_ld = build["main"] and (req["source"] != "redist" or req.get("ldconfig", True))
    return {
        "dest": f"{prefix}/{{version}}-cuda{major}",
        "link": link,
        "prune_pattern": f"^[0-9.]+-cuda{major}$",
        "verify_lib": soname if through_ld else f"{link}/lib/{soname}",
        "verify_dir": prefix
        if build.get("source", req["source"]) == "redist"
        else pkg_libdir(req.get("os_family"), req.get("machine")),
    }


def checks(builds, cuda_versions=None, cuda_default=""):
    """One compat check per build, with the CUDA toolkit of its major when the host has one (the default)."""
    default = plan_cuda.default_cuda(cuda_versions, cuda_default)
    out = []
    for build in builds:
        kwargs = {"cudnn_version": build["version"], "cudnn_cuda_major": build["cuda_major"]}
        if default.split(".", maxsplit=1)[0] == build["cuda_major"]:
            kwargs["cuda_version"] = default
        out.append((f"cuDNN {build['version']} for CUDA {build['cuda_major']}", kwargs))
    return out


def ld_conf(req, main):
    return {
        "path": LD_CONF,
        "wanted": req["source"] == "redist" and bool(req.get("ldconfig", True)),
        "content": (
            f"# Managed by gpufleet (cudnn): cuDNN {main['version']} for CUDA {main['cuda_major']}\n"
            f"{main['link']}/lib\n"
        ),
    }


EXISTING_ALLOWED = plan_owners.POLICIES_ALLOWED
GPUFLEET = {"kind": "gpufleet", "words": "gpufleet"}


def _refuse(var, value, allowed, why):
    return PlanError(bad(var, value, allowed, why))


def _prefix_entries(owners, prefix):
    return {p: f for p, f in owners["paths"].items() if os.path.dirname(p) == prefix}


def check_trees(builds, req, owners):
    """A foreign tree at a build's ``<prefix>/<version>-cuda<M>``, a foreign ``current-cuda<M>``, a prefix
    that is a file: refused before any change (replace: the tree goes into a dated backup)."""
    prefix, policy = req["prefix"].rstrip("/"), req["existing"]
    top = plan_owners.entry(owners, prefix)
    if top["type"] == "file":
        raise _refuse("cudnn_prefix", prefix, "a directory (or nothing yet)", f"{prefix} is a file")
    children = _prefix_entries(owners, prefix)
    for build in builds:
        build["replace"] = False
        rx = re.compile(rf"^{re.escape(build['version'])}(\.[0-9]+)*-cuda{build['cuda_major']}\Z")
        link = children.get(build["link"])
        if link and link["type"] != "symlink":
            raise _refuse(
                "cudnn_prefix",
                prefix,
                "a directory whose current-cuda<M> entries are gpufleet's links",
                f"{build['link']} is a {link['type']} ({plan_owners.words(link)}), not gpufleet's link: "
                "move it away or choose another cudnn_prefix",
            )
        for path, found in sorted(children.items()):
            if not rx.match(os.path.basename(path)) or plan_owners.kind(found) == "gpufleet":
                continue
            why = f"{path} is already there, owned by {plan_owners.words(found)}; "
            if policy == "replace" and found["type"] == "dir":
                build["replace"] = True
                continue
            why += (
                "gpufleet never replaces what it does not own: set cudnn_existing: replace to move it into a "
                "dated backup, or remove it first (adopt uses the cuDNN the linker cache resolves, not a "
                "tree at gpufleet's own path)"
            )
            raise _refuse("cudnn_existing", policy, EXISTING_ALLOWED, why)


def _same_release(there, wanted):
    there, wanted = str(there or ""), str(wanted)
    return there.split(".")[:3] == wanted.split(".")[:3] and (wanted.count(".") < 3 or there == wanted)


def check_loader(main, req, owners, ld):
    """The main build and libcudnn.so.<M>: adopt what the cache resolves, or refuse changing a foreign one
    unless cudnn_system_default; a copy that stays first is reported (``shadowed``). Returns the change."""
    soname = "libcudnn.so." + main["version"].split(".")[0]
    policy, allowed = req["existing"], bool(req.get("system_default", False))
    change = plan_owners.loader_change(
        owners,
        soname,
        LD_CONF,
        f"{main['link']}/lib",
        after_path=f"{main['link']}/lib/{soname}",
        after_owner=GPUFLEET,
    )
    before = change["before"] or {}
    foreign = bool(before) and (before.get("owner") or {}).get("kind") != "gpufleet"
    main["action"] = "install"
    if policy == "adopt" and foreign:
        if not _same_release(before.get("version"), main["version"]):
            raise _refuse(
                "cudnn_existing",
                policy,
                EXISTING_ALLOWED,
                f"{soname} resolves to {before['path']} ({before['owner']['words']}), cuDNN "
                f"{before.get('version') or 'of unknown version'}, not {main['version']}",
            )
        main.update(
            action="adopt",
            verify_lib=soname,
            verify_dir=os.path.dirname(before.get("real") or before["path"]),
        )
        return dict(change, after={"path": before["path"], "owner": before.get("owner")}, changes=False)
    if not ld:
        return None
    if change["changes"] and not allowed:
        raise _refuse(
            "cudnn_system_default",
            allowed,
            "true to make gpufleet's build what the linker cache resolves; false (the default) keeps "
            "the copy there",
            plan_owners.describe(change) + "; set cudnn_system_default: true, cudnn_ldconfig: false "
            "(install beside it, outside the linker cache), or cudnn_existing: adopt (use it when its "
            "version matches)",
        )
    if change["shadowed"] and allowed:
        raise _refuse(
            "cudnn_system_default",
            allowed,
            "false while another copy comes first in the linker's order (gpufleet does not reorder files it "
            "did not write)",
            plan_owners.describe(change) + "; move that copy (or its ld.so.conf.d entry) away to make "
            "gpufleet's build the system's, or set cudnn_system_default: false to install beside it",
        )
    if change["shadowed"]:
        main["verify_lib"] = f"{main['link']}/lib/{soname}"
    return change


def transition(req, owners):
    """A redist install of gpufleet's in the linker cache while the source is another: explicit only."""
    found = plan_owners.entry(owners, LD_CONF)
    if req["source"] == "redist" or not found.get("gpufleet_file"):
        return None
    kept = sorted(
        p for p, f in _prefix_entries(owners, req["prefix"].rstrip("/")).items() if f["type"] == "dir"
    )
    if req["existing"] != "replace":
        raise _refuse(
            "cudnn_existing",
            req["existing"],
            EXISTING_ALLOWED,
            f"{LD_CONF} puts gpufleet's redist cuDNN in the linker cache and cudnn_source is "
            f"{req['source']}: "
            "switching sources is explicit: set cudnn_existing: replace to remove that entry (the trees in "
            f"{req['prefix']} are kept), or cudnn_source: redist",
        )
    return {"from": "redist", "to": req["source"], "removed": [LD_CONF], "kept": kept}


def brownfield(builds, req, facts):
    """Everything that exists and gpufleet does not own, decided before any change."""
    if req["existing"] not in plan_owners.POLICIES:
        raise _refuse("cudnn_existing", req.get("existing"), EXISTING_ALLOWED, "")
    owners = plan_owners.section(facts)
    moved = transition(req, owners)
    ld = req["source"] == "redist" and bool(req.get("ldconfig", True))
    if tree_builds(builds):
        check_trees(tree_builds(builds), req, owners)
    found = plan_owners.foreign_file(owners, LD_CONF) if ld else None
    if found is not None and req["existing"] != "replace":
        raise _refuse(
            "cudnn_existing",
            req["existing"],
            EXISTING_ALLOWED,
            f"{LD_CONF} exists and gpufleet did not write it ({plan_owners.words(found)}): set "
            "cudnn_existing: replace to overwrite it keeping a backup, or remove it first",
        )
    change = check_loader(builds[0], req, owners, ld) if req["source"] == "redist" else None
    if builds[0].get("action") == "adopt":
        ld = False
    return {
        "transition": moved,
        "loader": [change] if change else [],
        "ld": ld,
        "ld_backup": found is not None,
        # never remove a file gpufleet did not write (without the owners fact: the role's own file)
        "ld_remove": not ld
        and (not owners["known"] or bool(plan_owners.entry(owners, LD_CONF)["gpufleet_file"])),
    }


def plan(req, facts=None, overrides=None, os_info=None):
    """The whole cuDNN plan from the role's variables (``req``) and the host's facts.

    req: version, cuda_major, extra_variants, source, prefix, keep_versions, ldconfig, skip_compat,
    cuda_versions, cuda_default (as the host sets them; None = the cuda_toolkit role's defaults),
    controller_cache, controller_cache_dir, base_url, machine, os_family.
    """
    builds = validate(req, os_info or {})
    for build in builds:
        build.update(layout(build, req))
    decided = brownfield(builds, req, facts)
    found = (
        skipped_compat()
        if req.get("skip_compat")
        else run_checks(
            checks(builds, req.get("cuda_versions"), req.get("cuda_default")), compat_inputs(facts, overrides)
        )
    )
    trees = tree_builds(builds)
    cuda_req = {"source": "redist" if trees else req["source"], "machine": req.get("machine")}
    return {
        "variants": builds,
        "main": builds[0],
        "cuda_default": plan_cuda.default_cuda(req.get("cuda_versions"), req.get("cuda_default")),
        "source": req["source"],
        "ld_conf": dict(
            ld_conf(req, builds[0]),
            wanted=decided["ld"],
            backup=decided["ld_backup"],
            remove=decided["ld_remove"],
        ),
        "install": [b for b in builds if b.get("action") != "adopt"],
        # the versioned trees to install from NVIDIA's redist archives (every build with cudnn_source redist;
        # the cudnn_extra_variants beside the packages with nvidia_repo)
        "redist_install": [b for b in trees if b.get("action") != "adopt"],
        "adopted": [b["verify_lib"] for b in builds if b.get("action") == "adopt"],
        "loader": decided["loader"],
        "transition": decided["transition"],
        "redist": plan_cuda.redist_locations(
            cuda_req, req.get("controller_cache"), req.get("controller_cache_dir"), req.get("base_url")
        ),
        "compat": found,
    }
