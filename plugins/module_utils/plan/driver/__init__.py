# Copyright: gpufleet contributors
# Apache-2.0
"""The NVIDIA driver plan: every decision of the ``nvidia_driver`` role, from the request and the facts.

Pure Python (no I/O), stdlib only: runs on the controller, in ``gpufleet.nvidia.nvidia_plan`` (through
plan/roles.py), and in tests. One concern per module:

* ``request`` -- the role's variables (:data:`REQUEST_KEYS`, built by plan/roles.py), their validation
  (:func:`validate`), branch parsing, the ``auto|true|false`` switches and the kernel module flavor;
* ``packages`` -- :func:`build_plan`: packages / dnf module stream / holds / fabric manager / kernel headers
  per OS x source x branch x kernel module flavor;
* ``existing`` -- a driver gpufleet did not install (host-managed, runfile, packages of another repository,
  DKMS trees no package owns) and the change of state (:func:`transition`);
* ``reboot`` -- the reboot decision, :func:`reboot_after` the install, the health check after the reboot;
* ``kernels`` -- :func:`kernel_guard`, :func:`initramfs_rebuild`, :func:`hold_missing`,
  :func:`versionlock_missing`;
* ``state`` -- what the plan reads of the facts; ``compat_input`` -- nvidia_compat's inputs and wording;
* ``nogpu`` -- a host without an NVIDIA GPU: nothing planned there unless ``install_without_gpu``;
* ``nvidia_role`` -- the variables of NVIDIA's own driver role, each refused with gpufleet's to set instead;
* ``record`` -- the role's files and its record of the driver packages its installs added (what removal,
  plan/removal.py, takes).

This module holds :func:`decide` -- ``decide(request, facts, compat=None)``: the one plan of a run.
``request`` holds the role's variables without their ``nvidia_driver_`` prefix, ``facts`` what
``ansible_facts.nvidia`` holds (docs/facts.md), ``compat`` the result of ``plan.compat.check``. The plan says
everything the tasks do: packages, locks, services, sources, refusals (``errors``), the reboot now. It also
exposes the entry points plan/roles.py uses; tests import the module they test.

Knowledge about branches and module flavors is kb/driver.py's, about operating systems kb/hosts.py's, and
the packaging tables (what each source packages, and how) are kb/driver_packages.py's, with their sources.
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver_packages as kb_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.compat_input import (
    user_words,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.existing import (
    add_runfile,
    existing_driver,
    host_managed_mismatch,
    installed_branches,
    transition,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.kernels import (
    guard_for_state,
    hold_missing,
    initramfs_rebuild,
    kernel_guard,
    off_branch,
    versionlock_missing,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.nogpu import (
    gpuless_plan,
    without_gpu,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.nvidia_role import (
    NVIDIA_ROLE_VARIABLES,
    nvidia_role_errors,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.packages import (
    bare_names,
    build_plan,
    dnf_bare,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.reboot import (
    reboot_after,
    reboot_decision,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.record import (
    after_install,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.record import (
    before as record_before,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.record import (
    files as driver_files,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.request import (
    REQUEST_KEYS,
    DriverPlanError,
    normalize_request,
    parse_branch_value,
    resolve_flavor,
    secure_boot_errors,
    tristate,
    validate,
    variable_errors,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.state import host_state

# The entry points used outside the plan (plan/roles.py: the plan and the later phases of nvidia_plan).
__all__ = [
    "NVIDIA_ROLE_VARIABLES",
    "after_install",
    "REQUEST_KEYS",
    "variable_errors",
    "DriverPlanError",
    "decide",
    "hold_missing",
    "initramfs_rebuild",
    "kernel_guard",
    "nvidia_role_errors",
    "off_branch",
    "reboot_after",
    "user_words",
    "validate",
    "versionlock_missing",
    "without_gpu",
]


def decide(request, facts, compat=None):
    """The driver plan of one host: a dict with everything the role's tasks do (see the module's RETURN).

    ``compat`` is ``plan.compat.check``'s result for the request (None: not checked); its errors and
    warnings join the plan's, its ``recommended.kernel_module`` resolves ``kernel_module: auto``.
    A plan with ``errors`` must not be executed; ``made`` is false when no package plan could be made.
    On a host without an NVIDIA GPU (``nogpu.without_gpu``) the plan is ``nogpu.gpuless_plan``'s: nothing
    installed, changed or removed, no refusal about the host, and the reason in ``summary``.
    """
    req, state = normalize_request(request), host_state(facts)
    if without_gpu(req, facts):
        return gpuless_plan(facts)
    errors = validate(req, facts)
    if errors:
        return {"made": False, "errors": errors, "warnings": [], "flavor": None}
    compat = compat or {}
    errors, warnings = list(compat.get("errors") or []), list(compat.get("warnings") or [])
    recommended = (compat.get("recommended") or {}).get("kernel_module")
    branch = parse_branch_value(req["branch"])
    flavor = resolve_flavor(req["kernel_module"], branch, recommended)
    if state["host_managed"]:
        errors += host_managed_mismatch(
            req["branch"],
            req["kernel_module"],
            req["version"],
            state["loaded_version"],
            state["loaded_flavor"],
        )
        flavor = state["loaded_flavor"] or flavor
    build = tristate(req["build_kernel_module"], "build_kernel_module")
    fabric = tristate(req["fabricmanager"], "fabricmanager")
    build_module = (not state["container"]) if build == "auto" else build == "true"
    kept = userspace_flavor(state["packages"], flavor, build_module)
    if kept:
        warnings.append(
            f"nvidia_driver_kernel_module={req['kernel_module']}: no kernel module is built here (userspace"
            f" only), so the installed {kept[0]} flavor ({kept[1]}) is kept: a flavor switch needs a host"
            " that builds the module"
        )
        flavor = kept[0]
    try:
        plan = build_plan(
            state["os_key"],
            req["source"],
            branch,
            flavor,
            version=req["version"],
            kernel_release=state["kernel_release"],
            ubuntu_server=bool(req["ubuntu_server"]),
            fabricmanager=state["nvswitch_count"] > 0 if fabric == "auto" else fabric == "true",
            dcgm=bool(req["dcgm"]),
            build_kernel_module=build_module,
        )
    except DriverPlanError as exc:
        return {"made": False, "errors": [*errors, str(exc)], "warnings": warnings, "flavor": flavor}
    _add_state(plan, req, state, errors, warnings)
    _add_tasks(plan, req, state)
    # the files the tasks write, and what the record of the packages this run adds starts from
    plan.update(files=driver_files(plan["family"]), record=record_before(facts))
    return plan


# The kernel module packages of each flavor in NVIDIA's repositories (RHEL's kmod, Debian/Ubuntu's DKMS)
KMOD_FLAVORS = {
    "kmod-nvidia-open-dkms": "open",
    "kmod-nvidia-latest-dkms": "proprietary",
    "nvidia-kernel-open-dkms": "open",
    "nvidia-kernel-dkms": "proprietary",
}


def userspace_flavor(packages, flavor, build_module):
    """(installed flavor, its package) when no kernel module is built here (a container) and the one flavor
    installed is not ``flavor``, else None. The userspace packages pull a kmod package (NVIDIA's
    nvidia-driver requires nvidia-kmod); switching it where no module is built changed nothing that runs, and
    on RHEL 8/9 ``dnf module switch-to`` left the other flavor's kmod in place, so every run switched again
    (an EL 9-shaped host, issue 38)."""
    if build_module:
        return None
    found = {KMOD_FLAVORS[p["name"]]: p["name"] for p in packages or () if p.get("name") in KMOD_FLAVORS}
    if len(found) != 1 or flavor in found:
        return None
    return next(iter(found.items()))


_NOTHING_EXISTING = {"foreign": [], "undecided": [], "dkms": [], "replace": [], "errors": [], "warnings": []}


def _add_state(plan, req, state, errors, warnings):
    """Host-managed, existing driver, transition, Secure Boot and runfile refusals; the user's warnings."""
    managed = state["host_managed"]
    if managed:  # the host owns the driver: nothing here is gpufleet's to judge or change
        existing = dict(_NOTHING_EXISTING, policy=req["existing"])
        plan["transition"] = {
            "kind": "none",
            "unhold": [],
            "remove": [],
            "from_branches": [],
            "switch_packages": [],
            "switch_argv": [],
        }
    else:
        warnings += plan["warnings"]
        existing = existing_driver(req, state, plan)
        errors += existing["errors"]
        warnings += existing["warnings"]
        plan["transition"] = transition(
            plan,
            [p["name"] for p in state["packages"]],
            installed_branches(state["packages"]),
            state["held"],
            replaced=existing["replace"],
        )
        if state["secure_boot"] and plan["module_signing_needed_with_secure_boot"]:
            refused, unsure = secure_boot_errors(req, state)
            errors += refused
            warnings += unsure
    plan["existing"] = {k: v for k, v in existing.items() if k not in ("errors", "warnings")}
    add_runfile(plan, req, state, errors, warnings)
    plan.update(
        made=True,
        errors=errors,
        warnings=warnings,
        host_managed=managed,
        host_managed_reason=state["host_managed_reason"],
        container=state["container"],
        install=not managed,
        mok_signing=state["secure_boot"] and plan["module_signing_needed_with_secure_boot"] and not managed,
    )


