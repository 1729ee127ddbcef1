"""The VM guests' base disk: a Debian root filesystem on a GPT disk that boots through UEFI + GRUB.

Built without loop devices or mounts: mmdebstrap writes the root filesystem into a directory,
``mkfs.ext4 -E offset=... -d DIR`` writes it into the root partition of a sparse raw image, mtools
writes the EFI system partition (a standalone GRUB EFI binary whose embedded config boots
``/vmlinuz`` and ``/initrd.img`` of the root filesystem), and the GPT is written here.  The Secure Boot
variant boots Debian's signed chain instead: shim (signed by Microsoft's UEFI CA), then Debian's signed
GRUB, which reads the same config from the ESP and, in lockdown, boots only Debian's signed kernel.
The kernel and initramfs are the guest's own files: one installed or rebuilt in the guest is what the
next boot uses.

Each base disk has a recipe; its sha256 names the file (``.lab/vm/base/<dist>-<digest12>.raw``), so
a changed recipe gives a new base and an unchanged one is reused.
"""

import hashlib
import json
import os
import shlex
import shutil
import struct
import time
import uuid
import zlib
from dataclasses import dataclass, field

from lab import STATE, LabError, aptsources, engine, run_logged, unmount_below
from lab.images import DPKG_EXCLUDES

SECTOR = 512
MIB = 1 << 20
GPT_ENTRIES = 128
GPT_ENTRY_SIZE = 128
# LBA 0 protective MBR, LBA 1 header, LBA 2-33 the 128 entries (16 KiB); the same at the end, mirrored
GPT_RESERVED = 1 + (GPT_ENTRIES * GPT_ENTRY_SIZE) // SECTOR
ESP_TYPE = "c12a7328-f81f-11d2-ba4b-00a0c93ec93b"
ROOT_TYPE = "4f68bce3-e8cd-4c86-b1b6-b8f1d73cd8b4"  # Linux root (x86-64), discoverable partitions spec
DISK_GIB = 16
ESP_MIB = 64
DISTS = {"bookworm": "12", "trixie": "13"}
COMPONENTS = "main contrib non-free non-free-firmware"
PACKAGES = (
    "linux-image-amd64",
    "linux-headers-amd64",
    "initramfs-tools",
    "zstd",
    "kmod",
    "udev",
    "systemd",
    "systemd-sysv",
    "dbus",
    "openssh-server",
    "python3",
    "python3-apt",
    "sudo",
    "ca-certificates",
    "iproute2",
    "procps",
    "e2fsprogs",
)
# the Secure Boot base adds Debian's signed boot chain (whose .efi files go into its ESP) and mokutil
SECURE_BOOT_PACKAGES = ("shim-signed", "grub-efi-amd64-signed", "mokutil")
# on the ESP, from the root filesystem: shim as the removable-media path, GRUB and MokManager next to it
# (shim loads grubx64.efi from its own directory; without fbx64.efi there it boots GRUB directly)
SECURE_BOOT_EFI = (
    ("usr/lib/shim/shimx64.efi.signed", "BOOTX64.EFI"),
    ("usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed", "grubx64.efi"),
    ("usr/lib/shim/mmx64.efi.signed", "mmx64.efi"),
)
NETWORK_UNIT = "[Match]\nName=en* eth*\n\n[Network]\nDHCP=ipv4\n"
# QEMU's user-mode network: DNS at 10.0.2.3
RESOLV_CONF = "nameserver 10.0.2.3\n"


@dataclass(frozen=True)
class Layout:
    """Where the partitions of a disk of ``total`` sectors lie (first and last LBA, inclusive)."""

    total: int
    esp_first: int
    esp_last: int
    root_first: int
    root_last: int

    @property
    def root_offset(self):
        return self.root_first * SECTOR

    @property
    def root_bytes(self):
        return (self.root_last - self.root_first + 1) * SECTOR

    @property
    def esp_offset(self):
        return self.esp_first * SECTOR

    @property
    def esp_bytes(self):
        return (self.esp_last - self.esp_first + 1) * SECTOR


def layout(disk_bytes, esp_mib=ESP_MIB):
    """ESP at 1 MiB, the root partition after it up to the last MiB boundary before the backup GPT."""
    if disk_bytes % MIB or disk_bytes < (esp_mib + 4) * MIB:
        raise LabError(f"disk size {disk_bytes}: give whole MiB, at least {esp_mib + 4} MiB")
    total = disk_bytes // SECTOR
    align = MIB // SECTOR
    esp_first = align
    esp_last = esp_first + esp_mib * align - 1
    root_first = esp_last + 1
    last_usable = total - GPT_RESERVED - 1
    root_last = (last_usable + 1) // align * align - 1
    return Layout(total, esp_first, esp_last, root_first, root_last)


