# Copyright: gpufleet contributors
# Apache-2.0
"""The plan of a role, from the role's own variables and one host's facts: what ``nvidia_plan`` calls.

Pure Python, stdlib only, on the controller (plugins/action/nvidia_plan.py). ``variables`` are the role's
variables as the user names them (``cudnn_version``, ``cuda_toolkit_versions``, ...), resolved by the
action from the role's ``defaults/main.yml`` and the host's variables and typed by the role's argument
spec; ``facts`` is what ``ansible_facts.nvidia`` holds (probe/facts.py). Nothing here knows a default:
the role's defaults file is the one declaration of each variable.

Per role: ``facts_wanted`` (what nvidia_facts must gather for the plan), ``validate`` (the refusals that
need no facts, before anything is gathered) and ``plan`` (the plan, its compatibility answer, one summary
line). A role switched off for the host (``<role>_enabled: false``, :data:`SWITCHES`) wants no facts, is
refused nothing and plans nothing: its plan says "disabled by <role>_enabled".
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import compat as plan_compat
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cuda as plan_cuda
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import cudnn as plan_cudnn
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import downloads as plan_downloads
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as plan_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import inputs as plan_inputs
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import removal as plan_removal
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as plan_repo
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import sources as plan_sources
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.stack import PlanError, compat_inputs

ROLES = ("nvidia_driver", "cuda_toolkit", "cudnn")
# The variables of another role a role's plan reads: cudnn follows the default CUDA of the cuda_toolkit role.
BORROWED = {"cudnn": {"cuda_toolkit": ("cuda_toolkit_versions", "cuda_toolkit_default")}}
# The variables of another project's role that a role refuses, each naming the variable to set instead:
# NVIDIA's driver role shares nvidia_driver_'s prefix (plan/driver/nvidia_role.py). They are in no argument
# spec, so the action reads them from the host's variables: {role: (names, the check of {name: value})}.
FOREIGN = {"nvidia_driver": (plan_driver.NVIDIA_ROLE_VARIABLES, plan_driver.nvidia_role_errors)}
# Each role's switch (a bool of its argument spec): false = the role does nothing on that host. The variables
# of a disabled role are typed by its spec (Ansible does so at the role's entry too), not judged further.
SWITCHES = {role: f"{role}_enabled" for role in ROLES}


def _host(facts):
    return (facts or {}).get("host") or {}


def host_machine(facts, fallback=None):
    """The CPU architecture of the host: the facts' ``host.machine``, else ``fallback``."""
    return _host(facts).get("machine") or fallback


def host_os(facts):
    """{distribution, version} of the host as the facts say (empty when unknown)."""
    found = _host(facts).get("os") or {}
    if found.get("distribution") in (None, "", "unknown"):
        return {}
    return {"distribution": found["distribution"], "version": found.get("version") or ""}


# ---------------------------------------------------------------------------------------------------
# Packages (nvidia_repo and distro sources): the repository and the package set against what is installed
# ---------------------------------------------------------------------------------------------------
NO_PACKAGES = {"specs": [], "names": [], "hold": [], "installed": {}, "missing": [], "unhold": []}


def wants_sources(role, variables):
    """Whether a role's plan reads the host's package sources (the facts' ``sources``): it writes NVIDIA's
    repository (``<role>_source: nvidia_repo``) and does not take the host's repositories as they are."""
    return variables[f"{role}_source"] == "nvidia_repo" and not variables[f"{role}_repo_use_existing"]


