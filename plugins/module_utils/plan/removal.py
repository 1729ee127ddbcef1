# Copyright: gpufleet contributors
# Apache-2.0
"""Removal (``<role>_state: absent``): what gpufleet installed on a host, as it recorded it, and nothing else.

Pure, on the controller, from the facts the removal plan gathers (:func:`facts_wanted`):

* gpufleet's records (``packages.records``, probe/packages.py): the pin files of the cuDNN and CUDA toolkit
  package sets (a package that was installed before gpufleet pinned it is not gpufleet's) and the driver's
  record of the packages its installs added (plan/driver/record.py);
* the ``owners`` fact (probe/owners.py): the trees with gpufleet's marker (``/usr/local/cuda-X.Y``,
  ``<cudnn_prefix>/<version>-cuda<M>``), the links to them, gpufleet's ``/etc`` files (its header), the
  update-alternatives entries of its toolkits;
* the installed packages and, for the repository source, the ``sources`` fact.

Each plan says what goes (``remove``: packages, the record, trees, links, alternatives, files, directories,
gpufleet's own repository source and key) and what stays (``kept``, every item named with its owner), in the
lines a check-mode run prints (``lines``). On a host the removal left, the same plan is empty
(``nothing``): a second removal changes nothing. The packages themselves are removed by the nvidia_repo
module (``state: absent``), which checks every name against the record again on the host and refuses a
removal that would take a package someone else installed (apt's simulation, ``rpm -e --test``).

gpufleet's own repository source and key (plan/repo.py's paths) go with the removal that leaves no record of
gpufleet's on the host (any order of the three roles' removals); on a dnf host, where gpufleet keeps no
record of the toolkit's and cuDNN's packages, only when no NVIDIA package is left installed either. A source
the host had before gpufleet (NVIDIA's cuda-keyring, adopted) is never gpufleet's and stays.
"""

from __future__ import annotations

import os

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpufleet as kb_gpufleet
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.driver_packages import INITRAMFS_COMMANDS
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cuda as plan_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cudnn as plan_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import owners as plan_owners
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as plan_repo
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver import existing as driver_existing
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver import record as driver_record
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.reboot import removal_reboot
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.state import host_state
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import PlanError

RECORDS = ("cudnn", "cuda_toolkit", "nvidia_driver")


def absent(role, variables):
    """The role's plan is a removal (``<role>_state: absent``)."""
    return variables.get(f"{role}_state") == "absent"


def driver_paths():
    """Every file the nvidia_driver role may have written, whatever the OS family (the owners fact reads
    their headers)."""
    paths = set(kb_gpufleet.DRIVER_FILES.values()) | set(kb_gpufleet.DRIVER_INITRAMFS_FILES.values())
    return sorted(paths)


def facts_wanted(role, variables):
    """What nvidia_facts gathers for a removal plan."""
    if role == "cuda_toolkit":
        return {"gather_subset": ["cuda", "owners", "packages", "sources"]}
    if role == "cudnn":
        return {
            "gather_subset": ["owners", "packages", "sources"],
            "owner_paths": [variables["cudnn_prefix"]],
        }
    return {"gather_subset": ["driver", "owners", "packages", "sources"], "owner_paths": driver_paths()}


# ---------------------------------------------------------------------------------------------------
# shared: the record's packages, gpufleet's files, its repository source
# ---------------------------------------------------------------------------------------------------
def _records(facts):
    return ((facts or {}).get("packages") or {}).get("records") or {}


def _installed(facts):
    return ((facts or {}).get("packages") or {}).get("installed") or {}


def recorded_packages(what, facts):
    """(gpufleet's packages installed now, the record's packages that are not gpufleet's and installed) of
    the pin file of ``what``."""
    found = _records(facts).get(what) or {}
    installed = _installed(facts)
    packages = [p for p in found.get("packages") or [] if p["name"] in installed]
    return (
        sorted(p["name"] for p in packages if p.get("owned")),
        sorted(p["name"] for p in packages if not p.get("owned")),
    )


def gpufleet_files(owners, paths):
    """(gpufleet's files among ``paths``: its header; the others there, in words: someone else's file at
    gpufleet's name is never removed)."""
    ours, theirs = [], []
    for path in paths:
        found = plan_owners.entry(owners, path)
        if found["type"] == "absent":
            continue
        if found.get("gpufleet_file") or plan_owners.kind(found) == "gpufleet":
            ours.append(path)
        else:
            theirs.append(f"{path} ({plan_owners.words(found)}: not gpufleet's file)")
    return ours, theirs


