# Copyright: gpufleet contributors
# Apache-2.0
"""The CUDA toolkit plan: validated variables -> versions, paths, alternatives, files, removal, verify target.

Stdlib only, Python >= 3.9, pure. ``default_cuda`` is THE default-CUDA decision: the cuda_toolkit role and the
cudnn role (the CUDA major of its main build) both ask it.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.gpufleet import BACKUP_TAG, HOST_CACHE
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import owners as plan_owners
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import redist as plan_redist
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as plan_repo
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import (
    PlanError,
    compat_inputs,
    run_checks,
    skipped_compat,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.versions import parse_version

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


def default_cuda(versions, default=""):
    """THE default CUDA (X.Y): the explicit default, else the last of cuda_toolkit_versions (validated first:
    never empty; the role's defaults apply where the host sets none, resolved by the plan action)."""
    if default not in (None, ""):
        return xy(default)
    return xy(str(versions[-1]))


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
    """(release, {components, optional}) of a redist toolkit: cuda_toolkit_redist_components' sets and names
    for the release's CUDA major (plan/redist.py, kb/cuda_redist.py)."""
    names = [str(n) for n in req.get("components") or []]
    if not names:
        raise PlanError(bad("cuda_toolkit_redist_components", names, plan_redist.SETS_ALLOWED))
    try:
        release = plan_redist.cuda_release(version, req.get("releases"), var="cuda_toolkit_versions")
        chosen = plan_redist.toolkit_components(names, release, "cuda_toolkit_versions")
    except plan_redist.RedistPlanError as exc:
        raise PlanError(str(exc)) from None
    return release, chosen


def toolkits(req):
    """One entry per listed version: where it goes, its alternative name and (redist) release/components."""
    out = []
    for version in req["versions"]:
        major = xy(version).split(".", maxsplit=1)[0]
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
            "optional_components": [],
            "component_sets": [],
        }
        if req["source"] == "redist":
            entry["release"], chosen = _redist_of(version, req)
            entry["components"], entry["optional_components"] = chosen["components"], chosen["optional"]
            # what cuda_toolkit_redist_components said (its named sets and names), for the lines a user sees
            entry["component_sets"] = [str(n) for n in req["components"]]
        out.append(entry)
    return out


EXISTING_POLICIES = plan_owners.POLICIES
EXISTING_ALLOWED = plan_owners.POLICIES_ALLOWED


def owner_of(toolkit):
    """(kind, words) of who owns a toolkit tree of the facts (its ``owner``, from probe/owners.py)."""
    owner = toolkit.get("owner")
    if owner:
        return owner["kind"], owner["words"]
    if toolkit.get("gpufleet_marker"):  # facts of an older probe
        return "gpufleet", "gpufleet"
    package = toolkit.get("package") or {}
    if toolkit.get("source") in ("deb", "rpm") and package.get("name"):
        return "package", f"package {package['name']} {package.get('version', '')}".strip()
    if toolkit.get("source") == "runfile":
        return "runfile", "NVIDIA's runfile installer (bin/cuda-uninstaller)"
    return "unknown", "unknown (no package, no runfile uninstaller, no gpufleet marker)"


def _existing_at(facts, owners, dest):
    """The toolkit of the facts at ``dest``; else what the owners fact says is there (no toolkit)."""
    for toolkit in ((facts or {}).get("cuda") or {}).get("toolkits") or []:
        if toolkit.get("path") == dest:
            return toolkit
    found = plan_owners.entry(owners, dest)
    if found["type"] == "absent":
        return None
    return {"path": dest, "version": None, "type": found["type"], "owner": found["owner"], "toolkit": False}


def _refusal(entry, policy, words, why):
    return PlanError(
        bad(
            "cuda_toolkit_existing",
            policy,
            EXISTING_ALLOWED,
            f"{entry['dest']} is already there, owned by {words}; {why}",
        )
    )


REFUSE_WHY = (
    "gpufleet never replaces what it does not own: set cuda_toolkit_existing: adopt to use it as it "
    "is (gpufleet then manages only the alternatives, PATH and linker cache), or remove it first"
)


def _adopt(entry, found, words, policy):
    wanted, there = str(entry["version"]), str(found.get("version") or "")
    if found.get("toolkit") is False:
        raise _refusal(
            entry, policy, words, "it holds no CUDA toolkit to adopt (no nvcc, version.json or cuda.h)"
        )
    if there.split(".")[:2] != wanted.split(".")[:2] or (wanted.count(".") > 1 and there != wanted):
        raise _refusal(entry, policy, words, f"it holds CUDA {there or 'of unknown version'}, not {wanted}")
    return "adopt"