def role_repo(role, variables, facts):
    """NVIDIA's repository for the host as a role's plan carries it: ``plan/repo.repo_config`` from the role's
    ``<role>_repo_base_url`` and ``_repo_key_fingerprint``, then what the host's own sources decide
    (``plan/sources.adoption``: ``adopt`` the source NVIDIA's guide left, ``remove_own`` gpufleet's superseded
    source and keyring, ``words``). The one way the three roles get their repository; RepoPlanError naming the
    variable or the host's files when it cannot be served."""
    os_info = host_os(facts)
    repo = plan_repo.repo_config(
        os_info.get("distribution", "unknown"),
        os_info.get("version", ""),
        host_machine(facts, "x86_64"),
        variables[f"{role}_repo_base_url"],
        variables[f"{role}_repo_key_fingerprint"],
        prefix=role,
    )
    if wants_sources(role, variables):
        repo.update(plan_sources.adoption(repo, (facts or {}).get("sources"), prefix=role))
    return repo


def package_plan(role, variables, facts, versions, cuda_major=""):
    """{repo, packages} of a role that installs packages: NVIDIA's repository for the host (key, source file,
    manager) and the package specs decided against the facts' installed packages (missing, holds to release);
    PlanError naming the variable when the OS has no such repository or apt could not install them."""
    os_info = host_os(facts)
    distribution, version = os_info.get("distribution", "unknown"), os_info.get("version", "")
    installed = (facts or {}).get("packages") or {}
    try:
        repo = role_repo(role, variables, facts)
        if not versions:  # every toolkit adopted as it is: nothing to install
            return {"repo": repo, "packages": dict(NO_PACKAGES)}
        packages = plan_repo.package_plan(
            role,
            variables[f"{role}_source"],
            [str(v) for v in versions],
            cuda_major=str(cuda_major or ""),
            dev=role == "cudnn" and bool(variables["cudnn_install_dev"]),
            repo_dir=repo["repo_dir"],
            distribution=distribution,
            distribution_version=version,
            installed=installed.get("installed") or {},
        )
    except plan_repo.RepoPlanError as exc:
        raise PlanError(str(exc)) from None
    python_apt = installed.get("python_apt")
    refusal = plan_repo.python_apt_refusal(repo["manager"], role, packages["missing"], python_apt)
    if refusal:
        raise PlanError(refusal)
    return {"repo": repo, "packages": packages}


# ---------------------------------------------------------------------------------------------------
# cuda_toolkit
# ---------------------------------------------------------------------------------------------------
def cuda_request(variables, machine, stamp):
    """plan/cuda.plan's request from the cuda_toolkit role's variables."""
    v = variables
    return {
        "versions": [str(x) for x in v["cuda_toolkit_versions"]],
        "default": v["cuda_toolkit_default"],
        "source": v["cuda_toolkit_source"],
        "base_url": v["cuda_toolkit_redist_base_url"],
        "components": [str(c) for c in v["cuda_toolkit_redist_components"]],
        "releases": dict(v["cuda_toolkit_redist_releases"]),
        "controller_cache": v["cuda_toolkit_controller_cache"],
        "controller_cache_dir": v["cuda_toolkit_controller_cache_dir"],
        "remove_unlisted": v["cuda_toolkit_remove_unlisted"],
        "profile": v["cuda_toolkit_profile"],
        "ldconfig": v["cuda_toolkit_ldconfig"],
        "verify_arch": v["cuda_toolkit_verify_arch"],
        "existing": v["cuda_toolkit_existing"],
        "system_default": v["cuda_toolkit_system_default"],
        "skip_compat": v["cuda_toolkit_skip_compat_check"],
        "machine": machine,
        "stamp": stamp,
    }


def _cuda_facts(variables):
    subsets = ["gpu", "driver"]
    # the existing toolkits and their owners matter for removals and for who owns what the role touches
    if variables["cuda_toolkit_remove_unlisted"] or variables["cuda_toolkit_source"] != "distro":
        subsets += ["cuda", "owners"]
    if variables["cuda_toolkit_source"] != "redist":
        subsets.append("packages")
    if wants_sources("cuda_toolkit", variables):
        subsets.append("sources")
    return {"gather_subset": subsets}


def _cuda_validate(variables):
    plan_cuda.validate(
        variables["cuda_toolkit_versions"],
        variables["cuda_toolkit_default"],
        variables["cuda_toolkit_verify_arch"],
    )


