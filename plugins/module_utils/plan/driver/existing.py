# Copyright: gpufleet contributors
# Apache-2.0
"""What is installed already: a host-managed driver, NVIDIA's runfile, packages of another repository, DKMS
trees no package owns, and the change of state from the installed driver to the plan (:func:`transition`).

Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.request import (
    SOURCES,
    branch_of,
    parse_branch_value,
)


def host_managed_mismatch(
    requested_branch, requested_flavor, requested_version, loaded_version, loaded_flavor
):
    """Messages for a host-managed driver that is not what was asked (empty list: it matches)."""
    errors = []
    loaded_branch = branch_of(loaded_version)
    req_branch = str(parse_branch_value(requested_branch))
    if loaded_version is None:
        return [
            "the driver is host-managed but no driver is loaded: it cannot be verified against "
            f"nvidia_driver_branch {req_branch!r}; the host (hypervisor or container runtime) must provide it"
        ]
    if loaded_branch != req_branch:
        errors.append(
            f"nvidia_driver_branch: {req_branch!r} was requested but this host's driver is host-managed "
            f"(provided read-only by the hypervisor or container runtime) and runs {loaded_version} "
            f"(branch {loaded_branch}); nothing can be installed here: "
            f"set nvidia_driver_branch: '{loaded_branch}' for this host "
            "or change the driver on the hypervisor"
        )
    if requested_version and str(requested_version) != loaded_version:
        errors.append(
            f"nvidia_driver_version: {requested_version!r} was requested but the host-managed driver is "
            f"{loaded_version}; set nvidia_driver_version: '{loaded_version}' or leave it empty"
        )
    if requested_flavor in ("open", "proprietary") and loaded_flavor and requested_flavor != loaded_flavor:
        errors.append(
            f"nvidia_driver_kernel_module: {requested_flavor!r} was requested but the host-managed driver "
            f"runs the {loaded_flavor} kernel module; "
            f"set nvidia_driver_kernel_module: auto or {loaded_flavor}"
        )
    return errors


def runfile_conflict(markers_present, nvml_owned_by_package, replace_runfile, version=None, trees=()):
    """(conflict: bool, message). A runfile-installed driver blocks packages unless replacement is allowed.

    ``version``: the driver the runfile installed, as its log says (facts driver.runfile.version);
    ``trees``: the unowned DKMS source directories that are the runfile's (nvidia-uninstall removes them)."""
    if not markers_present or nvml_owned_by_package:
        return False, ""
    found = ", ".join([*markers_present, *(f"DKMS tree {tree}" for tree in trees)])
    if version:
        found = f"driver {version}; {found}"
    if replace_runfile:
        return False, f"a runfile-installed driver ({found}) will be removed with nvidia-uninstall first"
    return True, (
        f"a driver installed by NVIDIA's runfile was found ({found}); packages would conflict with it. "
        "Set nvidia_driver_replace_runfile: true to uninstall it first (nvidia-uninstall --silent, which "
        "also removes the DKMS module it registered), or remove it yourself"
    )


# The repositories facts driver.packages[].origin names (probe/driver.py tells them from the version string
# and the apt lists), in the words messages use.
ORIGIN_WORDS = {
    "nvidia_repo": "NVIDIA's CUDA repository",
    "ubuntu_archive": "the Ubuntu archive",
    "ubuntu_ppa": "the graphics-drivers PPA",
    "debian_archive": "the Debian archive",
    "elrepo": "ELRepo",
    "other": "another repository",
}


# The packages that are the driver itself (kernel module, its userspace core, the metapackages): these must
# come from the requested source. Fabric manager, DCGM, the container toolkit, nvidia-settings and the like
# may come from NVIDIA's repositories next to a distribution's driver and are not judged.
_DRIVER_CORE = re.compile(
    r"^(nvidia-driver|nvidia-open|cuda-drivers|nvidia-headless|nvidia-utils-\d|nvidia-dkms-|nvidia-kernel-|"
    r"nvidia-compute-utils-\d|libnvidia-compute|libcuda1$|libnvidia-ml1$|nvidia-smi$|linux-modules-nvidia-|"
    r"kmod-nvidia|akmod-nvidia|dkms-nvidia)"
)


def driver_core(name):
    """The package is the driver itself (its module, userspace core or metapackage), not a tool beside it."""
    return bool(_DRIVER_CORE.match(str(name or "")))


def accepted_origins(source, family):
    """The repositories whose driver packages ``source`` manages on an OS family."""
    if source == "nvidia_repo":
        return ("nvidia_repo",)
    return {"ubuntu": ("ubuntu_archive",), "debian": ("debian_archive",)}.get(family, ())


def _source_of(origin, family):
    """The nvidia_driver_source that manages a repository's packages (None: gpufleet does not)."""
    for source in SOURCES:
        if origin in accepted_origins(source, family):
            return source
    return None