def _decide_existing(entry, found, policy, source):
    """What to do with a listed toolkit whose directory already holds something."""
    kind, words = owner_of(found)
    entry["existing"] = {"owner": kind, "owned_by": words, "version": found.get("version")}
    if found.get("type") == "file":
        raise PlanError(
            bad(
                "cuda_toolkit_versions",
                entry["version"],
                "versions whose /usr/local/cuda-X.Y is a directory or absent",
                f"{entry['dest']} is a file, not a directory",
            )
        )
    if kind == "gpufleet" and source == "redist":
        return "install"  # gpufleet's own tree: kept or upgraded in place, as always
    if kind == "package" and source == "nvidia_repo":
        owner = (found.get("owner") or {}).get("name") or (found.get("package") or {}).get("name")
        if plan_repo.nvidia_toolkit_package(owner, entry["version"]):
            return "install"  # NVIDIA's packages' own tree: apt/dnf keep or complete it
        if policy == "refuse":  # another package's: NVIDIA's would collide with its files mid-transaction
            raise _refusal(entry, policy, words, f"it is not one of NVIDIA's CUDA packages; {REFUSE_WHY}")
    if kind == "gpufleet":
        words = f"gpufleet's redist install, and cuda_toolkit_source is {source}"
        if policy == "refuse":
            raise _refusal(
                entry,
                policy,
                words,
                "switching sources is explicit: set cuda_toolkit_existing: "
                "replace to move gpufleet's tree into a dated backup and install the packages, "
                "adopt to keep it, or cuda_toolkit_source: redist",
            )
    elif policy == "refuse":
        raise _refusal(entry, policy, words, REFUSE_WHY)
    if policy == "adopt":
        return _adopt(entry, found, words, policy)
    if kind == "package":
        raise _refusal(
            entry,
            policy,
            words,
            "a package's files are removed through the package manager (apt-get/dnf remove), never replaced",
        )
    return "replace" if source == "redist" else "retire"


def decide_existing(entries, facts, policy, source, stamp=""):
    """Each entry's ``action``: install, adopt (leave the tree, verify it), replace (backup, then install),
    retire (another source: gpufleet's redist tree moved into a dated backup before the packages)."""
    if policy not in EXISTING_POLICIES:
        raise PlanError(bad("cuda_toolkit_existing", policy, EXISTING_ALLOWED))
    owners = plan_owners.section(facts)
    for entry in entries:
        entry["existing"], entry["action"], entry["backup"] = None, "install", None
        found = _existing_at(facts, owners, entry["dest"]) if source != "distro" else None
        if found is not None:
            entry["action"] = _decide_existing(entry, found, policy, source)
        entry["replace"] = entry["action"] == "replace"
        if entry["action"] in ("replace", "retire"):
            entry["backup"] = backup_of(entry["dest"], stamp)
    return entries


def backup_of(path, stamp):
    """Where a path gpufleet moves aside goes: ``<path>.gpufleet-backup-<UTC stamp>`` (never deleted)."""
    return f"{path.rstrip('/')}{BACKUP_TAG}{stamp or 'STAMP'}"


def _alternative_names(entries, default):
    names = {"cuda": f"{PREFIX}/cuda-{default}"}
    for entry in entries:
        names.setdefault(entry["alternative"], None)
    names[f"cuda-{default.split('.')[0]}"] = f"{PREFIX}/cuda-{default}"
    return names


def _link_decision(name, found, policy, stamp):
    """(skip, backup) for /usr/local/<name> when it is not update-alternatives' link."""
    path = f"{PREFIX}/{name}"
    what = f"a {found['type']}" + (f" to {found['target']}" if found.get("target") else "")
    words = f"{what} made outside update-alternatives ({plan_owners.words(found)})"
    if policy == "refuse":
        raise PlanError(
            bad(
                "cuda_toolkit_existing",
                policy,
                EXISTING_ALLOWED,
                f"{path} is {words}; update-alternatives would replace it: set cuda_toolkit_existing: adopt "
                f"to leave {path} as it is (gpufleet then does not manage it), replace to move it into a "
                "dated backup, or remove it first",
            )
        )
    if policy == "adopt":
        return True, None
    return False, backup_of(path, stamp)


def links(entries, facts, policy, default, stamp=""):
    """/usr/local/cuda and /usr/local/cuda-<M>: the alternatives gpufleet manages, the links it backs up."""
    owners = plan_owners.section(facts)
    skip, backups = [], []
    for name in sorted(_alternative_names(entries, default)):
        found = plan_owners.alternatives_link(owners, name)
        if found is None:
            continue
        skipped, backup = _link_decision(name, found, policy, stamp)
        if skipped:
            skip.append(name)
        if backup:
            backups.append({"path": f"{PREFIX}/{name}", "backup": backup})
    return {"skip": skip, "backup": backups}