def _cuda_plan(variables, facts, context):
    req = cuda_request(variables, host_machine(facts, context.get("machine")), context.get("stamp", ""))
    toolkits = ((facts or {}).get("cuda") or {}).get("toolkits") or []
    owned = [t["path"] for t in toolkits if t.get("gpufleet_marker")]
    plan = plan_cuda.plan(req, facts, context.get("overrides"), owned)
    plan["remove_alternatives"] = plan_cuda.remove_alternatives(plan["remove"])
    plan.update(repo={}, packages=dict(NO_PACKAGES))
    if req["source"] != "redist":
        plan.update(package_plan("cuda_toolkit", variables, facts, plan["package_versions"]))
    plan.update(cuda_hold(variables, plan))
    compat = plan.pop("compat")
    plan["summary"] = cuda_summary(plan)
    plan["progress"] = cuda_progress(plan)
    return plan, compat


def cuda_hold(variables, plan):
    """{hold, versionlock, versionlock_release}: whether the toolkit's packages are held (cuda_toolkit_hold,
    NVIDIA's repository only: a redist tree has no package, the distribution's toolkit follows the
    distribution); on dnf the versionlock patterns of the packages of each release the plan installs
    (plan/repo.toolkit_lock_patterns) and those of each release whose locked toolkit the plan moves to another
    version (packages.unhold: a pinned X.Y.Z up or down): that install runs with the versionlock plugin off
    (the lock would filter the move out: "All matches were filtered out by exclude filtering"), then these
    locks are released and the new versions locked, so a refused install leaves the old locks in place. apt
    holds the set's names (packages.hold_missing, from the index where it is read) and releases
    packages.unhold."""
    hold = bool(variables["cuda_toolkit_hold"]) and plan["source"] == "nvidia_repo"
    dnf = (plan.get("repo") or {}).get("manager") == "dnf"
    versions = plan["package_versions"] if dnf else []
    moving = set((plan.get("packages") or {}).get("unhold") or [])
    try:
        patterns = plan_repo.toolkit_lock_patterns(versions if hold else [])
        release = plan_repo.toolkit_lock_patterns(
            [v for v in versions if plan_repo.toolkit_name(v) in moving]
        )
    except plan_repo.RepoPlanError as exc:
        raise PlanError(str(exc)) from None
    return {"hold": hold, "versionlock": patterns, "versionlock_release": release}


def cuda_progress(plan):
    """What the install step downloads and installs, in words for its task's name: each redist toolkit's
    release, components (cuda_toolkit_redist_components' sets and names: toolkit, compiler) and tree, or the
    package specs."""
    if plan["source"] != "redist":
        return f"packages {' '.join(plan['packages']['specs']) or 'none'} from {plan['source']}"
    parts = [
        f"CUDA {t['release']} ({', '.join(t['component_sets'])}) into {t['dest']}" for t in plan["install"]
    ]
    return "; ".join(parts) or "nothing to install"