def own_source(role, variables, facts, leaving, removing=()):
    """gpufleet's own repository source and key as the nvidia_repo module removes them ({repo with
    remove_own}), or None; and the words of a source that stays. ``leaving``: the record this removal takes
    (every other record of gpufleet's still uses the source); ``removing``: the packages it takes."""
    host = ((facts or {}).get("host") or {}).get("os") or {}
    try:
        repo = plan_repo.repo_config(
            host.get("distribution") or "unknown",
            host.get("version") or "",
            ((facts or {}).get("host") or {}).get("machine") or "x86_64",
            variables[f"{role}_repo_base_url"],
            variables[f"{role}_repo_key_fingerprint"],
            prefix=role,
        )
    except plan_repo.RepoPlanError:
        return None, []  # no NVIDIA repository for this OS: gpufleet wrote none
    entries = ((facts or {}).get("sources") or {}).get("entries") or []
    if not any(e.get("file") == repo["path"] for e in entries):
        return None, []
    users = [what for what in RECORDS if what != leaving and _records(facts).get(what)]
    if not users and repo["manager"] == "dnf" and set(_installed(facts)) - set(removing):
        users = [
            "the NVIDIA packages installed (gpufleet keeps no record of dnf's toolkit and cuDNN packages)"
        ]
    if users:
        return None, [
            f"{repo['path']} and {repo['keyring']} (gpufleet's source, still used by {', '.join(users)})"
        ]
    return dict(repo, remove_own=[repo["path"], repo["keyring"]]), []


def finish(plan, what):
    """The words of a removal plan: ``lines`` (what goes, what stays), ``summary``, ``nothing``."""
    remove = plan["remove"]
    goes = []
    goes += (
        [f"packages {' '.join(remove['packages'])} (and what only they pulled in)"]
        if remove["packages"]
        else []
    )
    goes += [f"the record {remove['record']}"] if remove["record"] else []
    for key in ("trees", "links", "files", "dirs"):
        goes += remove[key]
    goes += [f"alternative {a['name']} -> {a['path']}" for a in remove["alternatives"]]
    goes += (
        [f"gpufleet's source {remove['source']['path']} and key {remove['source']['keyring']}"]
        if remove["source"]
        else []
    )
    goes += [" ".join(c) for c in plan.get("commands") or []]
    plan["nothing"] = not goes
    plan["executor"] = bool(remove["packages"] or remove["record"] or remove["source"])
    head = f"removal of gpufleet's {what}"
    plan["lines"] = [f"removes: {g}" for g in goes] or [f"nothing of gpufleet's {what} left on this host"]
    plan["lines"] += [f"keeps: {k}" for k in plan["kept"]]
    plan["summary"] = f"{head}: " + "; ".join(plan["lines"])
    return plan


def _plan(**remove):
    return {
        "state": "absent",
        "remove": dict(
            {
                "packages": [],
                "record": None,
                "trees": [],
                "links": [],
                "alternatives": [],
                "files": [],
                "dirs": [],
                "source": None,
            },
            **remove,
        ),
        "kept": [],
        "ldconfig": False,
    }


