# Copyright: gpufleet contributors
# Apache-2.0
"""The CUDA toolkit plan: validated variables -> versions, paths, alternatives, files, removal, verify target.

Stdlib only, Python >= 3.9, pure. ``default_cuda`` is THE default-CUDA decision: the cuda_toolkit role, the
cudnn role (the CUDA major of its main build) and playbooks/preflight.yml all ask it.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import redist as plan_redist
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import (
    HOST_CACHE,
    PlanError,
    bad,
    compat_inputs,
    run_checks,
    skipped_compat,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import parse_version

# The cuda_toolkit role's default list (roles/cuda_toolkit/defaults/main.yml: cuda_toolkit_versions; a unit
# test ties the two). The fallback whenever a host sets no cuda_toolkit_versions.
DEFAULT_VERSIONS = ("13.0",)
SOURCES = ("nvidia_repo", "redist", "distro")
PREFIX = "/usr/local"
PROFILE_FILE = "/etc/profile.d/gpufleet-cuda.sh"
LD_CONF = "/etc/ld.so.conf.d/gpufleet-cuda.conf"
DEFAULT_VERIFY_ARCH = "sm_90"
DISTRO_PREFIX = "/usr"
VERSIONS_ALLOWED = 'a non-empty list of X.Y or X.Y.Z, e.g. ["12.9", "13.0"]'
_VERSION_RE = re.compile(r"^[0-9]+\.[0-9]+(\.[0-9]+)?\Z")
_ARCH_RE = re.compile(r"^sm_[0-9]+[af]?\Z")
_TOOLKIT_DIR_RE = re.compile(r"^/usr/local/cuda-([0-9]+)\.([0-9]+)\Z")
PROFILE_CONTENT = """\
# Managed by gpufleet (cuda_toolkit): the default CUDA toolkit (update-alternatives cuda)
case ":${PATH}:" in
  *:/usr/local/cuda/bin:*) ;;
  *) PATH="/usr/local/cuda/bin:${PATH}"; export PATH ;;
esac
"""
LD_CONF_CONTENT = """\
# Managed by gpufleet (cuda_toolkit): the default CUDA toolkit (update-alternatives cuda)
/usr/local/cuda/lib64
"""


def xy(version):
    """'13.0.2' -> '13.0' (the version must already be X.Y or X.Y.Z)."""
    return ".".join(str(version).split(".")[:2])


def listed(versions):
    """The versions a host asks for: its own list, else the role's default list."""
    return [str(v) for v in versions] if versions else list(DEFAULT_VERSIONS)


def default_cuda(versions=None, default=""):
    """THE default CUDA (X.Y): the explicit default, else the last listed (the role's list when none)."""
    if default not in (None, ""):
        return xy(default)
    return xy(listed(versions)[-1])


def _known_cuda(item, versions):
    parsed = parse_version(item, "cuda_toolkit_versions")
    fam = parsed.truncate(2)
    newer = parsed.major > compat.NEWEST_CUDA.major or (
        parsed.major == compat.NEWEST_CUDA.major and fam > compat.NEWEST_CUDA
    )
    if newer:
        return  # not known yet: compat warns, the source (redist table, packages) decides
    known = compat.cuda_families(parsed.major)
    if parsed < compat.OLDEST_CUDA or str(fam) not in known:
        listing = ", ".join(known) if known else ", ".join(compat.cuda_families())
        raise PlanError(
            bad(
                "cuda_toolkit_versions",
                versions,
                VERSIONS_ALLOWED,
                f"{item!r} is not a CUDA release gpufleet knows; known: {listing}",
            )
        )


def validate(versions, default="", verify_arch=""):
    """Raise PlanError naming the one variable that is wrong (versions, default, verify arch)."""
    if not versions:
        raise PlanError(bad("cuda_toolkit_versions", list(versions or []), VERSIONS_ALLOWED))
    for item in versions:
        if not _VERSION_RE.match(str(item)):
            raise PlanError(
                bad(
                    "cuda_toolkit_versions", list(versions), VERSIONS_ALLOWED, f"{item!r} is not X.Y or X.Y.Z"
                )
            )
        _known_cuda(str(item), list(versions))
    xys = [xy(v) for v in versions]
    if default not in (None, "") and (not _VERSION_RE.match(str(default)) or xy(default) not in xys):
        raise PlanError(
            bad("cuda_toolkit_default", default, "empty or one of cuda_toolkit_versions: " + ", ".join(xys))
        )
    if verify_arch and not _ARCH_RE.match(verify_arch):
        raise PlanError(bad("cuda_toolkit_verify_arch", verify_arch, "empty or e.g. sm_90"))


