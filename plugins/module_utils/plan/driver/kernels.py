# Copyright: gpufleet contributors
# Apache-2.0
"""The installed kernels after the install: the kernel guard (what DKMS builds for, missing headers, the next
boot's module), the initramfs images to rebuild, and the holds and versionlocks not in place yet
(``nvidia_plan`` phases installed, initramfs and verify, through plan/roles.driver_phase).

Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver_packages as kb_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.packages import (
    dnf_bare,
    kernel_header_packages,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.state import host_state, section


def kernel_guard(plan, facts):
    """What the installed kernels need for the plan's module, from the facts (driver.kernels, next_boot).

    Returns {build: [releases DKMS builds for: no NVIDIA module, headers present], headers_missing:
    [releases without module and headers], header_packages: [their header packages], next_boot: release or
    None, next_boot_ok: the next boot's kernel has an NVIDIA module (true where no module is built here or
    no next boot is known), message: one line naming the kernel and why not, "" when ok}. Only DKMS plans
    that build the module list kernels to build.
    """
    return guard_for_state(plan or {}, host_state(facts))


def guard_for_state(plan, state):
    """:func:`kernel_guard` on facts already read by ``state.host_state`` (the plan's own header packages)."""
    family = plan.get("family") or state["family"]
    next_boot = state["next_boot"]
    out = {"build": [], "headers_missing": [], "header_packages": [], "next_boot": next_boot.get("kernel")}
    out.update(next_boot_ok=True, message="")
    if not plan.get("build_kernel_module"):
        return out
    dkms = plan.get("kernel_build") == "dkms"
    without = [k for k in state["kernels"] if section(k, "module").get("kind") == "none"]
    if dkms:
        out["build"] = [k["release"] for k in without if k.get("headers")]
        out["headers_missing"] = [k["release"] for k in without if not k.get("headers")]
        for release in out["headers_missing"]:
            out["header_packages"] += kernel_header_packages(family, release)
    if next_boot and not next_boot.get("has_module"):
        out["next_boot_ok"] = False
        out["message"] = _next_boot_message(plan, state, out, dkms)
    return out


def _next_boot_message(plan, state, guard, dkms):
    release = guard["next_boot"]
    head = f"next boot kernel {release} has no NVIDIA module"
    if dkms and release in guard["headers_missing"]:
        packages = " ".join(kernel_header_packages(plan.get("family") or state["family"], release))
        return f"{head}: its headers are missing (install {packages})"
    if dkms:
        return f"{head}: DKMS has not built it"
    running = state["kernel_release"]
    named = " ".join(p.replace(running, release) for p in plan.get("kernel_packages") or () if running in p)
    return f"{head}: no precompiled module package for it" + (
        f" (install {named})" if running and named else ""
    )


def initramfs_rebuild(plan, facts, *, check_mode=False):
    """The initramfs images to rebuild after the role changed a file they carry (the nouveau blacklist, the
    hook that keeps nouveau out, the module options), from facts read after that change.

    Returns {commands: [argv, ...], kernels: [releases], current: [releases whose image is newer than every
    file it carries: the package install's own rebuild came after the role's files], reason}. Only images
    older than the newest such file (facts ``driver.kernels[].initramfs.stale``) are rebuilt, one command per
    kernel; facts without that field (an older nvidia_facts) get the plan's rebuild of every image. Check mode
    lists every image: the files it would write are newer than all of them. Nothing where the plan runs no
    rebuild (a container boots no initramfs).
    """
    plan = plan or {}
    out = {"commands": [], "kernels": [], "current": [], "reason": ""}
    if not section(plan, "initramfs").get("run"):
        out["reason"] = "no initramfs is rebuilt here (a container boots none)"
        return out
    state = host_state(facts)
    images = [k for k in state["kernels"] if section(k, "initramfs").get("path")]
    known = [k for k in state["kernels"] if isinstance(k.get("initramfs"), dict)]
    family = plan.get("family") or state["family"]
    if not known or family not in kb_packages.INITRAMFS_KERNEL_COMMANDS:
        out["commands"] = [
            list(section(plan, "initramfs").get("command") or kb_packages.INITRAMFS_COMMANDS[family])
        ]
        out["reason"] = "the facts do not say which images carry the new files: every image is rebuilt"
        return out
    stale = images if check_mode else [k for k in images if k["initramfs"].get("stale")]
    out["kernels"] = [k["release"] for k in stale]
    out["current"] = [k["release"] for k in images if k not in stale]
    form = kb_packages.INITRAMFS_KERNEL_COMMANDS[family]
    out["commands"] = [[part.format(release=release) for part in form] for release in out["kernels"]]
    if check_mode:
        out["reason"] = "check mode: the files would be newer than every image"
    elif stale:
        older = sorted({k["initramfs"].get("older_than") or "?" for k in stale})
        out["reason"] = f"older than {', '.join(older)}: {', '.join(out['kernels'])}"
    else:
        out["reason"] = "every image is newer than the files it carries (the package install rebuilt it)"
    return out


def hold_missing(plan, facts):
    """The plan's apt hold names that ``facts`` (dpkg's selections) do not show held yet.

    A run that changes nothing then holds nothing: one ``dpkg_selections`` call per name costs a module run
    each (seconds on a slow host), for a state the facts have already read.
    """
    held = set(host_state(facts)["held"])
    return [name for name in (plan or {}).get("hold_names") or [] if name not in held]


def off_branch(plan, facts):
    """The planned packages (``verify.packages``) that ``facts`` show installed at another branch than the
    plan's, as '<name> <version>': NVIDIA's repository only, where every driver package carries the driver's
    version. A branch change whose packages stayed where they were (dnf installs nothing for a name that is
    installed: an EL 9-shaped host, issue 38) fails verify instead of passing it."""
    plan = plan or {}
    if not plan.get("use_nvidia_repo"):
        return []
    verify = plan.get("verify") or {}
    names = verify.get("packages") or []
    wanted = {dnf_bare(p) for p in names} if plan.get("pkg_mgr") == "dnf" else set(names)
    branch = str(verify.get("branch") or "")
    out = []
    for package in host_state(facts)["packages"]:
        upstream = re.sub(r"^[0-9]+:", "", str(package.get("version") or "")).split("-")[0]
        if package["name"] in wanted and upstream.split(".")[0] != branch:
            out.append(f"{package['name']} {package.get('version')}")
    return out


def versionlock_missing(plan, facts):
    """The plan's versionlock names (dnf) that no held package of ``facts`` covers yet."""
    held = set(host_state(facts)["held"])
    return [name for name in (plan or {}).get("versionlock_names") or [] if name not in held]
