# Copyright: gpufleet contributors
# Apache-2.0
"""The kernels installed under a root and the one the host boots next, and whether each has an NVIDIA
kernel module: DKMS built for it (``/var/lib/dkms/<module>/<version>/<release>``), a precompiled package
(Ubuntu's ``linux-modules-nvidia-<branch>-<flavour>`` names the kernel's release; RHEL's
``kmod-nvidia-<release>``), or an ``nvidia.ko`` in its module tree (``modules.dep``, the usual directories).

Read from files only: ``/boot/vmlinuz-*`` and ``/usr/lib/modules/*`` (``/lib/modules`` on an unmerged /usr),
GRUB's ``grubenv`` (``next_entry``, which ``grub-reboot``/``grub2-reboot`` set for the next boot only, then
``saved_entry``; on RHEL 8-10 an entry is grubby's BLS id, ``<machine-id>-<release>``, whose
``/boot/loader/entries/<id>.conf`` names the kernel on its ``linux`` line; Oracle Linux 8/9 "About the GRUB 2
Bootloader", high) and the ``/vmlinuz`` link. Without an entry that names a kernel, the next boot is the
kernel of the ``/vmlinuz`` link where Debian and Ubuntu keep one, else the newest installed kernel in
``sort -V`` order (what grub-mkconfig puts first on Debian, Ubuntu and what grubby makes the default on RHEL
after a kernel install).

What waits for a reboot (``boot_pending``): the boot time (``/proc/stat`` ``btime``, the kernel's "boot time,
in seconds since the Epoch", proc(5), high) against the modification times of the running kernel's
initramfs (``/boot/initrd.img-<release>``: initramfs-tools on Debian/Ubuntu;
``/boot/initramfs-<release>.img``: dracut on RHEL, high) and of its nvidia module file.

Whether each kernel's initramfs carries the current configuration (``kernels[].initramfs.stale``): its image
against the newest file the initramfs tools copy or obey (``/etc/modprobe.d``, which both copy into the
image; ``/etc/initramfs-tools`` with its hooks, ``modules`` and ``conf.d``: initramfs-tools(7) and
initramfs.conf(5); ``/etc/dracut.conf`` and ``/etc/dracut.conf.d``: dracut.conf(5); high). An image older
than one of them was built before that file changed: the next boot of that kernel does not see it.
"""

from __future__ import annotations

import re

MODULE_TREES = ("/usr/lib/modules", "/lib/modules")
BOOT = "/boot"
GRUBENV = ("/boot/grub/grubenv", "/boot/grub2/grubenv")
DEFAULT_LINKS = ("/vmlinuz", "/boot/vmlinuz")  # linux-update-symlinks (Debian, Ubuntu)
# Boot Loader Specification entries (RHEL 8-10, Fedora: grubby writes one per kernel, GRUB's blscfg reads
# them; `linux` is the kernel image's path on the partition the entries are on; high, the BLS text)
GRUBENV_KEYS = ("next_entry", "saved_entry")  # grub-reboot's one-time entry wins over the saved default
BLS_ENTRIES = "/boot/loader/entries"
_BLS_LINUX = re.compile(r"^linux\s+\S*?vmlinuz-(\S+)\s*$", re.MULTILINE)
MODULE_PATHS = (
    "updates/dkms/nvidia.ko",
    "updates/dkms/nvidia-current.ko",  # Debian's nvidia-kernel-dkms / nvidia-open-kernel-dkms
    "extra/nvidia.ko",
    "kernel/drivers/video/nvidia.ko",
    "updates/nvidia.ko",
    "video/nvidia.ko",
)
COMPRESSED = ("", ".xz", ".zst", ".gz")
PROC_STAT = "/proc/stat"
INITRAMFS = ("/boot/initrd.img-{release}", "/boot/initramfs-{release}.img")
# What the initramfs tools read when they build an image: (path, how deep to look under it; 0: the file).
INITRAMFS_INPUTS = (
    ("/etc/modprobe.d", 1),
    ("/etc/initramfs-tools", 3),
    ("/etc/dracut.conf", 0),
    ("/etc/dracut.conf.d", 1),
)
INITRAMFS_INPUTS_LIMIT = 2000  # files looked at, in all
_BTIME = re.compile(r"^btime\s+(\d+)\s*$", re.MULTILINE)
_MODULES_DEP_NVIDIA = re.compile(r"^(\S*/nvidia(?:-current)?\.ko(?:\.xz|\.zst|\.gz)?):", re.MULTILINE)
_PRECOMPILED = (
    re.compile(r"^linux-(?:modules|objects|signatures)-nvidia-(\d{3})(?:-server)?(?:-open)?-(.+)$"),
    re.compile(r"^kmod-nvidia(?:-open)?-(\d+\.\d+.*)$"),
)