def redist_platform(machine):
    platform = kb_hosts.redist_platform(machine)
    if not platform:
        raise PlanError(
            bad(
                "ansible_facts.machine",
                machine,
                ", ".join(sorted(kb_hosts.REDIST_PLATFORMS)),
                "NVIDIA publishes no redist archives for it",
            )
        )
    return platform


def _redist_of(version, req):
    try:
        release = plan_redist.cuda_release(version, req.get("releases"), var="cuda_toolkit_versions")
        names = req.get("components") or plan_redist.default_components(
            "cuda", release, "cuda_toolkit_versions"
        )
    except plan_redist.RedistPlanError as exc:
        raise PlanError(str(exc)) from None
    return release, names


def toolkits(req):
    """One entry per listed version: where it goes, its alternative name and (redist) release/components."""
    out = []
    for version in req["versions"]:
        major = xy(version).split(".")[0]
        dest = f"{PREFIX}/cuda-{xy(version)}"
        entry = {
            "version": version,
            "xy": xy(version),
            "major": major,
            "dest": dest,
            "nvcc": f"{dest}/bin/nvcc",
            "alternative": f"cuda-{major}",
            "release": None,
            "components": [],
        }
        if req["source"] == "redist":
            entry["release"], entry["components"] = _redist_of(version, req)
        out.append(entry)
    return out


EXISTING_POLICIES = ("refuse", "adopt", "replace")
EXISTING_ALLOWED = "refuse (the default), adopt, replace"


def owner_of(toolkit):
    """(kind, words) of who owns a toolkit tree of the facts: gpufleet, package, runfile or unknown."""
    if toolkit.get("gpufleet_marker"):
        return "gpufleet", "gpufleet"
    package = toolkit.get("package") or {}
    if toolkit.get("source") in ("deb", "rpm") and package.get("name"):
        return "package", f"package {package['name']} {package.get('version', '')}".strip()
    if toolkit.get("source") == "runfile":
        return "runfile", "NVIDIA's runfile installer (bin/cuda-uninstaller)"
    if toolkit.get("source") == "redist":
        return "unknown", "no package and no gpufleet marker (a redist tree gpufleet did not install)"
    return "unknown", "unknown (no package, no runfile uninstaller, no gpufleet marker)"


def _existing_at(facts, dest):
    for toolkit in ((facts or {}).get("cuda") or {}).get("toolkits") or []:
        if toolkit.get("path") == dest:
            return toolkit
    return None


def _refusal(entry, policy, words, why):
    return PlanError(
        bad(
            "cuda_toolkit_existing",
            policy,
            EXISTING_ALLOWED,
            f"{entry['dest']} is already there, owned by {words}; {why}",
        )
    )


def _decide_existing(entry, found, policy):
    """What to do with a listed toolkit whose directory already holds a toolkit (redist source)."""
    kind, words = owner_of(found)
    entry["existing"] = {"owner": kind, "owned_by": words, "version": found.get("version")}
    if kind == "gpufleet":
        return "install"  # gpufleet's own tree: kept or upgraded in place, as always
    if policy == "refuse":
        raise _refusal(
            entry,
            policy,
            words,
            "gpufleet never replaces what it does not own: set cuda_toolkit_existing: adopt to use it as it "
            "is (gpufleet then manages only the alternatives, PATH and linker cache), or remove it first",
        )
    if policy == "adopt":
        wanted, there = str(entry["version"]), str(found.get("version") or "")
        if there.split(".")[:2] != wanted.split(".")[:2] or (wanted.count(".") > 1 and there != wanted):
            why = f"it holds CUDA {there or 'of unknown version'}, not {wanted}"
            raise _refusal(entry, policy, words, why)
        return "adopt"
    if kind == "package":
        raise _refusal(
            entry,
            policy,
            words,
            "a package's files are removed through the package manager (apt-get/dnf remove), never replaced",
        )
    return "replace"


def decide_existing(entries, facts, policy, source):
    """Each entry's ``action``: install, adopt (leave the tree, verify it), replace (backup, then install)."""
    if policy not in EXISTING_POLICIES:
        raise PlanError(bad("cuda_toolkit_existing", policy, EXISTING_ALLOWED))
    for entry in entries:
        entry["existing"], entry["action"] = None, "install"
        found = _existing_at(facts, entry["dest"]) if source == "redist" else None
        if found is not None:
            entry["action"] = _decide_existing(entry, found, policy)
        entry["replace"] = entry["action"] == "replace"
    return entries


