# Copyright: gpufleet contributors
# Apache-2.0
"""The NVIDIA driver: the loaded kernel module (/proc/driver/nvidia/version, /sys/module/nvidia), the module
the running kernel would load (modinfo), how it was installed (packages, runfile markers, host-managed),
CUDA driver API version (cuDriverGetVersion via ctypes), Secure Boot (read by probe/host.py)."""

from __future__ import annotations

import ctypes
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.driver import PROC_VERSION_OPEN_MARK
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import host as probe_host
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import (
    UNKNOWN,
    run_command,
    run_isolated,
    which,
)
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.host import secure_boot

__all__ = ["parse_proc_version", "probe", "read_loaded_module", "secure_boot"]

PROC_VERSION = "/proc/driver/nvidia/version"
SYS_MODULE_VERSION = "/sys/module/nvidia/version"
RUNFILE_MARKERS = ("/usr/bin/nvidia-uninstall", "/var/log/nvidia-installer.log")
RUNFILE_INSTALLER = "/usr/bin/nvidia-installer"
# modinfo -F license nvidia -> flavor (high: the open modules are "Dual MIT/GPL", the proprietary "NVIDIA";
# observed on the H200 host and in open-gpu-kernel-modules' kernel-open/nvidia/nv.c MODULE_LICENSE)
MODULE_LICENSES = {"Dual MIT/GPL": "open", "NVIDIA": "proprietary"}
NOT_LIVE = "runtime probe skipped: root is not /"
NO_DRIVER = "no NVIDIA driver found"
_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?$")
# Main driver packages, most specific first (deb and rpm names).
DRIVER_PACKAGE = re.compile(
    r"^(nvidia-driver-\d+(-server)?(-open)?|nvidia-open(-\d+)?|nvidia-driver(-cuda)?|cuda-drivers(-\d+)?|"
    r"kmod-nvidia-open-dkms|kmod-nvidia-latest-dkms|nvidia-kernel-open-dkms|nvidia-kernel-dkms|"
    r"nvidia-dkms-\d+(-open)?|nvidia-open-kmod|libnvidia-compute-\d+(-server)?)$"
)


def parse_proc_version(text):
    """{version, kernel_module} from /proc/driver/nvidia/version; None when not recognizable."""
    if not text:
        return None
    first = text.splitlines()[0] if text.splitlines() else ""
    match = re.search(r"Kernel Module(?:\s+for\s+\S+)?\s+(\d+\.\d+(?:\.\d+)?)", first)
    if not match:
        return None
    return {
        "version": match.group(1),
        "kernel_module": "open" if PROC_VERSION_OPEN_MARK in first else "proprietary",
    }


def read_loaded_module(root):
    """({version, kernel_module, source} or None, reason) of the loaded nvidia kernel module.

    /proc/driver/nvidia/version gives version and flavor; else /sys/module/nvidia/version gives the version
    only (kernel_module None). ``reason`` says why /proc/driver/nvidia/version did not answer (None when it
    did, or when it is simply absent and nothing else is loaded).
    """
    reason = None
    if root.exists(PROC_VERSION):
        text, reason = root.read_text(PROC_VERSION, limit=65536)
        parsed = parse_proc_version(text)
        if parsed:
            return dict(parsed, source=PROC_VERSION), None
        if text is not None:
            reason = f"unrecognized content in {PROC_VERSION}"
    if root.exists(SYS_MODULE_VERSION):
        text, _ = root.read_text(SYS_MODULE_VERSION, limit=4096)
        version = (text or "").strip()
        if _VERSION.match(version):
            return {"version": version, "kernel_module": None, "source": SYS_MODULE_VERSION}, reason
    return None, reason


def parse_modules(text):
    return {line.split()[0] for line in (text or "").splitlines() if line.strip()}


def cuda_driver_version(library="libcuda.so.1"):
    """cuDriverGetVersion() (call through run_isolated). Needs no GPU and no cuInit."""
    cuda = ctypes.CDLL(library)
    value = ctypes.c_int()
    rc = cuda.cuDriverGetVersion(ctypes.byref(value))
    if rc != 0:
        raise RuntimeError(f"cuDriverGetVersion returned {rc}")
    return value.value