# ---------------------------------------------------------------------------------------------------
# cuda_toolkit
# ---------------------------------------------------------------------------------------------------
def cuda_plan(variables, facts):
    """The toolkit's removal: gpufleet's redist trees (its marker) and the alternatives entries of those
    trees, the packages of its pin file that were not there before it (a package's tree goes with its
    packages, and their own prerm unregisters its alternatives: NVIDIA's config-common packages do, and one
    installed before gpufleet keeps them), its profile.d and ld.so.conf.d files, the pin file, and its source
    when nothing else uses it."""
    owners = plan_owners.section(facts)
    toolkits = ((facts or {}).get("cuda") or {}).get("toolkits") or []
    packages, theirs = recorded_packages("cuda_toolkit", facts)
    redist = plan_cuda.removal([t["path"] for t in toolkits if plan_cuda.owner_of(t)[0] == "gpufleet"], [])
    with_packages = [
        t["path"]
        for t in toolkits
        if plan_cuda.owner_of(t)[0] == "package"
        and (t.get("owner") or t.get("package") or {}).get("name") in packages
    ]
    ours = {t["path"] for t in redist}
    gone = ours | set(with_packages)
    files, foreign_files = gpufleet_files(owners, [plan_cuda.PROFILE_FILE, plan_cuda.LD_CONF])
    found = _records(facts).get("cuda_toolkit")
    source, source_kept = own_source("cuda_toolkit", variables, facts, "cuda_toolkit", packages)
    plan = _plan(
        packages=packages,
        record=found["path"] if found else None,
        trees=[t["path"] for t in redist],
        alternatives=[
            {"name": name, "path": c["path"]}
            for name, alt in sorted(owners["alternatives"].items())
            for c in alt.get("candidates") or []
            if c["path"] in ours
        ],
        files=files,
        source=source,
    )
    plan["kept"] = (
        [f"{t['path']} ({plan_cuda.owner_of(t)[1]})" for t in toolkits if t["path"] not in gone]
        + [f"package {n} (installed before gpufleet)" for n in theirs]
        + foreign_files
        + source_kept
    )
    plan["ldconfig"] = bool(gone or plan_cuda.LD_CONF in files)
    return finish(plan, "CUDA toolkit")


# ---------------------------------------------------------------------------------------------------
# cudnn
# ---------------------------------------------------------------------------------------------------
def _under(path, trees):
    return bool(path) and any(path == t or path.startswith(t + "/") for t in trees)


def cudnn_plan(variables, facts):
    """cuDNN's removal: gpufleet's trees under cudnn_prefix (its marker) and the links into them (a link
    whose tree is gone too), the prefix when nothing else is in it, the packages of its pin file that were not
    there before it, its ld.so.conf.d file, the pin file, and its source when nothing else uses it."""
    owners = plan_owners.section(facts)
    prefix = variables["cudnn_prefix"].rstrip("/")
    children = {p: f for p, f in owners["paths"].items() if os.path.dirname(p) == prefix}
    trees = sorted(p for p, f in children.items() if f["type"] == "dir" and plan_owners.kind(f) == "gpufleet")
    links = sorted(
        p
        for p, f in children.items()
        if f["type"] == "symlink"
        and (
            _under(f.get("real"), trees)
            or (_under(f.get("real"), [prefix]) and f.get("real") not in children)
        )
    )
    others = sorted(p for p in children if p not in trees and p not in links)
    packages, theirs = recorded_packages("cudnn", facts)
    files, foreign_files = gpufleet_files(owners, [plan_cudnn.LD_CONF])
    found = _records(facts).get("cudnn")
    source, source_kept = own_source("cudnn", variables, facts, "cudnn", packages)
    plan = _plan(
        packages=packages,
        record=found["path"] if found else None,
        trees=trees,
        links=links,
        files=files,
        dirs=[prefix] if trees and not others else [],
        source=source,
    )
    plan["kept"] = [f"{p} ({plan_owners.words(children[p])})" for p in others]
    plan["kept"] += [f"package {n} (installed before gpufleet)" for n in theirs] + foreign_files + source_kept
    plan["ldconfig"] = bool(trees or files or packages)
    return finish(plan, "cuDNN")


# ---------------------------------------------------------------------------------------------------
# nvidia_driver
# ---------------------------------------------------------------------------------------------------
def _refuse(why):
    return PlanError(
        bad("nvidia_driver_state", "'absent'", "absent only for a driver gpufleet installed", why)
    )


def driver_refusals(state, recorded):
    """Why the driver on this host is not gpufleet's to remove (the first reason), else None."""
    if state["host_managed"]:
        return (
            f"this host's driver is host-managed ({state['host_managed_reason'] or 'provided read-only'}): "
            "gpufleet did not install it and removes nothing here; set nvidia_driver_state: present (or "
            "nvidia_driver_enabled: false) for this host"
        )
    if state["runfile_markers"] and not state["owned_by_package"]:
        return (
            f"the driver here was installed by NVIDIA's runfile ({', '.join(state['runfile_markers'])}), not "
            "by gpufleet: remove it with nvidia-uninstall yourself, or set nvidia_driver_state: present"
        )
    foreign = [
        p for p in state["packages"] if driver_existing.driver_core(p["name"]) and p["name"] not in recorded
    ]
    if foreign:
        listed = ", ".join(f"{p['name']} {p.get('version', '')}".strip() for p in foreign[:5])
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        return (
            f"driver packages {listed}{more} are installed and gpufleet's record "
            f"({kb_gpufleet.DRIVER_RECORD}) does not hold them: someone else installed this driver, and "
            "gpufleet removes only what it installed; remove them through the package manager yourself, or "
            "set nvidia_driver_state: present"
        )
    return None