def removal(owned, dests):
    """gpufleet-owned toolkit trees (``owned``: paths carrying gpufleet's marker) that are not listed."""
    out = []
    for path in sorted(set(owned)):
        match = _TOOLKIT_DIR_RE.match(path)
        if match and path not in dests:
            out.append({"path": path, "alternatives": ["cuda", f"cuda-{match.group(1)}"]})
    return out


def verify_arch(arch, gpus):
    """cuda_toolkit_verify_arch, else sm_<cc> of the first GPU with a known compute capability, else sm_90."""
    if arch:
        return arch
    for gpu in gpus or []:
        cc = str(gpu.get("compute_capability") or "")
        if re.match(r"^[0-9]+\.[0-9]+\Z", cc):
            return "sm_" + cc.replace(".", "")
    return DEFAULT_VERIFY_ARCH


def verify(source, entries, arch):
    if source == "distro":
        return {"arch": arch, "nvcc": [], "prefixes": [DISTRO_PREFIX]}
    return {
        "arch": arch,
        "nvcc": [{"path": e["nvcc"], "expect": f"release {e['xy']},"} for e in entries],
        "prefixes": [e["dest"] for e in entries],
    }


def redist_locations(req, controller_cache, controller_cache_dir, base_url):
    """Where the host reads manifests/archives from, and the controller cache, for a product's role."""
    return {
        "platform": redist_platform(req["machine"]) if req["source"] == "redist" else None,
        "base_url": HOST_CACHE if controller_cache else base_url,
        "controller_base_url": base_url,
        "host_cache": HOST_CACHE,
        "controller_cache": bool(controller_cache),
        "controller_cache_dir": controller_cache_dir,
    }


def checks(versions):
    """The compat checks of a toolkit list: one per version."""
    return [(f"CUDA {v}", {"cuda_version": v}) for v in versions]


def plan(req, facts=None, overrides=None, owned=()):
    """The whole toolkit plan from the role's variables (``req``) and the host's facts.

    req: versions, default, source, verify_arch, releases, components, controller_cache, controller_cache_dir,
    base_url, remove_unlisted, profile, ldconfig, skip_compat, machine, existing (refuse | adopt | replace:
    what to do where a listed toolkit's directory already holds a toolkit gpufleet did not install).
    """
    validate(req["versions"], req.get("default", ""), req.get("verify_arch", ""))
    entries = decide_existing(toolkits(req), facts, req.get("existing", "refuse"), req["source"])
    default = default_cuda(req["versions"], req.get("default", ""))
    locations = redist_locations(
        req, req.get("controller_cache"), req.get("controller_cache_dir"), req.get("base_url")
    )
    found = (
        skipped_compat()
        if req.get("skip_compat")
        else run_checks(checks(req["versions"]), compat_inputs(facts, overrides))
    )
    gpus = found["gpus"] or list((facts or {}).get("gpus") or [])
    not_distro = req["source"] != "distro"
    dests = [e["dest"] for e in entries]
    return {
        "versions": [e["version"] for e in entries],
        "xy": [e["xy"] for e in entries],
        "default": default,
        "source": req["source"],
        "toolkits": entries,
        # the toolkits gpufleet installs (or keeps current); adopted ones are left as they are, and verified
        "install": [e for e in entries if e["action"] != "adopt"],
        "adopted": [e["dest"] for e in entries if e["action"] == "adopt"],
        "alternatives_args": [default, *[e["xy"] for e in entries]] if not_distro else [],
        "profile": {
            "path": PROFILE_FILE,
            "content": PROFILE_CONTENT,
            "wanted": not_distro and bool(req.get("profile", True)),
        },
        "ld_conf": {
            "path": LD_CONF,
            "content": LD_CONF_CONTENT,
            "wanted": not_distro and bool(req.get("ldconfig", True)),
        },
        "remove": removal(owned, dests) if req.get("remove_unlisted") else [],
        "verify": verify(req["source"], entries, verify_arch(req.get("verify_arch", ""), gpus)),
        "redist": locations,
        "compat": found,
    }


def remove_alternatives(remove):
    """(path, alternative name) pairs to unregister, flat (one loop in the tasks)."""
    return [{"path": r["path"], "name": name} for r in remove for name in r["alternatives"]]