def cuda_summary(plan):
    """One line: versions, source, default, and what the plan does to what exists."""
    parts = [f"CUDA toolkit {', '.join(plan['versions'])} from {plan['source']}, default {plan['default']}"]
    parts += ["packages held (cuda_toolkit_hold)"] if plan.get("hold") else []
    parts += [f"adopted as it is: {t['dest']} ({t['existing']['owned_by']})" for t in plan["toolkits"]
              if t["action"] == "adopt"]  # fmt: skip
    parts += [f"moved aside: {r['path']} -> {r['backup']}" for r in plan["retire"] + plan["link_backups"]]
    parts += [f"/usr/local/{c['name']}: {c['before']} -> {c['after']}" for c in plan["default_changes"]]
    parts += [_loader_words(change) for change in plan["loader"]]
    parts += [plan["repo"]["words"]] if (plan.get("repo") or {}).get("words") else []
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------------
# cudnn
# ---------------------------------------------------------------------------------------------------
def cudnn_request(variables, machine, os_family):
    """plan/cudnn.plan's request from the cudnn role's variables (and the cuda_toolkit role's default)."""
    v = variables
    return {
        "version": v["cudnn_version"],
        "cuda_major": v["cudnn_cuda_major"],
        "extra_variants": list(v["cudnn_extra_variants"]),
        "source": v["cudnn_source"],
        "base_url": v["cudnn_redist_base_url"],
        "controller_cache": v["cudnn_controller_cache"],
        "controller_cache_dir": v["cudnn_controller_cache_dir"],
        "prefix": v["cudnn_prefix"],
        "keep_versions": v["cudnn_keep_versions"],
        "ldconfig": v["cudnn_ldconfig"],
        "existing": v["cudnn_existing"],
        "system_default": v["cudnn_system_default"],
        "skip_compat": v["cudnn_skip_compat_check"],
        "cuda_versions": [str(x) for x in v["cuda_toolkit_versions"]],
        "cuda_default": v["cuda_toolkit_default"],
        "machine": machine,
        "os_family": os_family,
    }


def _cudnn_facts(variables):
    subsets = ["gpu", "driver", "owners"]
    if variables["cudnn_source"] == "nvidia_repo":
        subsets.append("packages")
    if wants_sources("cudnn", variables):
        subsets.append("sources")
    return {"gather_subset": subsets, "owner_paths": [variables["cudnn_prefix"]]}


def _cudnn_validate(variables):
    # the cuda_toolkit role's versions and default as that role checks them: cuDNN builds for its default
    plan_cuda.validate(variables["cuda_toolkit_versions"], variables["cuda_toolkit_default"])
    plan_cudnn.variants(cudnn_request(variables, None, None))


def _cudnn_plan(variables, facts, context):
    family = context.get("os_family") or {"rhel": "RedHat"}.get(_family(facts), "Debian")
    req = cudnn_request(variables, host_machine(facts, context.get("machine")), family)
    plan = plan_cudnn.plan(req, facts, context.get("overrides"), host_os(facts))
    plan.update(repo={}, packages=dict(NO_PACKAGES))
    if req["source"] == "nvidia_repo":
        main = plan["main"]
        plan.update(package_plan("cudnn", variables, facts, [main["version"]], main["cuda_major"]))
    compat = plan.pop("compat")
    plan["summary"] = cudnn_summary(plan)
    plan["progress"] = cudnn_progress(plan)
    return plan, compat


def cudnn_progress(plan):
    """What the install step downloads and installs, in words for its tasks' names: the package specs, and
    each redist build's release, CUDA major and tree."""
    parts = [f"packages {' '.join(plan['packages']['specs'])}"] if plan["packages"]["specs"] else []
    for build in plan["redist_install"]:
        parts.append(
            f"cuDNN {build['release']} for CUDA {build['cuda_major']} ({', '.join(build['components'])}) "
            f"under {build['verify_dir']}"
        )
    return "; ".join(parts) or "nothing to install"


def _family(facts):
    key = ((_host(facts).get("os") or {}).get("key")) or ""
    return "rhel" if key.startswith("rhel") else "debian"


def cudnn_summary(plan):
    """One line: the builds, their source and what the plan does to what exists."""
    builds = ", ".join(f"{b['version']} for CUDA {b['cuda_major']} ({b['source']})" for b in plan["variants"])
    parts = [f"cuDNN {builds}"]
    parts += [f"adopted as it is: {a}" for a in plan["adopted"]]
    parts += [_loader_words(change) for change in plan["loader"]]
    if plan["transition"]:
        kept = ", ".join(plan["transition"]["kept"]) or "nothing"
        parts.append(f"switch from redist: {', '.join(plan['transition']['removed'])} removed, kept {kept}")
    parts += [plan["repo"]["words"]] if (plan.get("repo") or {}).get("words") else []
    return "; ".join(parts)