def _guid(text):
    return uuid.UUID(text).bytes_le


def _entry(type_guid, part_guid, first, last, name):
    return struct.pack(
        "<16s16sQQQ72s", _guid(type_guid), _guid(part_guid), first, last, 0, name.encode("utf-16-le")
    )


def _header(lay, disk_guid, entries_crc, backup):
    current, other = (lay.total - 1, 1) if backup else (1, lay.total - 1)
    entries_lba = lay.total - GPT_RESERVED if backup else 2
    fields = [b"EFI PART", 0x00010000, 92, 0, 0, current, other, GPT_RESERVED + 1]
    fields += [lay.total - GPT_RESERVED - 1, _guid(disk_guid), entries_lba, GPT_ENTRIES, GPT_ENTRY_SIZE]
    fmt = "<8sIIIIQQQQ16sQIII"
    header = struct.pack(fmt, *fields, entries_crc)
    crc = zlib.crc32(header)
    return struct.pack(fmt, *fields[:3], crc, *fields[4:], entries_crc)


def protective_mbr(total):
    entry = struct.pack("<B3sB3sII", 0, b"\x00\x02\x00", 0xEE, b"\xff\xff\xff", 1, min(total - 1, 0xFFFFFFFF))
    return bytes(446) + entry + bytes(48) + b"\x55\xaa"


def gpt(lay, guids):
    """The GPT as {byte offset: bytes}: protective MBR, primary and backup header and entries.

    guids: {"disk": ..., "esp": ..., "root": ...} (text UUIDs).
    """
    entries = _entry(ESP_TYPE, guids["esp"], lay.esp_first, lay.esp_last, "EFI system")
    entries += _entry(ROOT_TYPE, guids["root"], lay.root_first, lay.root_last, "root")
    entries = entries.ljust(GPT_ENTRIES * GPT_ENTRY_SIZE, b"\x00")
    crc = zlib.crc32(entries)
    backup_entries = (lay.total - GPT_RESERVED) * SECTOR
    return {
        0: protective_mbr(lay.total),
        SECTOR: _header(lay, guids["disk"], crc, backup=False).ljust(SECTOR, b"\x00"),
        2 * SECTOR: entries,
        backup_entries: entries,
        (lay.total - 1) * SECTOR: _header(lay, guids["disk"], crc, backup=True).ljust(SECTOR, b"\x00"),
    }


def grub_config(root_uuid):
    """The config embedded in the standalone GRUB (the Secure Boot base: ``/EFI/BOOT/grub.cfg``, which
    Debian's signed GRUB sources from its own directory): boot the root filesystem's own kernel and
    initramfs."""
    return "\n".join(
        [
            "serial --unit=0 --speed=115200",
            "terminal_input serial console",
            "terminal_output serial console",
            "set timeout=0",
            # a standalone GRUB loads partition maps and file systems only when told
            "insmod part_gpt",
            "insmod ext2",
            f"search --no-floppy --fs-uuid --set=root {root_uuid}",
            "echo 'gpufleet: booting /vmlinuz from the root filesystem'",
            f"linux /vmlinuz root=UUID={root_uuid} ro console=tty0 console=ttyS0,115200n8",
            "initrd /initrd.img",
            "boot",
            "",
        ]
    )


@dataclass(frozen=True)
class DiskRecipe:
    suite: str
    pubkey: str
    packages: tuple = PACKAGES
    disk_gib: int = DISK_GIB
    extra: tuple = field(default=())
    secure_boot: bool = False

    @property
    def name(self):
        return f"debian{DISTS[self.suite]}" + ("-sb" if self.secure_boot else "")

    def digest(self):
        """sha256 of everything that shapes the disk (not the mirror host)."""
        doc = {
            "suite": self.suite,
            "packages": sorted(self.packages),
            "components": COMPONENTS,
            "hooks": list(hooks(self)),
            "dpkg": list(DPKG_EXCLUDES),
            "disk_gib": self.disk_gib,
            "esp_mib": ESP_MIB,
            "grub": grub_config("UUID"),
            "extra": list(self.extra),
            "format": 1,
        }
        if self.secure_boot:  # only then, so that the other bases keep their digest
            doc["secure_boot"] = [list(pair) for pair in SECURE_BOOT_EFI]
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()

    def guids(self):
        """Disk, partition and filesystem UUIDs: fixed by the recipe (the GRUB config names the root's)."""
        digest = self.digest()
        ns = uuid.UUID("6f1c3f5e-4d0b-4a8e-9a55-0f0e7d1b2c3a")
        return {k: str(uuid.uuid5(ns, f"{digest}:{k}")) for k in ("disk", "esp", "root", "rootfs")}


