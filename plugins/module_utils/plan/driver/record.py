# Copyright: gpufleet contributors
# Apache-2.0
"""What the nvidia_driver role owns on a host: its files, and its record of the driver packages it installed.

The record (kb/gpufleet.DRIVER_RECORD, read back by probe/packages.records into the facts'
``packages.records.nvidia_driver``) lists the driver packages gpufleet's installs added: those the facts show
after an install and did not show before it, plus those of the previous record still installed. A driver an
admin installed before gpufleet ran (NVIDIA's guide, the same packages) is not in it, so removal
(``nvidia_driver_state: absent``, plan/removal.py) never takes it. RHEL: the dnf module gpufleet installed and
the versionlock entries it added.

Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import gpufleet as kb_gpufleet
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.state import host_state, section

HEADER = (
    "# Managed by gpufleet (nvidia_driver): the driver packages its installs added; "
    "nvidia_driver_state: absent removes them"
)
# one token per value: a package name, the module's name, a versionlock pattern (probe/packages.RECORD_*)
TOKEN = re.compile(r"^[A-Za-z0-9*][A-Za-z0-9+._:~*/-]*\Z")
DNF_MODULE = "nvidia-driver"  # the module of NVIDIA's RHEL 8/9 streams (dnf module remove --all / reset)


def files(family):
    """The files the role writes on a host of ``family`` (debian, ubuntu, rhel) and their directories:
    {blacklist, modprobe, mok, nonfree_source, initramfs, record, modprobe_dir, mok_dir, record_dir,
    initramfs_dir} (a minimal EL image has no /etc/dracut.conf.d until dracut is installed: the role makes
    it)."""
    initramfs = kb_gpufleet.DRIVER_INITRAMFS_FILES.get(family, "")
    return {
        **kb_gpufleet.DRIVER_FILES,
        "initramfs": initramfs,
        "record": kb_gpufleet.DRIVER_RECORD,
        "modprobe_dir": kb_gpufleet.DRIVER_DIRS["modprobe"],
        "mok_dir": kb_gpufleet.DRIVER_DIRS["mok"],
        "record_dir": kb_gpufleet.RECORD_DIR,
        "initramfs_dir": initramfs.rsplit("/", 1)[0] if initramfs else "",
    }


def recorded(facts):
    """The facts' record of the driver ({packages, module, versionlock, path}), or None."""
    found = section(section(facts, "packages"), "records").get("nvidia_driver")
    return found if isinstance(found, dict) else None


def before(facts):
    """What the preflight's plan carries for the record: the previous record's packages, module and
    versionlock entries, and the driver packages installed before this run."""
    found = recorded(facts) or {}
    return {
        "previous": list(found.get("packages") or []),
        "module": found.get("module"),
        "versionlock": list(found.get("versionlock") or []),
        "before": sorted(p["name"] for p in host_state(facts)["packages"]),
    }


def render(packages, module=None, versionlock=()):
    """The record's text: the header, then ``package:``, ``module:`` and ``versionlock:`` lines (one token
    each; anything else is left out: a newline never adds a line)."""
    lines = [HEADER]
    lines += [f"package: {name}" for name in packages if TOKEN.match(name)]
    lines += [f"module: {module}"] if module and TOKEN.match(module) else []
    lines += [f"versionlock: {lock}" for lock in versionlock if TOKEN.match(lock)]
    return "\n".join(lines) + "\n"


def after_install(planned, facts_after):
    """The record after the install step, from the preflight's plan (``planned``: its ``record``, the dnf
    module and versionlocks) and the facts read after the install: {path, dir, content, write, packages}.
    ``write`` is false where nothing is gpufleet's (no package added, no previous record): no empty record is
    made on a host whose driver someone else installed."""
    planned = planned or {}
    rec = planned.get("record") or {}
    after = {p["name"] for p in host_state(facts_after)["packages"]}
    previous, earlier = set(rec.get("previous") or []), set(rec.get("before") or [])
    packages = sorted((previous & after) | (after - earlier))
    ours = bool(packages)
    module = rec.get("module") or (DNF_MODULE if ours and planned.get("dnf_module") else None)
    locks = rec.get("versionlock") or []
    if ours and not locks:
        locks = list(planned.get("versionlock_patterns") or []) + list(planned.get("versionlock_names") or [])
    return {
        "path": kb_gpufleet.DRIVER_RECORD,
        "dir": kb_gpufleet.RECORD_DIR,
        "content": render(packages, module, locks),
        "write": ours or bool(previous),
        "packages": packages,
    }