def _services(plan, req, state):
    state_wanted = "started" if state["loaded_version"] else None  # without /dev/nvidiactl they exit
    services = []
    if req["persistenced"]:
        services.append({"name": plan["persistenced_service"], "enabled": True, "state": state_wanted})
    if plan["fabricmanager_packages"] or (plan["dnf_module"] or "").endswith("/fm"):
        services.append({"name": plan["fabricmanager_service"], "enabled": True, "state": state_wanted})
    if plan["dcgm_packages"]:
        services.append({"name": plan["dcgm_service"], "enabled": True, "state": state_wanted})
    return services


def _debian_source(plan, req, state):
    if not plan["debian_components"]:
        return {"needed": False, "uri": "", "suites": "", "components": ""}
    codename = kb_packages.DEBIAN_CODENAMES[plan["os"]]
    return {
        "needed": True,
        "uri": req["debian_mirror"] or state["debian_mirror"] or kb_packages.DEBIAN_DEFAULT_MIRROR,
        "suites": f"{codename} {codename}-updates",
        "components": " ".join(plan["debian_components"]),
    }


def _dnf_locks(plan, req, state, apt):
    """The dnf branch lock, the locks released first and the module reset of this run's change."""
    kind = plan["transition"]["kind"]
    patterns = plan["versionlock_patterns"] if req["hold"] and not state["host_managed"] else []
    main_names = {dnf_bare(p) for p in plan["packages"]}
    return {
        # NVIDIA's branch lock before the install (RHEL 10; RHEL 8/9 userspace only): needed unless the
        # installed driver is this plan's and already locked (kb/driver_packages.py VERSIONLOCK_PATTERN).
        "versionlock_patterns": patterns,
        "versionlock_patterns_needed": bool(patterns)
        and (kind != "none" or not main_names & set(state["held"])),
        # dnf: the locks of the installed driver go before a branch change, flavor switch or source change
        "versionlock_delete": list(plan["transition"]["unhold"]) if not apt else [],
        # a branch change or flavor switch on RHEL 8/9 is `dnf module switch-to` (switch_argv); a reset only
        # where no switch is planned
        "dnf_module_reset_needed": bool(plan["dnf_module_reset"])
        and kind in ("branch_change", "flavor_switch")
        and not plan["transition"]["switch_argv"],
    }


