# Copyright: gpufleet contributors
# Apache-2.0
"""The reboot: the decision before the install, the one from the facts read after it
(:func:`reboot_after`, ``nvidia_plan`` phases reboot and verify) and the health check after the role's reboot.

Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.request import (
    REBOOT_POLICIES,
    DriverPlanError,
    branch_of,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.state import host_state
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.refusal import bad

PENDING_REASON = "the initramfs / NVIDIA module of the running kernel changed after this boot"


def no_gpu_note(installed_version):
    """The clear, non-failing state of a module installed where no NVIDIA GPU is present to load it."""
    return f"module {installed_version} installed; not loadable: no NVIDIA GPU present"


def _pending_without_gpu(installed_version, pending):
    """(needed, why) of an installed module that no GPU loads: only a changed boot image counts."""
    pending = pending or {}
    if pending.get("initramfs_changed") or pending.get("module_changed"):
        return True, PENDING_REASON
    return False, no_gpu_note(installed_version)


def _reboot_need(
    loaded_version,
    loaded_flavor,
    installed_version,
    installed_flavor,
    *,
    is_container,
    gpu=True,
    pending=None,
):
    if installed_version is None:
        why = "no NVIDIA kernel module is installed for the running kernel"
        if is_container:
            why += " (a container: kernel modules cannot be built or loaded here)"
        return False, why
    if loaded_version is None and not gpu:
        return _pending_without_gpu(installed_version, pending)
    if loaded_version is None:
        return True, f"module {installed_version} is installed but no NVIDIA module is loaded"
    if loaded_version != installed_version:
        return True, f"loaded module {loaded_version} differs from installed {installed_version}"
    if installed_flavor and loaded_flavor and installed_flavor != loaded_flavor:
        return True, f"loaded {loaded_flavor} module differs from installed {installed_flavor} module"
    return False, f"loaded module {loaded_version} is the installed one"


def reboot_decision(
    policy,
    loaded_version,
    loaded_flavor,
    installed_version,
    installed_flavor,
    *,
    changed=False,
    is_controller=False,
    is_container=False,
    host_managed_driver=False,
    gpu_present=True,
    boot_pending=None,
):
    """Decide the reboot. Returns {'reboot': bool, 'needed': bool, 'reason': str}. needed: a kernel module
    is installed for the running kernel and the loaded one differs from it (other version, other flavor, or
    none loaded; without an NVIDIA GPU, ``gpu_present`` false, none loaded only when ``boot_pending``, facts
    driver.boot_pending, says the running kernel's initramfs or nvidia module changed after this boot).
    auto reboots when needed; always also when the run changed driver packages or kernel configuration;
    never does not. The controller itself, containers and host-managed drivers are never rebooted."""
    if policy not in REBOOT_POLICIES:
        raise DriverPlanError(bad("nvidia_driver_reboot", policy, ", ".join(REBOOT_POLICIES)))
    if host_managed_driver:
        return {
            "reboot": False,
            "needed": False,
            "reason": "the driver is host-managed: nothing to reboot for",
        }
    needed, why = _reboot_need(
        loaded_version,
        loaded_flavor,
        installed_version,
        installed_flavor,
        is_container=is_container,
        gpu=gpu_present,
        pending=boot_pending,
    )
    want = needed if policy == "auto" else (needed or changed) if policy == "always" else False
    if not want:
        if policy == "never" and needed:
            return {
                "reboot": False,
                "needed": True,
                "reason": f"{why}; reboot policy is never: reboot it yourself",
            }
        return {"reboot": False, "needed": needed, "reason": why}
    if is_container:
        return {"reboot": False, "needed": needed, "reason": f"{why}; a container is never rebooted"}
    if is_controller:
        return {
            "reboot": False,
            "needed": needed,
            "reason": f"{why}; this is the Ansible controller itself: never rebooted, reboot it yourself",
        }
    if not needed:
        why = f"{why}; policy always and the run changed the driver"
    return {"reboot": True, "needed": needed, "reason": why}


def reboot_after(plan, facts_after, changed=False, policy="auto", *, is_controller=False, rebooted=False):
    """The reboot decision from the facts read after the install, plus what verify checks.

    Returns reboot_decision's {reboot, needed, reason} and: container, loaded_version, installed_version
    (of the module the running kernel loads), check_running (nvidia-smi must answer with
    installed_version), loaded_in_branch (the loaded module is of the plan's branch), note (what to
    tell the user when the module cannot be checked here; empty otherwise) and failure (``rebooted``: the
    facts are read after the reboot the role did; an installed module that is still not the loaded one on
    a host with an NVIDIA GPU is a failed health check, one line; empty otherwise).
    """
    state = host_state(facts_after)
    decision = reboot_decision(
        policy,
        state["loaded_version"],
        state["loaded_flavor"],
        state["installed_version"],
        state["installed_flavor"],
        changed=bool(changed),
        is_controller=bool(is_controller),
        is_container=state["container"],
        host_managed_driver=state["host_managed"] or bool((plan or {}).get("host_managed")),
        gpu_present=state["gpu_present"],
        boot_pending=state["boot_pending"],
    )
    managed = state["host_managed"] or bool((plan or {}).get("host_managed"))
    failure = _after_reboot_failure(state, plan or {}) if rebooted and not managed else ""
    idle = not state["gpu_present"] and state["installed_version"] and not state["loaded_version"]
    checkable = not state["container"] and bool(state["installed_version"])
    decision.update(
        container=state["container"],
        loaded_version=state["loaded_version"],
        installed_version=state["installed_version"],
        check_running=checkable and (bool(failure) or (not decision["needed"] and not idle)),
        loaded_in_branch=branch_of(state["loaded_version"]) == (plan or {}).get("branch"),
        note=_after_note(state, decision, bool(idle)),
        failure=failure,
    )
    return decision


def _after_note(state, decision, idle):
    if state["container"]:
        return (
            f"{decision['reason']}. Module loading is impossible in a container: only the userspace packages "
            "were installed and checked."
        )
    if idle and decision["needed"]:
        return f"{decision['reason']}. A reboot is pending; the module is not loadable: no NVIDIA GPU present"
    if idle:
        return no_gpu_note(state["installed_version"])
    if decision["needed"]:
        return f"{decision['reason']}. A reboot is needed to load the installed driver."
    return ""


def _after_reboot_failure(state, plan):
    """The health check after the role's reboot: the running kernel has the module the plan builds (any
    host: a reboot into a kernel without it leaves the host without a driver), and on GPU hosts the
    installed module is the loaded one."""
    installed, loaded = state["installed_version"], state["loaded_version"]
    if state["container"]:
        return ""
    if not installed:
        if not plan.get("build_kernel_module"):
            return ""
        why = f" ({state['installed_reason']})" if state["installed_reason"] else ""
        kernel = state["kernel_release"] or "(unknown)"
        return f"health check: after the reboot the running kernel {kernel} has no NVIDIA module{why}"
    if not state["gpu_present"]:
        return ""
    flavors = state["installed_flavor"], state["loaded_flavor"]
    other_flavor = all(flavors) and flavors[0] != flavors[1]
    if loaded == installed and not other_flavor:
        return ""
    if other_flavor:
        installed, loaded = f"{installed} {flavors[0]}", f"{loaded} {flavors[1]}"
    loaded = loaded or "none"
    return f"health check: after the reboot the installed module {installed} is not loaded (loaded: {loaded})"


def removal_reboot(policy, state, removing, *, is_controller=False):
    """The reboot after the driver's removal (nvidia_driver_state: absent), decided before it from the facts
    (``state``: host_state): the removed driver's module stays loaded until the host reboots, and nouveau
    loads again from the next boot on. auto reboots when a module is loaded and packages go; always when
    packages go; never reports it. Containers and the controller itself are never rebooted."""
    if policy not in REBOOT_POLICIES:
        raise DriverPlanError(bad("nvidia_driver_reboot", policy, ", ".join(REBOOT_POLICIES)))
    if not removing:
        return {"reboot": False, "needed": False, "reason": "nothing of gpufleet's driver is removed"}
    loaded = state["loaded_version"]
    needed = bool(loaded)
    why = (
        f"the removed driver's module {loaded} stays loaded until the host reboots"
        if needed
        else "no NVIDIA module is loaded: nothing to unload"
    )
    want = needed if policy == "auto" else policy == "always"
    if not want:
        never = policy == "never" and needed
        return {
            "reboot": False,
            "needed": needed,
            "reason": why + ("; reboot policy is never: reboot it yourself" if never else ""),
        }
    if state["container"]:
        return {"reboot": False, "needed": needed, "reason": f"{why}; a container is never rebooted"}
    if is_controller:
        return {
            "reboot": False,
            "needed": needed,
            "reason": f"{why}; this is the Ansible controller itself: never rebooted, reboot it yourself",
        }
    return {"reboot": True, "needed": needed, "reason": why}