def _loader_words(change):
    before = (change.get("before") or {}).get("path") or "nothing"
    shadowed = " (stays first: gpufleet's build is verified by its path)" if change.get("shadowed") else ""
    return f"{change['soname']}: {before} -> {change['after']['path']}{shadowed}"


# ---------------------------------------------------------------------------------------------------
# nvidia_driver
# ---------------------------------------------------------------------------------------------------
DRIVER_PREFIX = "nvidia_driver_"


def driver_request(variables, is_controller):
    """plan/driver's request from the nvidia_driver role's variables."""
    request = {key: variables[DRIVER_PREFIX + key] for key in plan_driver.REQUEST_KEYS}
    request["is_controller"] = bool(is_controller)
    return request


def _driver_facts(variables):
    moks = [
        variables[f"nvidia_driver_{k}"] for k in ("mok_key", "mok_cert") if variables[f"nvidia_driver_{k}"]
    ]
    sources = ["sources"] if wants_sources("nvidia_driver", variables) else []
    # packages: gpufleet's record of the driver packages its installs added (plan/driver/record.py)
    return {"gather_subset": ["gpu", "driver", "packages", *sources], "mok_paths": moks}


def _driver_validate(variables):
    """The driver's refusals that need no host; those that depend on its OS are made with the facts."""
    errors = plan_driver.variable_errors(driver_request(variables, False))
    if errors:
        raise PlanError("; ".join(errors))


def _driver_compat(variables, request, facts):
    """plan.compat.check on the driver the plan installs, its messages in the role's words."""
    gave = bool(variables["nvidia_driver_gpus"])
    # the GPUs and OS as every plan reads them (plan/stack.compat_inputs), with the driver this plan installs
    inputs = compat_inputs(
        facts,
        {
            "gpus": variables["nvidia_driver_gpus"] or None,
            "driver_branch": request["branch"],
            "driver_version": request["version"] or None,
            "kernel_module": request["kernel_module"],
        },
    )
    try:
        result = plan_compat.check(cuda_version=variables["nvidia_driver_cuda_version"] or None, **inputs)
    except plan_compat.CompatInputError as exc:
        return {"errors": [plan_driver.user_words(exc, gave)], "warnings": [], "recommended": {}}
    return {
        "errors": [plan_driver.user_words(e, gave) for e in result["errors"]],
        "warnings": [plan_driver.user_words(w, gave) for w in result["warnings"]],
        "recommended": result["recommended"],
        "gpus": result.get("gpus") or [],
    }


def _driver_plan(variables, facts, context):
    request = driver_request(variables, context.get("is_controller"))
    compat = None
    # nothing to check on a host the plan leaves alone (no NVIDIA GPU there: plan/driver/nogpu.py)
    checked = not variables["nvidia_driver_skip_compat_check"] and not plan_driver.without_gpu(request, facts)
    if checked and not plan_driver.validate(request, facts):
        compat = _driver_compat(variables, request, facts)
    plan = plan_driver.decide(request, facts, compat)
    # holds and versionlocks the facts do not show yet (configure's, when the install step did not run)
    plan.update(
        unheld=plan_driver.hold_missing(plan, facts), unlocked=plan_driver.versionlock_missing(plan, facts)
    )
    plan["repo"] = _driver_repo(variables, facts, plan)
    # what modprobe.d's file is rendered from: name=value tokens, checked by plan/inputs.py
    plan["modprobe_options"] = [str(o) for o in variables["nvidia_driver_modprobe_options"]]
    found = {
        "compatible": not plan["errors"],
        "errors": list(plan["errors"]),
        "warnings": list(plan["warnings"]),
        "recommended": (compat or {}).get("recommended"),
        "gpus": (compat or {}).get("gpus") or [],
        "checked": ["driver"] if compat is not None else [],
    }
    plan.setdefault("summary", "; ".join(plan["errors"]) or "no plan")
    if plan["repo"].get("words"):
        plan["summary"] += "; " + plan["repo"]["words"]
    return plan, found