def system_default(entries, facts, default, allowed, skip=()):
    """Alternatives whose value would move away from a toolkit gpufleet does not own: refused unless
    cuda_toolkit_system_default. Returns [{name, before, after, owner}] of every value that changes."""
    owners = plan_owners.section(facts)
    toolkits = ((facts or {}).get("cuda") or {}).get("toolkits") or []
    added = {}
    for entry in entries:
        major, minor = entry["xy"].split(".")
        added.setdefault(entry["alternative"], {})[entry["dest"]] = int(major) * 10 + int(minor)
        added.setdefault("cuda", {})[entry["dest"]] = int(major) * 10 + int(minor)
    changes = []
    for name, names_added in sorted(added.items()):
        if name in skip:
            continue
        selected = _alternative_names(entries, default).get(name)
        before, after = plan_owners.alternative_after(owners, name, names_added, selected)
        if not before or before == after:
            continue
        owner = plan_owners.owner_of_target(owners, before, toolkits)
        changes.append({"name": name, "before": before, "after": after, "owner": owner})
        if owner.get("kind") != "gpufleet" and not allowed:
            raise _default_refusal(name, (before, after), owner, entries, allowed)
    return changes


def _default_refusal(name, values, owner, entries, allowed):
    before, after = values
    current = before.rsplit("-", 1)[-1]
    if current in [e["xy"] for e in entries]:
        keep = f"set cuda_toolkit_default to {current} to keep it"
    else:
        keep = (
            f"add {current} to cuda_toolkit_versions with cuda_toolkit_existing: adopt and set "
            f"cuda_toolkit_default to {current} to keep it"
        )
    return PlanError(
        bad(
            "cuda_toolkit_system_default",
            allowed,
            "true to let gpufleet choose the host's default toolkit; false (the default) keeps it",
            f"/usr/local/{name} points to {before} ({owner.get('words', 'unknown')}); the plan would "
            f"point it to {after}, which changes the toolkit (and libcudart) every program gets; {keep}, or "
            "set cuda_toolkit_system_default: true",
        )
    )


def foreign_files(facts, policy, profile_wanted, ld_wanted):
    """gpufleet's profile/linker files where something it did not write is: refused unless replace (then
    the copy keeps a backup)."""
    owners = plan_owners.section(facts)
    backup = []
    for path, wanted in ((PROFILE_FILE, profile_wanted), (LD_CONF, ld_wanted)):
        found = plan_owners.foreign_file(owners, path) if wanted else None
        if found is None:
            continue
        if policy != "replace":
            raise PlanError(
                bad(
                    "cuda_toolkit_existing",
                    policy,
                    EXISTING_ALLOWED,
                    f"{path} exists and gpufleet did not write it ({plan_owners.words(found)}): set "
                    "cuda_toolkit_existing: replace to overwrite it keeping a backup, or remove it first",
                )
            )
        backup.append(path)
    return backup


def loader(entries, facts, default, ld_wanted, allowed):
    """What libcudart.so.<M> of the default toolkit resolves to before/after gpufleet's linker entry."""
    if not ld_wanted:
        return []
    owners = plan_owners.section(facts)
    major = default.split(".")[0]
    dest = f"{PREFIX}/cuda-{default}"
    ours = next((e for e in entries if e["xy"] == default), None)
    owner = {"kind": "gpufleet", "words": "gpufleet"}
    if ours and ours.get("existing"):
        owner = {"kind": ours["existing"]["owner"], "words": ours["existing"]["owned_by"]}
    change = plan_owners.loader_change(
        owners,
        f"libcudart.so.{major}",
        LD_CONF,
        f"{PREFIX}/cuda/lib64",
        after_path=f"{dest}/lib64/libcudart.so.{major}",
        after_owner=owner,
    )
    before = change["before"] or {}
    if before.get("real", "").startswith(dest + "/") or before.get("path", "").startswith(f"{PREFIX}/cuda/"):
        # the default toolkit's own library, or whatever /usr/local/cuda points to (the alternatives decide)
        change.update(changes=False, shadowed=False)
    if change["changes"] and not allowed:
        raise PlanError(
            bad(
                "cuda_toolkit_system_default",
                allowed,
                "true: gpufleet's default toolkit is what the linker cache resolves; false (the default)",
                plan_owners.describe(change)
                + "; set cuda_toolkit_ldconfig: false to leave the linker cache as it is",
            )
        )
    return [change]


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