def format_cuda_int(value):
    """13000 -> '13.0', 12080 -> '12.8'."""
    if not isinstance(value, int) or value <= 0:
        return UNKNOWN
    return f"{value // 1000}.{(value % 1000) // 10}"


def find_driver_package(packages):
    candidates = sorted(
        (p for p in packages.all().values() if DRIVER_PACKAGE.match(p["name"])),
        key=lambda p: (p["name"].startswith("libnvidia-compute"), p["name"]),
    )
    return candidates[0] if candidates else None


def flavor_from_license(text):
    """'Dual MIT/GPL' -> 'open', 'NVIDIA' -> 'proprietary', else None."""
    return MODULE_LICENSES.get((text or "").strip())


def _modinfo(modinfo, field, timeout):
    rc, out, _, reason = run_command([modinfo, "-F", field, "nvidia"], timeout=timeout)
    value = out.strip() if rc == 0 else ""
    return value or None, reason or (None if value else f"modinfo reports no {field} for nvidia")


def module_for_running_kernel(live, timeout=10.0):
    """({version, kernel_module}, reason): the nvidia.ko the running kernel would load next (modinfo)."""
    module = {"version": None, "kernel_module": None}
    if not live:
        return module, NOT_LIVE
    modinfo = which("modinfo")
    if modinfo is None:
        return module, "modinfo not found"
    module["version"], reason = _modinfo(modinfo, "version", timeout)
    if module["version"] is None:
        return module, reason
    license_text, reason = _modinfo(modinfo, "license", timeout)
    module["kernel_module"] = flavor_from_license(license_text)
    if module["kernel_module"] is None:
        return module, reason or f"modinfo: license {license_text!r} names no known flavor"
    return module, None


def empty_driver():
    return {
        "installed": None,
        "version": UNKNOWN,
        "branch": UNKNOWN,
        "kernel_module": UNKNOWN,
        "loaded": None,
        "nouveau_loaded": None,
        "install_method": UNKNOWN,
        "package": None,
        "cuda_driver_version": UNKNOWN,
        "cuda_driver_version_int": None,
        "secure_boot": UNKNOWN,
        "loaded_version": None,
        "loaded_kernel_module": None,
        "module_for_running_kernel": {"version": None, "kernel_module": None},
        "packages": [],
        "runfile_markers": [],
        "reasons": {},
    }


def _loaded_state(root, driver, loaded, proc_reason):
    """`loaded_*`, `loaded` and `nouveau_loaded` from the loaded module and /proc/modules."""
    reasons = driver["reasons"]
    if loaded:
        driver["loaded_version"], driver["loaded_kernel_module"] = loaded["version"], loaded["kernel_module"]
    else:
        reasons["loaded_version"] = proc_reason or (
            f"no nvidia kernel module loaded ({PROC_VERSION} and {SYS_MODULE_VERSION} absent)"
        )
    if driver["loaded_kernel_module"] is None:
        reasons["loaded_kernel_module"] = (
            f"{SYS_MODULE_VERSION} does not say the flavor ({proc_reason or PROC_VERSION + ' absent'})"
            if loaded
            else reasons["loaded_version"]
        )
    modules_text, modules_reason = root.read_text("/proc/modules", limit=4 * 1024 * 1024)
    if modules_text is not None:
        modules = parse_modules(modules_text)
        driver["loaded"] = "nvidia" in modules or loaded is not None
        driver["nouveau_loaded"] = "nouveau" in modules
        return
    if loaded is not None:
        driver["loaded"] = True
    else:
        reasons["loaded"] = modules_reason or "no /proc/modules under root"
    reasons["nouveau_loaded"] = modules_reason or "no /proc/modules under root"