def release_key(release):
    """A sort key of a kernel release as ``sort -V`` orders them (what grub-mkconfig and Debian's
    linux-update-symlinks use): runs of digits by value, the text between them by character
    ("6.8.0-51-generic" > "6.8.0-49-generic"; "6.1.0-57-cloud-amd64" > "6.1.0-57-amd64", as
    ``sort -V`` says)."""
    runs = re.findall(r"\d+|\D+", release)
    return tuple((1, int(run), "") if run.isdigit() else (0, 0, run) for run in runs)


def _module_tree(root):
    for tree in MODULE_TREES:
        if root.isdir(tree):
            return root.realpath(tree)[0]
    return None


def installed_kernels(root):
    """(releases sorted oldest first, module tree or None): kernels with a /boot/vmlinuz-<release>, or, where
    /boot holds none (an image, a container), the module trees."""
    tree = _module_tree(root)
    modules, _reason = root.listdir(tree) if tree else ([], None)
    boot, _reason = root.listdir(BOOT) if root.isdir(BOOT) else ([], None)
    releases = {n[len("vmlinuz-") :] for n in boot or () if n.startswith("vmlinuz-")}
    if not releases:
        releases = {
            m
            for m in modules or ()
            if root.isdir(f"{tree}/{m}/kernel") or root.exists(f"{tree}/{m}/modules.dep")
        }
    return sorted(releases, key=release_key), tree


def default_kernel(root, releases):
    """(release, why) of the kernel the bootloader starts next: GRUB's saved entry when it names one; else
    the kernel Debian's and Ubuntu's default-kernel link points to (``/vmlinuz``, ``/boot/vmlinuz``: kept on
    the newest kernel by linux-update-symlinks, and what a boot entry that boots the link starts); else the
    newest installed kernel."""
    for path in GRUBENV:
        text, _reason = root.read_text(path, limit=65536) if root.exists(path) else (None, None)
        for key in GRUBENV_KEYS:
            found = _grubenv_entry_kernel(root, releases, text, key)
            if found:
                return found[0], f"{path} {key}{found[1]}"
    for link in DEFAULT_LINKS:
        target = root.readlink(link) if root.islink(link) else None
        release = target.rsplit("/", 1)[-1][len("vmlinuz-") :] if target and "vmlinuz-" in target else None
        if release in releases:
            return release, f"the {link} link"
    return releases[-1], "the newest installed kernel (the bootloader's default entry)"


def _grubenv_entry_kernel(root, releases, text, key):
    """(release, detail) of the installed kernel that grubenv's ``key`` names (in its title or id, or
    through its BLS entry file), or None."""
    saved = re.search(rf"^{key}=(.*)$", text or "", re.MULTILINE)
    entry = saved.group(1).strip() if saved else ""
    if not entry:
        return None
    named = [r for r in releases if r in entry]
    if named:
        return max(named, key=len), ""
    release = _bls_entry_kernel(root, entry)
    return (release, f" ({BLS_ENTRIES}/{entry}.conf)") if release in releases else None


def _bls_entry_kernel(root, entry):
    """The kernel release of the BLS entry ``entry`` (its ``linux`` line), or None."""
    if "/" in entry or entry.startswith("."):
        return None
    path = f"{BLS_ENTRIES}/{entry}.conf"
    text, _reason = root.read_text(path, limit=65536) if root.exists(path) else (None, None)
    found = _BLS_LINUX.search(text or "")
    return found.group(1) if found else None


def _package_module(release, packages):
    for package in packages:
        for rx in _PRECOMPILED:
            match = rx.match(package.get("name", ""))
            if match and match.group(match.lastindex) in release:
                return {"kind": "package", "version": package.get("version"), "path": None,
                        "package": package.get("name")}  # fmt: skip
    return None


def _file_module(root, tree, release):
    dep, _reason = root.read_text(f"{tree}/{release}/modules.dep", limit=8 * 1024 * 1024)
    found = _MODULES_DEP_NVIDIA.search(dep or "")
    if found:
        return f"{tree}/{release}/{found.group(1)}"
    for rel in MODULE_PATHS:
        for suffix in COMPRESSED:
            if root.exists(f"{tree}/{release}/{rel}{suffix}"):
                return f"{tree}/{release}/{rel}{suffix}"
    return None


def nvidia_module(root, tree, release, *, dkms, packages):
    """{kind: dkms|package|file|none, version, path, package} of the nvidia module built for a kernel."""
    for trees in dkms:
        if trees.get("dkms_dir") and root.isdir(f"{trees['dkms_dir']}/{release}"):
            return {"kind": "dkms", "version": trees["version"], "path": f"{trees['dkms_dir']}/{release}",
                    "package": trees.get("owned_by")}  # fmt: skip
    found = _package_module(release, packages)
    if found:
        return found
    path = _file_module(root, tree, release) if tree else None
    if path:
        return {"kind": "file", "version": None, "path": path, "package": None}
    return {"kind": "none", "version": None, "path": None, "package": None}


def headers(root, tree, release):
    """True when the kernel's build tree (``<modules>/<release>/build``) exists: DKMS can build for it."""
    if not tree:
        return False
    real, reason = root.realpath(f"{tree}/{release}/build")
    return reason is None and root.isdir(real)