def _origin_of(package):
    origin = package.get("origin")
    return origin if isinstance(origin, dict) else {}


def driver_origins(packages, source, family):
    """({repository: [package]} of driver packages from a repository ``source`` does not manage,
    [package] whose repository the facts could not tell but that may be another one)."""
    accepted = accepted_origins(source, family)
    foreign, undecided = {}, []
    for package in packages or ():
        if not _DRIVER_CORE.match(str(package.get("name") or "")):
            continue
        origin = _origin_of(package)
        repository = origin.get("repository")
        if repository and repository not in accepted:
            foreign.setdefault(repository, []).append(package)
        elif repository is None and set(origin.get("candidates") or ()) - set(accepted):
            undecided.append(package)
    return foreign, undecided


def _listed(packages, limit=3):
    shown = ", ".join(f"{p['name']} {p.get('version', '')}".strip() for p in packages[:limit])
    return shown + (f" and {len(packages) - limit} more" if len(packages) > limit else "")


def foreign_message(repository, packages, source, family, policy):
    """The refusal (refuse) or the notice (replace) for driver packages of another repository."""
    words = ORIGIN_WORDS.get(repository, repository)
    evidence = _origin_of(packages[0]).get("evidence") or "their version"
    head = (
        f"packages {_listed(packages)} (the installed driver) come from {words} ({evidence}), not from "
        f"{ORIGIN_WORDS['nvidia_repo'] if source == 'nvidia_repo' else 'the distribution'} "
        f"(nvidia_driver_source: {source})"
    )
    if policy == "replace":
        return (
            f"nvidia_driver_existing=replace: {head}; they are removed first (package manager remove: their "
            "configuration files stay), then the planned packages are installed"
        )
    keep = _source_of(repository, family)
    choices = [f"nvidia_driver_source: {keep} to keep managing this driver"] if keep else []
    choices += [
        "nvidia_driver_existing: replace to remove these packages first (their configuration files stay)",
        "remove them yourself through the package manager",
    ]
    return (
        f"nvidia_driver_existing=refuse: {head}; installing would mix two repositories' driver packages. "
        f"Choose {', '.join(choices[:-1])}, or {choices[-1]}"
    )


def runfile_owns_tree(tree, runfile):
    """The unowned DKMS tree is the one a present runfile driver registered (module nvidia, its version)."""
    version = (runfile or {}).get("version")
    return (
        bool((runfile or {}).get("uninstaller"))
        and tree.get("module") == "nvidia"
        and (version in (None, tree.get("version")))
    )


def dkms_message(tree):
    """The refusal for a DKMS tree of the nvidia module that no package owns, with the way out."""
    module, version, source_dir = tree.get("module"), tree.get("version"), tree.get("source_dir")
    registered = f", registered in {tree['dkms_dir']}" if tree.get("dkms_dir") else ""
    return (
        f"DKMS tree {source_dir} (module {module} {version}{registered}) that no package owns (a runfile "
        "--dkms install, or one added by hand?): DKMS would keep building it for every kernel next to the "
        f"packaged module. Remove it yourself first: dkms remove -m {module} -v {version} --all, then move "
        f"{source_dir} away (gpufleet never deletes a tree it does not own)"
    )


def _unowned_trees(state):
    """The unowned DKMS trees this run must not install next to, less those the runfile's uninstall takes."""
    runfile_handled = bool(state["runfile_markers"]) and not state["owned_by_package"]
    return [
        tree
        for tree in state["dkms"]
        if not tree.get("owned_by") and not (runfile_handled and runfile_owns_tree(tree, state["runfile"]))
    ]


def existing_driver(req, state, plan):
    """What the installed driver's owners say about this plan (``state``: host_state; ``plan``: build_plan's).

    Returns {'policy', 'foreign': [{name, version, repository}], 'undecided': [names], 'dkms': [trees],
    'replace': [names removed first], 'errors': [...], 'warnings': [...]}. Packages of a repository the
    source does not manage are refused (refuse) or removed first (replace); an unowned DKMS tree of the
    nvidia module is refused (removed by hand) where the plan builds a kernel module.
    """
    policy, family = req["existing"], state["family"]
    foreign, undecided = driver_origins(state["packages"], req["source"], family)
    out = {"policy": policy, "foreign": [], "undecided": [p["name"] for p in undecided], "replace": []}
    out.update(dkms=_unowned_trees(state), errors=[], warnings=[])
    for repository, packages in sorted(foreign.items()):
        message = foreign_message(repository, packages, req["source"], family, policy)
        (out["warnings"] if policy == "replace" else out["errors"]).append(message)
        out["foreign"] += [
            {"name": p["name"], "version": p.get("version"), "repository": repository} for p in packages
        ]
    if policy == "replace":
        out["replace"] = [p["name"] for p in out["foreign"]]
    if undecided:
        out["warnings"].append(
            f"the repository of packages {_listed(undecided)} could not be told "
            f"({_origin_of(undecided[0]).get('evidence')}, and no apt list settles it): taken to be "
            f"nvidia_driver_source {req['source']}'s; if it is another one, remove them first"
        )
    for tree in out["dkms"]:
        (out["errors"] if plan["build_kernel_module"] else out["warnings"]).append(dkms_message(tree))
    return out