def _driver_repo(variables, facts, plan):
    """NVIDIA's repository for the host when the plan installs from it (else {}); a refusal joins the
    plan's errors (an OS NVIDIA has no repository for, a malformed base URL or fingerprint)."""
    if not plan.get("use_nvidia_repo"):
        return {}
    try:
        return role_repo("nvidia_driver", variables, facts)
    except plan_repo.RepoPlanError as exc:
        plan["errors"].append(str(exc))
        return {}


def driver_target(plan):
    """The driver a host runs after this plan (compat overrides for the CUDA and cuDNN checks of a stack),
    or None when the plan installs nothing (the loaded driver stays what the facts say)."""
    if not plan or not plan.get("install") or plan.get("host_managed"):
        return None
    return {"driver_branch": plan.get("branch"), "driver_version": plan.get("version") or None,
            "kernel_module": plan.get("flavor") or "auto"}  # fmt: skip


def driver_phase(phase, variables, planned, facts, context=None):
    """What the nvidia_driver role decides after a step of its run, from the preflight's plan (``planned``)
    and facts read after that step: ``installed`` (the kernels DKMS builds for, holds and versionlocks still
    missing), ``initramfs`` (the images to rebuild), ``reboot`` (the decision; context ``changed``: the run
    changed the driver) and ``verify`` (what verify checks; context ``rebooted``: after the role's reboot);
    ``installed`` also renders gpufleet's record of the driver packages the install added."""
    context = context or {}
    policy, controller = variables["nvidia_driver_reboot"], bool(context.get("is_controller"))
    changed, rebooted = bool(context.get("changed")), bool(context.get("rebooted"))
    if phase == "installed":
        return {
            "kernels": plan_driver.kernel_guard(planned, facts),
            "unheld": plan_driver.hold_missing(planned, facts),
            "unlocked": plan_driver.versionlock_missing(planned, facts),
            "record": plan_driver.after_install(planned, facts),
        }
    if phase == "initramfs":
        return {
            "initramfs": plan_driver.initramfs_rebuild(planned, facts, check_mode=context.get("check_mode"))
        }
    if phase == "reboot":
        decided = plan_driver.reboot_after(planned, facts, changed, policy, is_controller=controller)
        return {"reboot": decided}
    if phase == "verify":
        installed = {p.get("name") for p in ((facts or {}).get("driver") or {}).get("packages") or []}
        return {
            # after the role's reboot: the health check (policy never: nothing more to decide)
            "verified": plan_driver.reboot_after(
                planned,
                facts,
                changed,
                "never" if rebooted else policy,
                is_controller=controller,
                rebooted=rebooted,
            ),
            "kernels": plan_driver.kernel_guard(planned, facts),
            "missing": [p for p in planned["verify"]["packages"] if p not in installed],
            "off_branch": plan_driver.off_branch(planned, facts),
        }
    raise PlanError(f"phase={phase} (allowed: installed, initramfs, reboot, verify)")


# ---------------------------------------------------------------------------------------------------
# A role switched off for a host
# ---------------------------------------------------------------------------------------------------
def disabled(role, variables):
    """The role is switched off for this host: its switch (:data:`SWITCHES`) is false."""
    return variables.get(SWITCHES[role]) is False


def disabled_plan(role):
    """(plan, compat) of a disabled role: nothing planned, checked or refused; the keys tasks test false."""
    summary = f"disabled by {SWITCHES[role]}: false (nothing planned, installed or changed on this host)"
    plan = {"enabled": False, "errors": [], "warnings": [], "summary": summary}
    if role == "nvidia_driver":  # the keys its tasks and playbooks/driver_upgrade.yml test
        plan.update(install=False, host_managed=False, host_managed_report="", touches_host=False)
    compat = {"compatible": True, "errors": [], "warnings": [], "recommended": None, "gpus": []}
    return plan, dict(compat, checked=[])