def _add_tasks(plan, req, state):
    """What the tasks loop over or test: names, locks, services, sources, verify, reboot now, summary."""
    apt = plan["pkg_mgr"] == "apt"
    install = (
        plan["packages"] + plan["kernel_packages"] + plan["fabricmanager_packages"] + plan["dcgm_packages"]
    )
    expected = [p.split("=", 1)[0] for p in plan["pin_packages"] + install]
    locked = plan["packages"] + plan["kernel_packages"] + plan["fabricmanager_packages"]
    plan.update(
        install_packages=install,
        # DKMS builds for every installed kernel: the headers of those without a module and headers too
        header_packages=bare_names(plan["header_packages"] + guard_for_state(plan, state)["header_packages"]),
        hold_names=plan["hold_packages"] if req["hold"] and apt else [],
        versionlock_names=bare_names([dnf_bare(p) for p in locked])
        if req["hold"] and plan["versionlock"]
        else [],
        **_dnf_locks(plan, req, state, apt),
        services=_services(plan, req, state),
        initramfs={"command": plan["initramfs_command"], "run": not state["container"]},
        verify={
            # apt: the names without a glob; dnf: every name without its version or branch glob
            "packages": [p for p in expected if "*" not in p] if apt else [dnf_bare(p) for p in expected],
            # every package manager: the names, and NVIDIA's packages at the plan's branch (off_branch)
            "check_packages": True,
            "branch": plan["branch"],
        },
        debian_source=_debian_source(plan, req, state),
        loaded_version=state["loaded_version"],
    )
    plan["reboot"] = reboot_decision(
        req["reboot"],
        state["loaded_version"],
        state["loaded_flavor"],
        state["installed_version"],
        state["installed_flavor"],
        is_controller=bool(req["is_controller"]),
        is_container=state["container"],
        host_managed_driver=state["host_managed"],
        gpu_present=state["gpu_present"],
        boot_pending=state["boot_pending"],
    )
    plan["touches_host"] = not state["host_managed"] and (
        plan["transition"]["kind"] != "none" or plan["reboot"]["needed"]
    )
    plan["summary"] = _summary(plan, state)
    plan["progress"] = _progress(plan)
    plan["host_managed_report"] = (
        f"host-managed NVIDIA driver {state['loaded_version']} ({state['loaded_flavor']} kernel module) "
        f"matches nvidia_driver_branch {plan['branch']}; nothing installed or changed "
        f"({state['host_managed_reason']})."
        if state["host_managed"] and not plan.get("errors")
        else ""
    )


def _progress(plan):
    """What each install task downloads and installs, in words for its name (the tasks compute none)."""
    which = f"version {plan['version']}" if plan.get("version") else "the newest of the branch"
    return {
        "headers": " ".join(plan["header_packages"]) or "none",
        "pin": " ".join(plan["pin_packages"]) or "none",
        "module": plan["dnf_module"] or "none",
        "packages": f"{' '.join(plan['install_packages']) or 'none'} "
        f"(branch {plan['branch']}, {which}, {plan['flavor']} module, from {plan['source']})",
    }


def _summary(plan, state):
    head = (
        f"driver branch {plan['branch']} ({plan['flavor']} module) from {plan['source']}; "
        f"loaded {state['loaded_version'] or 'none'}, "
    )
    if state["host_managed"]:
        return f"{head}host-managed ({state['host_managed_reason']})"
    names = " ".join(plan["pin_packages"] + plan["packages"] + plan["kernel_packages"])
    text = f"{head}change: {plan['transition']['kind']}, packages: {names}"
    if plan["dnf_module"]:
        text += f", module stream {plan['dnf_module']}"
    if not plan["build_kernel_module"]:
        text += "; kernel module build skipped (container: module loading is impossible here)"
    return text