def _version_and_flavor(driver, loaded, proc_reason, gpu_driver_info, packages):
    """`version`, `branch`, `kernel_module`: the loaded module, else NVML/nvidia-smi, else the package."""
    reasons = driver["reasons"]
    package = find_driver_package(packages)
    if loaded:
        driver["version"] = loaded["version"]
        driver["kernel_module"] = loaded["kernel_module"] or UNKNOWN
    elif gpu_driver_info.get("driver_version"):
        driver["version"] = gpu_driver_info["driver_version"]
    elif package:
        driver["version"] = re.sub(r"^\d+:", "", package["version"]).split("-")[0]
    if driver["kernel_module"] == UNKNOWN and package:
        names = " ".join(p for p in packages.all() if p.startswith(("nvidia", "kmod-nvidia", "libnvidia")))
        driver["kernel_module"] = "open" if "-open" in names else "proprietary"
    if driver["kernel_module"] == UNKNOWN:
        reasons["kernel_module"] = proc_reason or (
            reasons["loaded_kernel_module"]
            if loaded
            else "driver kernel module not loaded and no driver package"
        )
    if driver["version"] == UNKNOWN:
        found = (
            proc_reason or f"{PROC_VERSION} absent",
            gpu_driver_info.get("reason"),
            "no driver package installed",
        )
        reasons["version"] = "; ".join(r for r in found if r)
    else:
        driver["branch"] = driver["version"].split(".")[0]
    return package


def _host_managed(root, live, nvml, host):
    """Fill host.driver_managed_externally (the one definition: probe/host.py) from the NVML location."""
    managed, evidence = (None, "")
    if nvml is not None:
        path, real, owner = nvml
        readonly = live and probe_host.is_readonly(root.outer(real))
        managed, evidence = probe_host.driver_managed_externally(
            host.get("container"), path, real, owner, readonly=readonly
        )
    host["driver_managed_externally"] = managed
    host["driver_managed_externally_reason"] = evidence
    if managed is None and nvml is None:
        host["reasons"]["driver_managed_externally"] = evidence or "no NVIDIA driver user-space found"
    return managed, evidence


def _install_method(root, driver, packages, package, *, managed, evidence, nvml, loaded):
    driver["runfile_markers"] = [path for path in RUNFILE_MARKERS if root.exists(path)]
    runfile = root.exists(RUNFILE_MARKERS[0]) or root.exists(RUNFILE_INSTALLER)
    if package and not managed:
        driver["install_method"] = "package"
        driver["package"] = packages.public(package)
    elif managed:
        driver["install_method"] = "host"
    elif runfile:
        driver["install_method"] = "runfile"
    elif nvml is None and loaded is None and package is None:
        driver["install_method"] = "none"
    else:
        driver["reasons"]["install_method"] = (
            evidence or "driver present but neither a package nor a runfile install"
        )
    driver["installed"] = (
        driver["install_method"] in ("package", "host", "runfile") or loaded is not None or (nvml is not None)
    )


def _cuda_driver(driver, live, found, gpu_driver_info, timeout):
    reasons = driver["reasons"]
    if not live:
        reasons["cuda_driver_version"] = NOT_LIVE
        return
    if not found:
        reasons["cuda_driver_version"] = NO_DRIVER
        return
    value, reason = run_isolated(cuda_driver_version, timeout=timeout)
    if value is None and gpu_driver_info.get("cuda_driver_version_int"):
        value = gpu_driver_info["cuda_driver_version_int"]
    if isinstance(value, int):
        driver["cuda_driver_version_int"] = value
        driver["cuda_driver_version"] = format_cuda_int(value)
    else:
        reasons["cuda_driver_version"] = f"cuDriverGetVersion via libcuda.so.1: {reason}"


def probe(root, live, packages, *, nvml, gpu_driver_info, host, timeout=10.0):
    """The `driver` fact. `nvml` is (cache path, real inner path, owning package) or None."""
    driver = empty_driver()
    reasons = driver["reasons"]
    loaded, proc_reason = read_loaded_module(root)
    _loaded_state(root, driver, loaded, proc_reason)
    package = _version_and_flavor(driver, loaded, proc_reason, gpu_driver_info, packages)
    managed, evidence = _host_managed(root, live, nvml, host)
    _install_method(
        root, driver, packages, package, managed=managed, evidence=evidence, nvml=nvml, loaded=loaded
    )
    _cuda_driver(driver, live, nvml is not None or loaded is not None, gpu_driver_info, timeout)
    driver["secure_boot"], reason = secure_boot(root)
    if reason:
        reasons["secure_boot"] = reason
    driver["module_for_running_kernel"], reason = module_for_running_kernel(live, timeout)
    if reason:
        reasons["module_for_running_kernel"] = reason
    driver["packages"] = packages.driver_packages()
    if driver["installed"] is False:
        for key in ("version", "kernel_module"):
            reasons[key] = NO_DRIVER
    return driver