# ---------------------------------------------------------------------------------------------------
# The table the action asks
# ---------------------------------------------------------------------------------------------------
_ROLE_FUNCS = {
    "nvidia_driver": (_driver_facts, _driver_validate, _driver_plan),
    "cuda_toolkit": (_cuda_facts, _cuda_validate, _cuda_plan),
    "cudnn": (_cudnn_facts, _cudnn_validate, _cudnn_plan),
}


def _funcs(role):
    if role not in _ROLE_FUNCS:
        raise PlanError(f"role={role} (allowed: {', '.join(sorted(_ROLE_FUNCS))})")
    return _ROLE_FUNCS[role]


def facts_wanted(role, variables):
    """{gather_subset, owner_paths, mok_paths}: what nvidia_facts gathers for this role's plan (nothing for a
    disabled role)."""
    funcs = _funcs(role)
    if disabled(role, variables):
        wanted = {"gather_subset": []}
    elif plan_removal.absent(role, variables):
        wanted = plan_removal.facts_wanted(role, variables)
    else:
        wanted = funcs[0](variables)
    return {
        "gather_subset": list(wanted["gather_subset"]),
        "owner_paths": list(wanted.get("owner_paths") or []),
        "mok_paths": list(wanted.get("mok_paths") or []),
    }


def merge_wanted(wanted):
    """One gathering for several roles: the union of their subsets and paths, in a stable order."""
    out = {"gather_subset": [], "owner_paths": [], "mok_paths": []}
    for item in wanted:
        for key, values in item.items():
            out[key] += [v for v in values if v not in out[key]]
    return out


def validate(role, variables, foreign=None):
    """The refusals that need no host facts (PlanError naming the variable, its value and what is allowed):
    every variable's text and grammar (plan/inputs.py), the variables of another project's role the host sets
    (``foreign``: {name: value} of :data:`FOREIGN`'s names), then the role's own checks; none for a disabled
    role."""
    funcs = _funcs(role)
    if disabled(role, variables):
        return
    errors = plan_inputs.errors_of(variables)
    if role in FOREIGN:
        errors += FOREIGN[role][1](foreign or {})
    if errors:
        raise PlanError("; ".join(errors))
    if not plan_removal.absent(role, variables):  # a removal plans from the host's records, not from these
        funcs[1](variables)


# RHEL 8's python3-dnf is built for its platform-python 3.6 only, a target Python that ansible-core 2.17
# dropped: from 2.17 on, ansible.builtin.dnf cannot run on RHEL 8 whatever interpreter the host is given
# (ansible/ansible#82068, #84560; the nodejs/build note "older version of Ansible needed for RHEL 8"). High.
EL8_LAST_CORE = (2, 16)


def el8_dnf_refusal(role, variables, facts, core):
    """The refusal of a role that installs with dnf (the driver; cuda_toolkit and cudnn but from redist) on a
    RHEL 8-family host when the controller's ansible-core (``core``, e.g. '2.19.4') is newer than 2.16; None
    where it can run."""
    if (_host(facts).get("os") or {}).get("key") != "rhel8" or not core:
        return None
    if tuple(int(p) for p in str(core).split(".")[:2] if p.isdigit()) <= EL8_LAST_CORE:
        return None
    if role != "nvidia_driver" and variables.get(f"{role}_source") == "redist":
        return None
    os_info = host_os(facts)
    instead = f" or {role}_source: redist" if role != "nvidia_driver" else ""
    return (
        f"{role} installs with dnf on {os_info.get('distribution', 'RHEL')} {os_info.get('version', '8')}, "
        f"which ansible-core {core} cannot run there (RHEL 8's python3-dnf is for platform-python 3.6 only, "
        "a target Python that ansible-core 2.17 dropped): run this host's play with ansible-core 2.16"
        f"{instead}. Nothing was changed"
    )