def driver_plan(variables, facts, context=None):
    """The driver's removal, as NVIDIA's guide removes a driver, for what gpufleet's record holds: the
    packages (purged; dnf: removed, then the module stream reset and gpufleet's versionlocks deleted), the
    nouveau blacklist and gpufleet's other files, the record, the initramfs rebuilt, the reboot as
    nvidia_driver_reboot says. PlanError naming nvidia_driver_state where the driver is not gpufleet's."""
    state = host_state(facts)
    found = driver_record.recorded(facts) or {}
    recorded = set(found.get("packages") or [])
    why = driver_refusals(state, recorded)
    if why:
        raise _refuse(why)
    family = state["family"] or "debian"
    paths = [*kb_gpufleet.DRIVER_FILES.values(), kb_gpufleet.DRIVER_INITRAMFS_FILES.get(family, "")]
    files, foreign_files = gpufleet_files(plan_owners.section(facts), [p for p in paths if p])
    packages = sorted(p["name"] for p in state["packages"] if p["name"] in recorded)
    only_record = _records(facts).get("dir") == [os.path.basename(kb_gpufleet.DRIVER_RECORD)]
    source, source_kept = own_source("nvidia_driver", variables, facts, "nvidia_driver", packages)
    plan = _plan(
        packages=packages,
        record=found.get("path"),
        files=files,
        dirs=[kb_gpufleet.RECORD_DIR] if found and only_record else [],
        source=source,
    )
    dnf = kb_hosts.OS_TABLE.get(state["os_key"] or "", {}).get("pkg_mgr") == "dnf"
    plan["commands"] = _dnf_commands(found) if dnf else []
    nouveau = {kb_gpufleet.DRIVER_FILES["blacklist"], kb_gpufleet.DRIVER_INITRAMFS_FILES.get(family)}
    command = list(INITRAMFS_COMMANDS.get(family) or [])
    rebuild = bool(command) and not state["container"] and bool(packages or nouveau & set(files))
    plan["initramfs"] = {"run": rebuild, "command": command}
    plan["kept"] = [
        " ".join(f"package {p['name']} {p.get('version', '')}".split()) + " (not in gpufleet's record)"
        for p in state["packages"]
        if p["name"] not in recorded
    ]
    plan["kept"] += foreign_files + source_kept
    controller = bool((context or {}).get("is_controller"))
    plan["reboot"] = removal_reboot(
        variables["nvidia_driver_reboot"], state, bool(packages), is_controller=controller
    )
    plan.update(install=False, host_managed=False, host_managed_report="", touches_host=bool(packages))
    return _driver_words(finish(plan, "NVIDIA driver"))


def _driver_words(plan):
    """The driver's lines: what goes, then the initramfs rebuild and the reboot, then what stays."""
    then = [f"then: {' '.join(plan['initramfs']['command'])}"] if plan["initramfs"]["run"] else []
    then += [f"then: reboot ({plan['reboot']['reason']})"] if plan["reboot"]["reboot"] else []
    at = len(plan["lines"]) - len(plan["kept"])
    plan["lines"][at:at] = then
    plan["summary"] = "removal of gpufleet's NVIDIA driver: " + "; ".join(plan["lines"])
    return plan


def _dnf_commands(found):
    """NVIDIA's guide on RHEL after the packages: the module stream reset (8/9), gpufleet's versionlocks
    deleted."""
    commands = [["dnf", "-y", "module", "reset", found["module"]]] if found.get("module") else []
    if found.get("versionlock"):
        commands.append(["dnf", "versionlock", "delete", *found["versionlock"]])
    return commands


def plan(role, variables, facts, context=None):
    """The removal plan of ``role`` (its ``<role>_state`` is absent); PlanError naming the variable."""
    if role == "cuda_toolkit":
        return cuda_plan(variables, facts)
    if role == "cudnn":
        return cudnn_plan(variables, facts)
    return driver_plan(variables, facts, context)