def validate_dist(dist):
    if dist not in DISTS:
        raise LabError(f"--dist {dist!r}: choose from {', '.join(DISTS)}")
    return dist


def hooks(recipe):
    """mmdebstrap customize hooks: fstab, network, SSH key, serial console, quiet timers."""
    fstab = "UUID=@ROOTFS@ / ext4 errors=remount-ro 0 1\n"
    return (
        f'printf %s {shlex.quote(fstab)} > "$1/etc/fstab"',
        'echo gpufleet-vm > "$1/etc/hostname"',
        'printf "127.0.0.1 localhost\\n127.0.1.1 gpufleet-vm\\n" > "$1/etc/hosts"',
        'mkdir -p "$1/etc/systemd/network"',
        f'printf %s {shlex.quote(NETWORK_UNIT)} > "$1/etc/systemd/network/80-dhcp.network"',
        'chroot "$1" systemctl enable systemd-networkd.service',
        f'rm -f "$1/etc/resolv.conf"; printf %s {shlex.quote(RESOLV_CONF)} > "$1/etc/resolv.conf"',
        # periodic jobs would compete with the tests for the (emulated) CPUs
        'chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer',
        'mkdir -p -m 700 "$1/root/.ssh"',
        f'printf "%s\\n" {shlex.quote(recipe.pubkey)} > "$1/root/.ssh/authorized_keys"',
        'chmod 600 "$1/root/.ssh/authorized_keys"',
        # Desktop images carry nouveau in the initramfs (plymouth, a modules list): so does the lab's, and the
        # driver role must take it out. Built here at native speed with MODULES=most; rebuilds in the guest
        # use MODULES=list: nouveau and what mounts the root (virtio PCI and block, ext4). Under TCG one
        # update-initramfs took over 16 minutes with MODULES=most, 273 s with MODULES=dep (43 modules) and
        # 162 s with this list (28 modules, nouveau's dependencies among them), and the package install runs
        # two or three of them (lab/README.md, "The base disk's initramfs").
        'printf "%s\\n" nouveau virtio_pci virtio_blk ext4 >> "$1/etc/initramfs-tools/modules"',
        'chroot "$1" update-initramfs -u -k all',
        'printf "MODULES=list\\n" > "$1/etc/initramfs-tools/conf.d/gpufleet-lab.conf"',
        # each guest makes its own machine-id at first boot
        ': > "$1/etc/machine-id"',
        'rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb',
    )


def mmdebstrap_cmd(recipe, mirror, target):
    root_uuid = recipe.guids()["rootfs"]
    cmd = [
        "mmdebstrap",
        "--variant=minbase",
        "--mode=root",
        "--format=directory",
        "--aptopt=APT::Install-Recommends false",
        f"--include={','.join(recipe.packages)}",
    ]
    cmd += [f"--dpkgopt={opt}" for opt in DPKG_EXCLUDES]
    cmd += [f"--customize-hook={h.replace('@ROOTFS@', root_uuid)}" for h in hooks(recipe)]
    cmd += [recipe.suite, str(target)]
    cmd += [f"deb {mirror.archive} {recipe.suite} {COMPONENTS}"]
    cmd += [f"deb {mirror.archive} {recipe.suite}-updates {COMPONENTS}"]
    if mirror.security:
        cmd += [f"deb {mirror.security} {recipe.suite}-security {COMPONENTS}"]
    return cmd


def mkfs_cmd(lay, root_uuid, rootdir, image):
    return [
        "mkfs.ext4", "-F", "-q", "-L", "root", "-U", root_uuid,
        "-E", f"offset={lay.root_offset}", "-d", str(rootdir), str(image), f"{lay.root_bytes // 1024}k",
    ]  # fmt: skip


GRUB_EFI_MODULES = "/usr/lib/grub/x86_64-efi"
BASE_DIR = STATE / "vm" / "base"
BUILD_DIR = STATE / "vm" / "build"
TOOLS = {
    "mmdebstrap": ["mmdebstrap", "debian-archive-keyring"],
    "mkfs.ext4": ["e2fsprogs"],
    "mformat": ["mtools"],
    "grub-mkstandalone": ["grub-efi-amd64-bin", "grub-common"],
}


def base_path(recipe, base_dir=None):
    return (base_dir or BASE_DIR) / f"{recipe.name}-{recipe.digest()[:12]}.raw"