def verify_libraries(source, entries):
    """The libraries verify builds a program against and runs (cuBLAS, cuRAND): all of them for a toolkit of
    packages (cuda-toolkit-X-Y, the distribution's nvidia-cuda-toolkit), for a redist toolkit those that every
    listed toolkit's components hold (all with the toolkit set, none with the compiler set)."""
    if source != "redist":
        return plan_redist.verified_libraries()
    held = [set(plan_redist.verified_libraries(e["components"])) for e in entries]
    return [lib for lib in plan_redist.verified_libraries() if all(lib in h for h in held)]


def verify(source, entries, arch):
    """What verify checks: nvcc's release per toolkit, a kernel built for ``arch`` and linked against cudart
    in each prefix, and programs that call ``libraries`` (cuBLAS, cuRAND), run where a GPU is."""
    libraries = verify_libraries(source, entries)
    if source == "distro":
        return {"arch": arch, "nvcc": [], "prefixes": [DISTRO_PREFIX], "libraries": libraries}
    return {
        "arch": arch,
        "nvcc": [{"path": e["nvcc"], "expect": f"release {e['xy']},"} for e in entries],
        "prefixes": [e["dest"] for e in entries],
        "libraries": libraries,
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


def _brownfield(req, entries, facts, default):
    """Links, system default, gpufleet's files, the linker cache: what exists that gpufleet does not own."""
    policy, stamp = req["existing"], req.get("stamp", "")
    not_distro = req["source"] != "distro"
    profile_wanted = not_distro and bool(req.get("profile", True))
    ld_wanted = not_distro and bool(req.get("ldconfig", True))
    if not not_distro:
        return {"skip": [], "backup": [], "default_changes": [], "file_backup": [], "loader": []}
    found_links = links(entries, facts, policy, default, stamp)
    allowed = bool(req.get("system_default", False))
    return {
        **found_links,
        "default_changes": system_default(entries, facts, default, allowed, found_links["skip"]),
        "file_backup": foreign_files(facts, policy, profile_wanted, ld_wanted),
        "loader": loader(entries, facts, default, ld_wanted, allowed),
    }


def _files(req, backup):
    """gpufleet's profile and linker files: path, content, wanted, backup (something foreign is there)."""
    not_distro = req["source"] != "distro"
    return {
        "profile": {
            "path": PROFILE_FILE,
            "content": PROFILE_CONTENT,
            "wanted": not_distro and bool(req.get("profile", True)),
            "backup": PROFILE_FILE in backup,
        },
        "ld_conf": {
            "path": LD_CONF,
            "content": LD_CONF_CONTENT,
            "wanted": not_distro and bool(req.get("ldconfig", True)),
            "backup": LD_CONF in backup,
        },
    }


def plan(req, facts=None, overrides=None, owned=()):
    """The whole toolkit plan from the role's variables (``req``) and the host's facts.

    req: versions, default, source, verify_arch, releases, components, controller_cache, controller_cache_dir,
    base_url, remove_unlisted, profile, ldconfig, skip_compat, machine, existing (refuse | adopt | replace:
    what to do where something gpufleet did not install is in the way), system_default (may the host's
    default toolkit move away from one gpufleet does not own), stamp (UTC time of the backups' names).
    """
    validate(req["versions"], req.get("default", ""), req.get("verify_arch", ""))
    if req["existing"] not in EXISTING_POLICIES:
        raise PlanError(bad("cuda_toolkit_existing", req.get("existing"), EXISTING_ALLOWED))
    entries = decide_existing(toolkits(req), facts, req["existing"], req["source"], req.get("stamp", ""))
    default = default_cuda(req["versions"], req.get("default", ""))
    brownfield = _brownfield(req, entries, facts, default)
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
        "install": [e for e in entries if e["action"] not in ("adopt", "retire")],
        "package_versions": [e["version"] for e in entries if e["action"] != "adopt"],
        "retire": [{"path": e["dest"], "backup": e["backup"]} for e in entries if e["action"] == "retire"],
        "adopted": [e["dest"] for e in entries if e["action"] == "adopt"],
        "alternatives_args": (
            [*[f"--skip={n}" for n in brownfield["skip"]], default, *[e["xy"] for e in entries]]
            if not_distro
            else []
        ),
        "link_backups": brownfield["backup"],
        "default_changes": brownfield["default_changes"],
        "loader": brownfield["loader"],
        **_files(req, brownfield["file_backup"]),
        "remove": removal(owned, dests) if req.get("remove_unlisted") else [],
        "verify": verify(req["source"], entries, verify_arch(req.get("verify_arch", ""), gpus)),
        "redist": locations,
        "compat": found,
    }


def remove_alternatives(remove):
    """(path, alternative name) pairs to unregister, flat (one loop in the tasks)."""
    return [{"path": r["path"], "name": name} for r in remove for name in r["alternatives"]]
