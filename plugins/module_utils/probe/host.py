# Copyright: gpufleet contributors
# Apache-2.0
"""Host context: OS, CPU architecture, kernel release, EFI and Secure Boot, container, VM, and whether the
NVIDIA driver is managed from outside this filesystem (the one definition of a host-managed driver)."""

from __future__ import annotations

import hashlib
import os
import platform

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import distributions as kb_distributions
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import hosts as kb_hosts
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import sources as probe_sources
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import UNKNOWN
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.ldcache import NVML_SONAME

OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")  # os-release(5): the second is the fallback
KERNEL_RELEASE = "/proc/sys/kernel/osrelease"
EFI_DIR = "/sys/firmware/efi"
SECURE_BOOT_VAR = EFI_DIR + "/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
# shim's MokListRT, what the kernel trusts for module signatures besides its own keys: the MOKvar
# configuration table (kernel 5.11+, shim 15.3+) or, before that, a runtime EFI variable (4 bytes of
# attributes, then the data). Both hold EFI_SIGNATURE_LISTs (UEFI 2.10, 32.4.1).
MOK_LIST_RT = (
    (EFI_DIR + "/mok-variables/MokListRT", 0),
    (EFI_DIR + "/efivars/MokListRT-605dab50-e046-4300-abb6-3dd810dd8b23", 4),
)
# EFI_CERT_X509_GUID a5c059a1-94e4-4aa7-87b5-ab155c2bf072, as stored (first three fields little-endian)
EFI_CERT_X509 = bytes.fromhex("a159c0a5e494a74a87b5ab155c2bf072")
MOK_READ = 256 * 1024
CONTAINER_FILES = (("/.dockerenv", "docker"), ("/run/.containerenv", "podman"))
CONTAINER_ENV = {"lxc": "lxc", "podman": "podman", "docker": "docker", "systemd-nspawn": "systemd-nspawn"}
CGROUP_MARKERS = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("libpod", "podman"),
    ("containerd", "containerd"),
    ("lxc", "lxc"),
)

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


def _container_from_environ(root):
    """The `container=` variable of PID 1 (systemd's convention), or None."""
    text, _reason = root.read_text("/proc/1/environ", limit=65536)
    for item in (text or "").split("\0"):
        if item.startswith("container="):
            value = item.split("=", 1)[1].strip() or "other"
            return CONTAINER_ENV.get(value, "other")
    return None


def detect_container(root, environ=None):
    """(name, reason)."""
    environ = os.environ if environ is None else environ
    for path, name in CONTAINER_FILES:
        if root.exists(path):
            return name, None
    if "KUBERNETES_SERVICE_HOST" in environ and root.is_slash:
        return "kubernetes", None
    name = _container_from_environ(root)
    if name:
        return name, None
    cgroup, reason = root.read_text("/proc/1/cgroup", limit=65536)
    if cgroup is None:
        return UNKNOWN, reason or "no /proc/1/cgroup under root"
    return next((name for marker, name in CGROUP_MARKERS if marker in cgroup), "none"), None


def detect_vm(root):
    """(name, reason)."""
    dmi = []
    for name in ("sys_vendor", "product_name", "bios_vendor"):
        text, _reason = root.read_text("/sys/class/dmi/id/" + name, limit=4096)
        if text:
            dmi.append(text.strip().lower())
    joined = " ".join(dmi)
    for marker, name in VM_DMI:
        if marker in joined:
            if name == "hyperv" and "virtual" not in joined:
                continue
            return name, None
    cmdline, _reason = root.read_text("/proc/cmdline", limit=65536)
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
        return None, f"no {NVML_SONAME} in the loader cache: no driver user-space to judge"
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
        return True, "{} at {} ({}, no package owns it)".format(NVML_SONAME, nvml_real, ", ".join(evidence))
    return False, f"{NVML_SONAME} at {nvml_real} is not owned by a package (runfile or manual install)"