def ensure_file(path, packages, log=print):
    """Like engine.ensure_tool, for a file that is not a command (firmware, GRUB modules)."""
    if os.path.exists(path):
        return
    if os.geteuid() != 0 or not engine.is_debian_like(engine.os_release()):
        raise LabError(f"{path} missing: install {' '.join(packages)} (as root), then rerun", code=2)
    log(f"lab: installing {' '.join(packages)}")
    engine.apt_install(packages)
    if not os.path.exists(path):
        raise LabError(f"{path} still missing after installing {' '.join(packages)}", code=2)


def build(recipe, force=False, log=print):
    """The base disk of ``recipe``: reused when its file exists, else built (about 2 minutes)."""
    path = base_path(recipe)
    if path.exists() and not force:
        log(f"vm: base {path.name} up to date ({recipe.suite}, recipe {recipe.digest()[:12]})")
        return path
    for binary, packages in TOOLS.items():
        engine.ensure_tool(binary, packages, log)
    ensure_file(GRUB_EFI_MODULES, ["grub-efi-amd64-bin"], log)
    mirror = aptsources.debian_mirror(aptsources.read_sources())
    work = BUILD_DIR / recipe.name
    unmount_below(work)  # a build stopped midway (make test stops its background stages) left them mounted
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    logfile = BUILD_DIR / f"{recipe.name}.log"
    start = time.monotonic()
    log(f"vm: building base {path.name} ({recipe.suite}; log {logfile})")
    with open(logfile, "w", encoding="utf-8") as out:
        run_logged(mmdebstrap_cmd(recipe, mirror, work / "root"), out, logfile, "mmdebstrap")
        took = time.monotonic() - start
        log(f"vm: root filesystem in {took:.0f}s")
        part = path.with_name(path.name + ".part")
        write_disk(recipe, work, part, out, logfile)
    os.chmod(part, 0o444)
    os.replace(part, path)
    shutil.rmtree(work, ignore_errors=True)
    log(f"vm: built {path.name} in {time.monotonic() - start:.0f}s ({_allocated(path) / 1e6:.0f} MB used)")
    return path


def write_disk(recipe, work, image, out, logfile):
    """The sparse raw disk: GPT, the ESP (mtools) and the root filesystem (mkfs.ext4 -d)."""
    guids = recipe.guids()
    lay = layout(recipe.disk_gib << 30)
    if image.exists():
        os.chmod(image, 0o644)
        image.unlink()
    with open(image, "wb") as fh:
        fh.truncate(lay.total * SECTOR)
    cfg = work / "grub.cfg"
    cfg.write_text(grub_config(guids["rootfs"]), encoding="utf-8")
    esp = work / "esp.img"
    with open(esp, "wb") as fh:
        fh.truncate(lay.esp_bytes)
    run_logged(["mformat", "-i", str(esp), "-v", "EFI", "::"], out, logfile, "mformat")
    run_logged(["mmd", "-i", str(esp), "::/EFI", "::/EFI/BOOT"], out, logfile, "mmd")
    for src, name in esp_files(recipe, work, cfg, out, logfile):
        run_logged(["mcopy", "-i", str(esp), str(src), f"::/EFI/BOOT/{name}"], out, logfile, "mcopy")
    with open(image, "r+b") as fh:
        for offset, data in gpt(lay, guids).items():
            fh.seek(offset)
            fh.write(data)
        fh.seek(lay.esp_offset)
        with open(esp, "rb") as src:
            shutil.copyfileobj(src, fh, MIB)
    run_logged(mkfs_cmd(lay, guids["rootfs"], work / "root", image), out, logfile, "mkfs.ext4")


def esp_files(recipe, work, cfg, out, logfile):
    """(file, name in /EFI/BOOT) for the ESP: a standalone GRUB with ``cfg`` embedded, or for Secure Boot
    the signed shim, GRUB and MokManager from the root filesystem and ``cfg`` beside them."""
    if recipe.secure_boot:
        files = [(work / "root" / src, name) for src, name in SECURE_BOOT_EFI]
        for src, _ in files:
            if not src.is_file():
                raise LabError(f"{src} missing from the root filesystem: its package did not install it")
        return [*files, (cfg, "grub.cfg")]
    efi = work / "BOOTX64.EFI"
    run_logged(
        ["grub-mkstandalone", "-O", "x86_64-efi", "-o", str(efi), f"boot/grub/grub.cfg={cfg}"],
        out,
        logfile,
        "grub-mkstandalone",
    )
    return [(efi, "BOOTX64.EFI")]


def _allocated(path):
    return os.stat(path).st_blocks * 512


def prune(keep, base_dir=None, log=print):
    """Remove base disks no guest uses and that are not ``keep`` (a set of paths)."""
    base_dir = base_dir or BASE_DIR
    for path in sorted(base_dir.glob("*.raw")):
        if path not in keep:
            path.unlink()
            log(f"vm: removed unused base {path.name}")
