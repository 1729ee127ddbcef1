# Copyright: gpufleet contributors
# Apache-2.0
"""The NVIDIA driver: version and flavor (/proc/driver/nvidia), loaded modules, how it was installed,
CUDA driver API version (cuDriverGetVersion via ctypes), Secure Boot (efivars)."""

from __future__ import annotations

import ctypes
import re

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import host as probe_host
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import UNKNOWN, run_isolated

PROC_VERSION = "/proc/driver/nvidia/version"
SECURE_BOOT_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
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
        "kernel_module": "open" if "Open Kernel Module" in first else "proprietary",
    }


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


def secure_boot(root):
    """(state, reason)."""
    if not root.isdir("/sys/firmware/efi"):
        return UNKNOWN, "no EFI variables (legacy BIOS boot or not exposed)"
    data, reason = root.read_bytes(SECURE_BOOT_VAR, limit=64)
    if data is None:
        return UNKNOWN, reason if root.exists(SECURE_BOOT_VAR) else "no SecureBoot EFI variable"
    if len(data) < 5:
        return UNKNOWN, f"SecureBoot EFI variable is {len(data)} bytes long (expected 5)"
    return ("enabled" if data[4] == 1 else "disabled"), None


def find_driver_package(packages):
    candidates = sorted(
        (p for p in packages.all().values() if DRIVER_PACKAGE.match(p["name"])),
        key=lambda p: (p["name"].startswith("libnvidia-compute"), p["name"]),
    )
    return candidates[0] if candidates else None


def probe(root, live, packages, *, nvml, gpu_driver_info, host, timeout=10.0):
    """The `driver` fact. `nvml` is (cache path, real inner path, owning package) or None."""
    driver = {
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
        "reasons": {},
    }
    reasons = driver["reasons"]
    proc_text, proc_reason = (None, None)
    if root.exists(PROC_VERSION):
        proc_text, proc_reason = root.read_text(PROC_VERSION, limit=65536)
    parsed = parse_proc_version(proc_text)
    if proc_text is not None and parsed is None:
        proc_reason = f"unrecognized content in {PROC_VERSION}"
    modules_text, modules_reason = root.read_text("/proc/modules", limit=4 * 1024 * 1024)
    if modules_text is not None:
        modules = parse_modules(modules_text)
        driver["loaded"] = "nvidia" in modules or parsed is not None
        driver["nouveau_loaded"] = "nouveau" in modules
    else:
        if parsed is not None:
            driver["loaded"] = True
        else:
            reasons["loaded"] = modules_reason or "no /proc/modules under root"
        reasons["nouveau_loaded"] = modules_reason or "no /proc/modules under root"

    package = find_driver_package(packages)
    if parsed:
        driver["version"] = parsed["version"]
        driver["kernel_module"] = parsed["kernel_module"]
    elif gpu_driver_info.get("driver_version"):
        driver["version"] = gpu_driver_info["driver_version"]
    elif package:
        driver["version"] = re.sub(r"^\d+:", "", package["version"]).split("-")[0]
    if driver["kernel_module"] == UNKNOWN and package:
        names = " ".join(p for p in packages.all() if p.startswith(("nvidia", "kmod-nvidia", "libnvidia")))
        driver["kernel_module"] = "open" if "-open" in names else "proprietary"
    if driver["kernel_module"] == UNKNOWN:
        reasons["kernel_module"] = proc_reason or "driver kernel module not loaded and no driver package"
    if driver["version"] == UNKNOWN:
        reasons["version"] = "; ".join(
            r
            for r in (
                proc_reason or f"{PROC_VERSION} absent",
                gpu_driver_info.get("reason"),
                "no driver package installed",
            )
            if r
        )
    else:
        driver["branch"] = driver["version"].split(".")[0]

    runfile = root.exists("/usr/bin/nvidia-uninstall") or root.exists("/usr/bin/nvidia-installer")
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

    if package and not managed:
        driver["install_method"] = "package"
        driver["package"] = packages.public(package)
    elif managed:
        driver["install_method"] = "host"
    elif runfile:
        driver["install_method"] = "runfile"
    elif nvml is None and parsed is None and package is None:
        driver["install_method"] = "none"
    else:
        reasons["install_method"] = evidence or "driver present but neither a package nor a runfile install"
    driver["installed"] = (
        driver["install_method"] in ("package", "host", "runfile") or parsed is not None or (nvml is not None)
    )

    if live and (nvml is not None or parsed is not None):
        value, reason = run_isolated(cuda_driver_version, timeout=timeout)
        if value is None and gpu_driver_info.get("cuda_driver_version_int"):
            value = gpu_driver_info["cuda_driver_version_int"]
        if isinstance(value, int):
            driver["cuda_driver_version_int"] = value
            driver["cuda_driver_version"] = format_cuda_int(value)
        else:
            reasons["cuda_driver_version"] = f"cuDriverGetVersion via libcuda.so.1: {reason}"
    elif not live:
        reasons["cuda_driver_version"] = "runtime probe skipped: root is not /"
    else:
        reasons["cuda_driver_version"] = "no NVIDIA driver found"

    driver["secure_boot"], reason = secure_boot(root)
    if reason:
        reasons["secure_boot"] = reason
    if driver["installed"] is False:
        for key in ("version", "kernel_module"):
            reasons[key] = "no NVIDIA driver found"
    return driver