def is_readonly(path):
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def parse_os_release(text):
    """{KEY: value} of an os-release file (quotes removed, comments and blank lines skipped)."""
    values = {}
    for line in (text or "").splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.strip().startswith("#"):
            values[key.strip()] = value.strip().strip("\"'")
    return values


def read_os(root):
    """({distribution, version, key}, reason) from <root>/etc/os-release (else usr/lib/os-release).

    ``distribution`` is Ansible's name (ubuntu -> Ubuntu, rhel -> RedHat, ol -> OracleLinux, ...),
    ``version`` the VERSION_ID, ``key`` kb/hosts.os_key() (None for an OS gpufleet does not support).
    """
    reasons = []
    for path in OS_RELEASE:
        text, reason = root.read_text(path, limit=65536) if root.exists(path) else (None, None)
        values = parse_os_release(text)
        if values.get("ID"):
            distribution = kb_distributions.ansible_name(values["ID"])
            version = values.get("VERSION_ID", "")
            return {
                "distribution": distribution,
                "version": version,
                "key": kb_hosts.os_key(distribution, version),
            }, None
        reasons.append(reason or (f"no ID in {path}" if text is not None else f"{path} does not exist"))
    return {"distribution": UNKNOWN, "version": UNKNOWN, "key": None}, "; ".join(reasons)


def debian_mirror(root):
    """The host's Debian mirror: the first http(s) URI of an enabled deb source whose path ends in /debian,
    else None; read by the one reader of the package sources (probe/sources.py)."""
    return probe_sources.debian_mirror(probe_sources.read_entries(root))


def kernel_release(root, live):
    """(release, reason): <root>/proc/sys/kernel/osrelease, else the running kernel's when live, else ""."""
    text, reason = root.read_text(KERNEL_RELEASE, limit=4096) if root.exists(KERNEL_RELEASE) else (None, None)
    if text and text.strip():
        return text.strip(), None
    if live:
        return os.uname().release, None
    return "", reason or f"{KERNEL_RELEASE} not present under root (and root is not /)"


# A tree's CPU architecture: the ELF header of its shell (e_machine at offset 18, in the byte order of
# EI_DATA at offset 5), named as `uname -m` names it. (e_machine, EI_DATA) -> machine.
SHELL = "/bin/sh"
ELF_MACHINES = {(62, 1): "x86_64", (183, 1): "aarch64", (21, 1): "ppc64le"}


def machine(root, live):
    """(machine, reason): the CPU architecture as `uname -m` says it (live), else from the ELF header of the
    tree's /bin/sh; (None, reason) when it cannot be told."""
    if live:
        value = platform.machine()
        return (value, None) if value else (None, "platform.machine() returned nothing")
    data, reason = root.read_bytes(SHELL, limit=20)
    if data is None:
        return None, reason
    if len(data) < 20 or not data.startswith(b"\x7fELF"):
        return None, f"{SHELL} is not an ELF file"
    e_machine = int.from_bytes(data[18:20], "little" if data[5] == 1 else "big")
    name = ELF_MACHINES.get((e_machine, data[5]))
    if name is None:
        named = ", ".join(sorted(ELF_MACHINES.values()))
        return None, f"{SHELL} is for ELF machine {e_machine}, not one of {named}"
    return name, None


# Jetson (Tegra SoC) systems: NVIDIA's L4T writes /etc/nv_tegra_release ("# R36 (release), REVISION: 4.3,
# ..."); the device tree names the SoC "nvidia,tegra234" (Orin), "nvidia,tegra194" (Xavier), ...
TEGRA_RELEASE = "/etc/nv_tegra_release"
DEVICE_TREE_COMPATIBLE = "/proc/device-tree/compatible"


