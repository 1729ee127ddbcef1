# Copyright: gpufleet contributors
# Apache-2.0
"""What the driver plan reads of the facts (``ansible_facts.nvidia``, docs/facts.md), normalized.

Pure (no I/O), stdlib only, Python >= 3.9.
"""

from __future__ import annotations

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts


def section(facts, name):
    value = (facts or {}).get(name)
    return value if isinstance(value, dict) else {}


def _flavor_or_none(value):
    return value if value in ("open", "proprietary") else None


def host_state(facts):
    """The facts fields the plan uses, normalized (absent or unknown values become None/False/[])."""
    host, driver = section(facts, "host"), section(facts, "driver")
    os_info = section(host, "os")
    running = section(driver, "module_for_running_kernel")
    packages = [p for p in driver.get("packages") or [] if isinstance(p, dict) and p.get("name")]
    return {
        "os_key": os_info.get("key"),
        "distribution": os_info.get("distribution"),
        "os_version": os_info.get("version"),
        "debian_mirror": os_info.get("debian_mirror") or None,
        "kernel_release": host.get("kernel_release") or "",
        "container": host.get("container") not in (None, "none", "unknown"),
        "host_managed": host.get("driver_managed_externally") is True,
        "host_managed_reason": host.get("driver_managed_externally_reason") or "",
        "loaded_version": driver.get("loaded_version") or None,
        "loaded_flavor": _flavor_or_none(driver.get("loaded_kernel_module")),
        "installed_version": running.get("version") or None,
        "installed_flavor": _flavor_or_none(running.get("kernel_module")),
        "installed_reason": section(driver, "reasons").get("module_for_running_kernel") or "",
        "packages": packages,
        "held": sorted(p["name"] for p in packages if p.get("held")),
        "runfile_markers": list(driver.get("runfile_markers") or []),
        "runfile": driver.get("runfile") if isinstance(driver.get("runfile"), dict) else {},
        "dkms": [t for t in driver.get("dkms") or [] if isinstance(t, dict) and t.get("source_dir")],
        "family": kb_hosts.OS_TABLE.get(os_info.get("key") or "", {}).get("family"),
        "owned_by_package": driver.get("install_method") == "package",
        "secure_boot": driver.get("secure_boot") == "enabled",
        "mok_enrolled": driver.get("mok_enrolled") if isinstance(driver.get("mok_enrolled"), list) else None,
        "mok_enrolled_reason": section(driver, "reasons").get("mok_enrolled") or "",
        # {path: {exists, private_key, certificate, certificate_sha256}} of the MOK paths the facts read
        "mok_files": {p: f for p, f in section(driver, "mok_files").items() if isinstance(f, dict)},
        "nvswitch_count": int((facts or {}).get("nvswitch_count") or 0),
        "gpu_present": gpu_present(facts),
        "boot_pending": section(driver, "boot_pending"),
        "kernels": [k for k in driver.get("kernels") or [] if isinstance(k, dict) and k.get("release")],
        "next_boot": section(driver, "next_boot"),
    }


def gpu_present(facts):
    """The facts list at least one NVIDIA GPU (``gpus`` non-empty). Facts without a GPU list, or whose gpu
    probe was skipped or failed (``probes.gpu.state`` skipped/unknown), say nothing: taken as present (the
    checks that need a GPU then stay on)."""
    facts = facts or {}
    if facts.get("gpus"):
        return True
    state = section(section(facts, "probes"), "gpu").get("state")
    return "gpus" not in facts or state in ("skipped", "unknown")