def sbsa_repository_warning(role, variables, repo):
    """A warning when a role installs from an sbsa tree of NVIDIA's repository that NVIDIA is not known to
    publish (an Arm server on Debian: kb/hosts.py SBSA_REPOSITORIES), naming the URL and the way that is sure;
    None otherwise."""
    if variables.get(f"{role}_source") != "nvidia_repo" or not repo or repo.get("arch") != "sbsa":
        return None
    if repo.get("repo_dir") in kb_hosts.SBSA_REPOSITORIES:
        return None
    label = kb_hosts.OS_TABLE.get(repo["repo_dir"], {}).get("label", repo["repo_dir"])
    return (
        f"{role}_source: nvidia_repo on an Arm server (aarch64) with {label}: NVIDIA is not known to publish "
        f"an sbsa repository for {label} ({repo['url']}; its Debian repositories carry x86_64 and "
        f"cross-linux-sbsa); if that URL is missing, {kb_hosts.SBSA_ADVICE[role]}"
    )


def plan(role, variables, facts, context=None):
    """(plan, compat) of one role for one host; PlanError for a variable no plan can serve.

    context: machine (when the facts do not say it), os_family, stamp (UTC time for backup names),
    overrides (compat inputs instead of the facts' driver: the driver a stack plan installs).
    A disabled role's plan is :func:`disabled_plan`'s; every other plan has ``enabled: true``, ``state``:
    present (the install's plan) or absent (``<role>_state: absent``: plan/removal.py's, made from the
    host's records of what gpufleet installed; nothing of the role's install variables is checked or
    compared there), and ``download``: the proxies and CA bundle of the role's downloads
    (plan/downloads.settings).
    """
    funcs = _funcs(role)
    if disabled(role, variables):
        return disabled_plan(role)
    if plan_removal.absent(role, variables):
        made = plan_removal.plan(role, variables, facts, context)
        compat = {"compatible": True, "errors": [], "warnings": [], "recommended": None, "gpus": []}
        made.update(enabled=True, state=variables[f"{role}_state"], errors=[], warnings=[])
        made["download"] = plan_downloads.settings(role, variables)
        return made, dict(compat, checked=[])
    refusal = el8_dnf_refusal(role, variables, facts, (context or {}).get("ansible_core"))
    if refusal:
        raise PlanError(refusal)
    made, compat = funcs[2](variables, facts, context or {})
    sbsa = sbsa_repository_warning(role, variables, made.get("repo"))
    if sbsa:
        compat = dict(compat, warnings=[*compat.get("warnings", []), sbsa])
    made.update(enabled=True, state=variables[f"{role}_state"])
    made["download"] = plan_downloads.settings(role, variables)
    return made, compat


def report_lines(roles, plans, compat, errors):
    """What a preflight prints for one host: the verdict, each role's plan, every error and warning, and
    what gpufleet recommends for its GPUs."""
    if not roles:
        return ["OK: no role is planned for this host (gpufleet_driver_hosts, _cuda_hosts, _cudnn_hosts)"]
    found = [compat[r] for r in roles if r in compat]
    gpus = next((c["gpus"] for c in found if c.get("gpus")), [])
    names = ", ".join(g.get("name") or "unknown" for g in gpus) or "none"
    messages = [m for r in roles for m in errors.get(r, [])]
    warnings = list(dict.fromkeys(w for c in found for w in c.get("warnings") or []))
    head = (
        f"{'FAIL' if messages else 'OK'}: GPUs {names}; {len(messages)} error(s), {len(warnings)} warning(s)"
    )
    lines = [head]
    lines += [f"{r}: {plans[r]['summary']}" for r in roles if r in plans and r not in errors]
    lines += [f"error: {m}" for m in messages]
    lines += [f"warning: {w}" for w in warnings]
    recommended = next((c["recommended"] for c in reversed(found) if c.get("recommended")), None)
    if recommended:
        lines.append(
            f"recommended: driver R{recommended.get('driver_branch')} {recommended.get('kernel_module')}, "
            f"CUDA <= {recommended.get('cuda_max')}, cuDNN <= {recommended.get('cudnn_max')}"
        )
    return lines