def tegra(root):
    """The evidence (str) that this is a Jetson/Tegra system (L4T), else None."""
    if root.exists(TEGRA_RELEASE):
        text, _reason = root.read_text(TEGRA_RELEASE, limit=4096)
        first = next((line.strip() for line in (text or "").splitlines() if line.strip()), "")
        return f"{TEGRA_RELEASE} exists" + (f" ({first[:80]})" if first else "")
    data, _reason = root.read_bytes(DEVICE_TREE_COMPATIBLE, limit=4096)
    for entry in (data or b"").split(b"\0"):
        if entry.startswith(b"nvidia,tegra"):
            return f"{DEVICE_TREE_COMPATIBLE} names {entry.decode('ascii', 'replace')}"
    return None


def efi(root):
    """True when the system booted through EFI (the firmware exposes /sys/firmware/efi)."""
    return root.isdir(EFI_DIR)


def secure_boot(root):
    """(state, reason): "enabled"|"disabled"|"unknown" from the SecureBoot EFI variable."""
    if not efi(root):
        return UNKNOWN, "no EFI variables (legacy BIOS boot or not exposed)"
    data, reason = root.read_bytes(SECURE_BOOT_VAR, limit=64)
    if data is None:
        return UNKNOWN, reason if root.exists(SECURE_BOOT_VAR) else "no SecureBoot EFI variable"
    if len(data) < 5:
        return UNKNOWN, f"SecureBoot EFI variable is {len(data)} bytes long (expected 5)"
    return ("enabled" if data[4] == 1 else "disabled"), None


def x509_in_signature_lists(data):
    """The DER X.509 certificates in a run of EFI_SIGNATURE_LISTs (type GUID, list size, header size,
    signature size, header, then entries of a 16-byte owner GUID and the data). Stops at the first
    malformed list: what came before it is kept."""
    found, offset = [], 0
    while offset + 28 <= len(data):
        kind = data[offset : offset + 16]
        size, header, entry = (
            int.from_bytes(data[offset + i : offset + i + 4], "little") for i in (16, 20, 24)
        )
        if size < 28 + header or entry <= 16 or offset + size > len(data) or (size - 28 - header) % entry:
            break
        if kind == EFI_CERT_X509:
            start = offset + 28 + header
            for at in range(start, offset + size, entry):
                found.append(bytes(data[at + 16 : at + entry]))
        offset += size
    return found


def mok_enrolled(root):
    """(sha256 hex of each X.509 certificate in shim's MokListRT, or None, reason). An empty list: shim
    exposed the list and it holds no certificate."""
    if not efi(root):
        return None, "no EFI variables (legacy BIOS boot or not exposed)"
    for path, skip in MOK_LIST_RT:
        if root.exists(path):
            data, reason = root.read_bytes(path, limit=MOK_READ)
            if data is None:
                return None, reason
            return [hashlib.sha256(cert).hexdigest() for cert in x509_in_signature_lists(data[skip:])], None
    return None, "no MokListRT (shim did not boot this kernel, or it exposes no MOK list)"


def empty_host():
    """The `host` fact before anything is probed."""
    return {
        "container": UNKNOWN,
        "vm": UNKNOWN,
        "driver_managed_externally": None,
        "driver_managed_externally_reason": "",
        "kernel_release": "",
        "machine": None,
        "tegra": None,
        "os": {"distribution": UNKNOWN, "version": UNKNOWN, "key": None, "debian_mirror": None},
        "efi": False,
        "reasons": {},
    }


def _probe_runtime(root, live, host):
    """Container and VM: they describe a running system (skipped for an image without /proc or /sys)."""
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


def probe(root, live):
    host = empty_host()
    _probe_runtime(root, live, host)
    host["os"], reason = read_os(root)
    if reason:
        host["reasons"]["os"] = reason
    host["os"]["debian_mirror"] = debian_mirror(root) if host["os"].get("distribution") == "Debian" else None
    host["kernel_release"], reason = kernel_release(root, live)
    if reason:
        host["reasons"]["kernel_release"] = reason
    host["machine"], reason = machine(root, live)
    if reason:
        host["reasons"]["machine"] = reason
    host["tegra"] = tegra(root)
    host["efi"] = efi(root)
    return host
