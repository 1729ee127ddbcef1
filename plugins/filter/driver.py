# Copyright: gpufleet contributors
# Apache-2.0
"""Jinja2 filters over the NVIDIA driver plan (pure decisions of plugins/module_utils/plan/driver/).

driver_reboot    plan | gpufleet.nvidia.driver_reboot(facts, changed, policy, is_controller, rebooted=true)
                 -> {reboot, needed, reason, container, loaded_version, installed_version, check_running,
                     loaded_in_branch, note, failure}: the reboot decision from the facts read after the
                     install; rebooted (the facts are read after the role's reboot): failure is the failed
                     health check (installed module still not loaded on a GPU host), "" otherwise
driver_kernels   plan | gpufleet.nvidia.driver_kernels(facts)
                 -> {build, headers_missing, header_packages, next_boot, next_boot_ok, message}: the installed
                     kernels DKMS builds for, those whose headers are missing (and their packages), and
                     whether the kernel the host boots next has an NVIDIA module (message: why not)
driver_initramfs plan | gpufleet.nvidia.driver_initramfs(facts, check_mode)
                 -> {commands, kernels, current, reason}: the initramfs images older than the files they
                     carry (the role's modprobe files, its hook) and the commands that rebuild them
driver_unlocked  plan | gpufleet.nvidia.driver_unlocked(facts)
                 -> the plan's dnf versionlock names that no held package of the facts covers yet

``plan`` is nvidia_driver_plan's ``plan``, ``facts`` a fresh ``ansible_facts.nvidia`` (nvidia_facts).
A bad policy fails the task with the one-line message naming nvidia_driver_reboot.
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import driver as dp


def driver_reboot(plan, facts, changed=False, policy="auto", is_controller=False, *, rebooted=False):
    try:
        return dp.reboot_after(
            plan, facts, changed=changed, policy=policy, is_controller=is_controller, rebooted=bool(rebooted)
        )
    except dp.DriverPlanError as err:
        raise AnsibleFilterError(str(err)) from None


def driver_kernels(plan, facts):
    return dp.kernel_guard(plan, facts)


def driver_initramfs(plan, facts, check_mode=False):
    return dp.initramfs_rebuild(plan, facts, check_mode=bool(check_mode))


def driver_unlocked(plan, facts):
    return dp.versionlock_missing(plan, facts)


def driver_unheld(plan, facts):
    return dp.hold_missing(plan, facts)


class FilterModule:
    def filters(self):
        return {
            "driver_reboot": driver_reboot,
            "driver_kernels": driver_kernels,
            "driver_initramfs": driver_initramfs,
            "driver_unlocked": driver_unlocked,
            "driver_unheld": driver_unheld,
        }