def add_runfile(plan, req, state, errors, warnings):
    managed = state["host_managed"]
    trees = [
        tree["source_dir"]
        for tree in state["dkms"]
        if not tree.get("owned_by") and runfile_owns_tree(tree, state["runfile"])
    ]
    conflict, message = runfile_conflict(
        state["runfile_markers"],
        state["owned_by_package"],
        bool(req["replace_runfile"]),
        version=state["runfile"].get("version"),
        trees=trees,
    )
    if conflict and not managed:
        errors.append(message)
    elif message:
        warnings.append(message)
    plan["runfile"] = {
        "conflict": conflict,
        "message": message,
        "remove": bool(req["replace_runfile"]) and bool(state["runfile_markers"]) and not managed,
    }


_BRANCH_IN_NAME = re.compile(r"-(\d{3})(?:-|$)")
_BRANCH_FROM_VERSION = ("nvidia-open", "cuda-drivers", "libcuda1", "nvidia-smi", "nvidia-driver")


def installed_branches(packages):
    """Driver branches of installed packages ([{name, version}] as in facts driver.packages), sorted."""
    branches = set()
    for package in packages or ():
        name, version = package.get("name") or "", str(package.get("version") or "")
        match = _BRANCH_IN_NAME.search(name)
        if match and name.startswith(("nvidia-", "cuda-drivers", "linux-modules-nvidia")):
            branches.add(match.group(1))
        elif name in _BRANCH_FROM_VERSION:
            branch = branch_of(version.rsplit(":", 1)[-1].split("-", 1)[0])
            if branch:
                branches.add(branch)
    return sorted(branches)


def transition(plan, installed_packages, installed_branches, held_packages, replaced=()):
    """What moving from the installed driver to ``plan`` involves.

    Returns {'kind': 'none'|'install'|'branch_change'|'flavor_switch'|'source_change', 'unhold': [...],
    'remove': [...], 'from_branches': [...], 'switch_packages': [...], 'switch_argv': [...]}. A branch change
    or flavor switch releases the holds on the installed driver packages first (held packages block apt and
    dnf), and a branch change removes the other flavor's top-level packages. A flavor switch on the same
    branch is NVIDIA's in-place command instead: ``switch_packages`` for ``apt install --autoremove --purge``
    (Debian/Ubuntu), ``switch_argv`` (``dnf module switch-to ... --allowerasing`` on RHEL 8/9, for a branch
    change too: the plan's ``stream_switch``; ``dnf install --allowerasing ...`` on RHEL 10).
    ``replaced``: packages of another repository that nvidia_driver_existing: replace removes
    first (a source change).
    """
    installed = set(installed_packages or ())
    branches = sorted(set(installed_branches or ()))
    remove = [p for p in plan["other_flavor_packages"] if p in installed]
    remove += [p for p in replaced or () if p not in remove]
    if replaced:
        kind = "source_change"
    elif not installed or not branches:
        kind = "install"
    elif plan["branch"] not in branches or len(branches) > 1:
        kind = "branch_change"
    elif remove:
        kind = "flavor_switch"
    else:
        kind = "none"
    unhold = (
        sorted(held_packages or ()) if kind in ("branch_change", "flavor_switch", "source_change") else []
    )
    switch = plan.get("flavor_switch") or {}
    switch_packages, switch_argv = [], []
    if kind in ("branch_change", "flavor_switch") and plan.get("stream_switch"):
        # RHEL 8/9: the installed packages are a stream's; `dnf module switch-to <planned stream>
        # --allowerasing` moves them to the planned branch and flavor in place (a reset and an install by
        # name left them at the old branch: the names are installed; an EL 9-shaped host, issue 38)
        switch_argv, remove = list(plan["stream_switch"]), []
    elif kind == "flavor_switch" and (switch.get("apt_packages") or switch.get("argv")):
        # NVIDIA's in-place switch (APT_FLAVOR_SWITCH, DNF_*_SWITCH) replaces the other flavor itself
        # (apt --autoremove --purge, dnf --allowerasing): nothing is removed by name first.
        switch_packages, switch_argv = list(switch.get("apt_packages") or []), list(switch.get("argv") or [])
        remove = []
    return {
        "kind": kind,
        "unhold": unhold,
        "remove": remove,
        "from_branches": branches,
        "switch_packages": switch_packages,
        "switch_argv": switch_argv,
    }
