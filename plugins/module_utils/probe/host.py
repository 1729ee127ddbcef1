# Copyright: gpufleet contributors
# Apache-2.0
"""Host context: container, VM, and whether the NVIDIA driver is managed from outside this filesystem."""

from __future__ import annotations

import os

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import UNKNOWN

VM_DMI = (
    # (substring of sys_vendor/product_name lower-cased, name)
    ("firecracker", "firecracker"),
    ("amazon ec2", "amazon"),
    ("google compute engine", "google"),
    ("google", "google"),
    ("qemu", "qemu"),
    ("kvm", "kvm"),
    ("vmware", "vmware"),
    ("virtualbox", "other"),
    ("innotek", "other"),
    ("xen", "xen"),
    ("microsoft corporation", "hyperv"),
    ("openstack", "kvm"),
)


def detect_container(root, environ=None):
    """(name, reason)."""
    environ = os.environ if environ is None else environ
    if root.exists("/.dockerenv"):
        return "docker", None
    if root.exists("/run/.containerenv"):
        return "podman", None
    if "KUBERNETES_SERVICE_HOST" in environ and root.is_slash:
        return "kubernetes", None
    text, _ = root.read_text("/proc/1/environ", limit=65536)
    if text:
        for item in text.split("\0"):
            if item.startswith("container="):
                value = item.split("=", 1)[1].strip() or "other"
                return {
                    "lxc": "lxc",
                    "podman": "podman",
                    "docker": "docker",
                    "systemd-nspawn": "systemd-nspawn",
                }.get(value, "other"), None
    cgroup, reason = root.read_text("/proc/1/cgroup", limit=65536)
    if cgroup is None:
        return UNKNOWN, reason or "no /proc/1/cgroup under root"
    for marker, name in (
        ("kubepods", "kubernetes"),
        ("docker", "docker"),
        ("libpod", "podman"),
        ("containerd", "containerd"),
        ("lxc", "lxc"),
    ):
        if marker in cgroup:
            return name, None
    return "none", None


def detect_vm(root):
    """(name, reason)."""
    dmi = []
    for name in ("sys_vendor", "product_name", "bios_vendor"):
        text, _ = root.read_text("/sys/class/dmi/id/" + name, limit=4096)
        if text:
            dmi.append(text.strip().lower())
    joined = " ".join(dmi)
    for marker, name in VM_DMI:
        if marker in joined:
            if name == "hyperv" and "virtual" not in joined:
                continue
            return name, None
    cmdline, _ = root.read_text("/proc/cmdline", limit=65536)
    if cmdline and "virtio_mmio.device=" in cmdline and not dmi:
        return "firecracker", None  # Firecracker declares its virtio-mmio devices on the kernel command line
    cpuinfo, reason = root.read_text("/proc/cpuinfo", limit=4 * 1024 * 1024)
    if cpuinfo is None:
        return UNKNOWN, reason or "no /proc/cpuinfo under root"
    for line in cpuinfo.splitlines():
        if line.startswith(("flags", "Features")) and " hypervisor" in line:
            return "other", None
    return "none", None


def driver_managed_externally(container, nvml_path, nvml_real, packages_owning, *, readonly):
    """(bool|None, evidence) from where libnvidia-ml.so.1 lives and who owns it."""
    if nvml_path is None:
        return None, "no libnvidia-ml.so.1 in the loader cache: no driver user-space to judge"
    if packages_owning:
        return False, f"{nvml_real} is owned by package {packages_owning}"
    evidence = []
    if nvml_real.startswith("/usr/local/nvidia/"):
        evidence.append("under /usr/local/nvidia (container runtime / host driver mount)")
    if readonly:
        evidence.append("read-only mount")
    if container not in ("none", UNKNOWN):
        evidence.append(f"inside a {container} container")
    if evidence:
        return True, "libnvidia-ml.so.1 at {} ({}, no package owns it)".format(nvml_real, ", ".join(evidence))
    return False, f"libnvidia-ml.so.1 at {nvml_real} is not owned by a package (runfile or manual install)"


def is_readonly(path):
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def probe(root, live):
    host = {
        "container": UNKNOWN,
        "vm": UNKNOWN,
        "driver_managed_externally": None,
        "driver_managed_externally_reason": "",
        "reasons": {},
    }
    if live or root.exists("/proc/1") or root.exists("/.dockerenv"):
        host["container"], reason = detect_container(root)
        if reason:
            host["reasons"]["container"] = reason
    else:
        host["reasons"]["container"] = "runtime probe skipped: root is not / (no /proc under root)"
    if live or root.exists("/proc/cpuinfo") or root.exists("/sys/class/dmi"):
        host["vm"], reason = detect_vm(root)
        if reason:
            host["reasons"]["vm"] = reason
    else:
        host["reasons"]["vm"] = "runtime probe skipped: root is not / (no /proc or /sys under root)"
    return host