def boot_time(root):
    """(epoch seconds of this boot, reason): ``btime`` of /proc/stat."""
    text, reason = root.read_text(PROC_STAT, limit=1024 * 1024)
    if text is None:
        return None, reason
    found = _BTIME.search(text)
    return (int(found.group(1)), None) if found else (None, f"{PROC_STAT} has no btime line")


def _changed_after(root, path, since, reasons):
    when, reason = root.mtime(path)
    if reason:
        reasons.append(reason)
    return when is not None and when > since


def _running_module_file(root, tree, running, kernels):
    """The nvidia module file of the running kernel: its kernels entry's file, else modules.dep and the
    usual directories (a DKMS or package module is a file in the module tree too)."""
    entry = next((k for k in kernels if k["release"] == running), None)
    if entry and entry["module"]["kind"] == "file":
        return entry["module"]["path"]
    return _file_module(root, tree, running) if tree else None


def _initramfs_path(root, release):
    """(the kernel's initramfs image that exists, or None; the names looked for)."""
    names = [form.format(release=release) for form in INITRAMFS]
    return next((name for name in names if root.exists(name)), None), names


def pending(root, tree, running, kernels):
    """{boot_time, initramfs_changed, module_changed, reason}: whether the running kernel's initramfs and
    its nvidia module file changed after this boot (mtime later than btime); reason: why a value could not
    be told (None when everything was read)."""
    out = {"boot_time": None, "initramfs_changed": False, "module_changed": False, "reason": None}
    out["boot_time"], reason = boot_time(root)
    if out["boot_time"] is None or not running:
        out["reason"] = reason or "the running kernel release is unknown"
        return out
    reasons = []
    initramfs, names = _initramfs_path(root, running)
    if initramfs:
        out["initramfs_changed"] = _changed_after(root, initramfs, out["boot_time"], reasons)
    else:
        reasons.append(f"no initramfs of {running} ({' or '.join(names)})")
    module = _running_module_file(root, tree, running, kernels)
    if module:
        out["module_changed"] = _changed_after(root, module, out["boot_time"], reasons)
    else:
        reasons.append(f"no nvidia module file of {running}")
    out["reason"] = "; ".join(reasons) or None
    return out


def _input_files(root, path, depth, budget):
    """The files under ``path`` down to ``depth`` levels (the path itself when it is a file), at most
    ``budget[0]`` of them (it counts down)."""
    if not root.isdir(path):
        return [path] if depth == 0 and root.isfile(path) else []
    names, _reason = root.listdir(path) if depth > 0 else ([], None)
    files = []
    for name in names or ():
        if budget[0] <= 0:
            break
        child = f"{path}/{name}"
        if root.isdir(child):
            files += _input_files(root, child, depth - 1, budget)
        elif root.isfile(child):
            budget[0] -= 1
            files.append(child)
    return files


def initramfs_input(root):
    """(mtime, path) of the newest file the initramfs tools read (INITRAMFS_INPUTS), or (None, None)."""
    budget = [INITRAMFS_INPUTS_LIMIT]
    newest = (None, None)
    for path, depth in INITRAMFS_INPUTS:
        for name in _input_files(root, path, depth, budget):
            when, _reason = root.mtime(name)
            if when is not None and (newest[0] is None or when > newest[0]):
                newest = (when, name)
    return newest


def initramfs(root, release, newest_input):
    """{path, stale, older_than} of a kernel's initramfs: stale when the image is older than the newest file
    the initramfs tools read (older_than names it); path None when the kernel has no image."""
    path, _names = _initramfs_path(root, release)
    when, _reason = root.mtime(path) if path else (None, None)
    stale = when is not None and newest_input[0] is not None and when < newest_input[0]
    return {"path": path, "stale": stale, "older_than": newest_input[1] if stale else None}


def probe(root, *, running, dkms, packages):
    """({kernels: [{release, running, module, headers, initramfs}], next_boot: {...} | None,
    boot_pending: {...}}, reason)."""
    releases, tree = installed_kernels(root)
    newest_input = initramfs_input(root) if releases else (None, None)
    kernels = [
        {
            "release": release,
            "running": release == running,
            "module": nvidia_module(root, tree, release, dkms=dkms, packages=packages),
            "headers": headers(root, tree, release),
            "initramfs": initramfs(root, release, newest_input),
        }
        for release in releases
    ]
    boot_pending = pending(root, tree, running, kernels)
    if not kernels:
        empty = {"kernels": [], "next_boot": None, "boot_pending": boot_pending}
        return empty, "no installed kernel under root (/boot/vmlinuz-*, modules)"
    release, why = default_kernel(root, releases)
    kernel = next(k for k in kernels if k["release"] == release)
    next_boot = {"kernel": release, "why": why, "running": kernel["running"], "module": kernel["module"],
                 "has_module": kernel["module"]["kind"] != "none"}  # fmt: skip
    return {"kernels": kernels, "next_boot": next_boot, "boot_pending": boot_pending}, None
