"""The VM base disk's pure parts: GPT layout and bytes, recipe hash, build commands (no build here)."""

import struct
import subprocess
import uuid
import zlib

import pytest

import lab
from lab import LabError, aptsources, run_logged, unmount_below, vmdisk

GIB = 1 << 30


def _recipe(**kw):
    return vmdisk.DiskRecipe(**{"suite": "bookworm", "pubkey": "ssh-ed25519 AAAA lab", **kw})


def test_layout_of_16_gib():
    lay = vmdisk.layout(16 * GIB)
    assert lay.total == 16 * GIB // 512
    assert (lay.esp_first, lay.esp_last) == (2048, 2048 + 64 * 2048 - 1)
    assert lay.root_first == lay.esp_last + 1
    assert lay.root_offset == 65 * (1 << 20)
    # the root ends on a MiB boundary before the 33 sectors of the backup GPT
    assert (lay.root_last + 1) % 2048 == 0
    assert lay.root_last <= lay.total - 34
    assert lay.root_bytes == 16 * GIB - 66 * (1 << 20)
    assert lay.esp_bytes == 64 << 20


@pytest.mark.parametrize("size", [16 * GIB + 512, 10 << 20])
def test_layout_refuses_odd_sizes(size):
    with pytest.raises(LabError, match="disk size"):
        vmdisk.layout(size)


def _parse_header(raw):
    fields = struct.unpack("<8sIIIIQQQQ16sQIII", raw[:92])
    zeroed = raw[:16] + b"\0\0\0\0" + raw[20:92]
    return fields, zlib.crc32(zeroed)


def test_gpt_bytes_are_valid():
    lay = vmdisk.layout(GIB)
    guids = _recipe().guids()
    parts = vmdisk.gpt(lay, guids)
    mbr = parts[0]
    assert len(mbr) == 512 and mbr[510:] == b"\x55\xaa" and mbr[446 + 4] == 0xEE
    primary, crc = _parse_header(parts[512])
    assert primary[0] == b"EFI PART" and primary[3] == crc
    assert (primary[5], primary[6], primary[7], primary[8]) == (1, lay.total - 1, 34, lay.total - 34)
    assert uuid.UUID(bytes_le=primary[9]) == uuid.UUID(guids["disk"])
    entries = parts[1024]
    assert len(entries) == 128 * 128 and primary[10] == 2 and primary[13] == zlib.crc32(entries)
    backup, bcrc = _parse_header(parts[(lay.total - 1) * 512])
    assert backup[3] == bcrc and (backup[5], backup[6], backup[10]) == (lay.total - 1, 1, lay.total - 33)
    assert parts[(lay.total - 33) * 512] == entries
    esp = struct.unpack("<16s16sQQQ72s", entries[:128])
    root = struct.unpack("<16s16sQQQ72s", entries[128:256])
    assert uuid.UUID(bytes_le=esp[0]) == uuid.UUID(vmdisk.ESP_TYPE)
    assert (esp[2], esp[3]) == (lay.esp_first, lay.esp_last)
    assert uuid.UUID(bytes_le=root[0]) == uuid.UUID(vmdisk.ROOT_TYPE)
    assert (root[2], root[3]) == (lay.root_first, lay.root_last)
    assert root[5].decode("utf-16-le").rstrip("\0") == "root"
    assert entries[256:] == bytes(len(entries) - 256)


def test_digest_changes_with_what_shapes_the_disk():
    base = _recipe()
    assert base.digest() == _recipe().digest()
    others = [
        _recipe(suite="trixie"),
        _recipe(pubkey="ssh-ed25519 BBBB other"),
        _recipe(packages=(*vmdisk.PACKAGES, "dkms")),
        _recipe(disk_gib=32),
        _recipe(extra=("something",)),
    ]
    assert len({base.digest(), *(r.digest() for r in others)}) == len(others) + 1
    # package order does not matter
    assert _recipe(packages=tuple(reversed(vmdisk.PACKAGES))).digest() == base.digest()


def test_guids_follow_the_recipe(tmp_path):
    a, b = _recipe().guids(), _recipe(suite="trixie").guids()
    assert a == _recipe().guids()
    assert len(set(a.values())) == 4 and not set(a.values()) & set(b.values())
    assert vmdisk.base_path(_recipe(), tmp_path).name == f"debian12-{_recipe().digest()[:12]}.raw"
    assert vmdisk.base_path(_recipe(suite="trixie"), tmp_path).name.startswith("debian13-")


def test_mmdebstrap_command():
    recipe = _recipe()
    mirror = aptsources.DebianMirror("http://deb.example/debian", "http://deb.example/debian-security")
    cmd = vmdisk.mmdebstrap_cmd(recipe, mirror, "/x/root")
    assert cmd[:4] == ["mmdebstrap", "--variant=minbase", "--mode=root", "--format=directory"]
    include = next(c for c in cmd if c.startswith("--include="))
    for pkg in ("linux-image-amd64", "linux-headers-amd64", "systemd", "openssh-server", "python3"):
        assert pkg in include.split("=", 1)[1].split(",")
    assert cmd[-4:] == [
        "/x/root",
        "deb http://deb.example/debian bookworm main contrib non-free non-free-firmware",
        "deb http://deb.example/debian bookworm-updates main contrib non-free non-free-firmware",
        "deb http://deb.example/debian-security bookworm-security main contrib non-free non-free-firmware",
    ]
    hooks = [c for c in cmd if c.startswith("--customize-hook=")]
    fstab = next(h for h in hooks if "/etc/fstab" in h)
    assert f"UUID={recipe.guids()['rootfs']} / ext4" in fstab and "@ROOTFS@" not in fstab
    assert any("ssh-ed25519 AAAA lab" in h and "authorized_keys" in h for h in hooks)


def test_the_initramfs_carries_nouveau_and_guest_rebuilds_list_only_the_boot_modules(tmp_path):
    """The first image (native, MODULES=most) holds nouveau for the role to take out; rebuilds in the guest
    use MODULES=list with the modules that mount the root, set after that first build."""
    hooks = vmdisk.hooks(_recipe())
    build = next(i for i, h in enumerate(hooks) if "update-initramfs" in h)
    listed = next(i for i, h in enumerate(hooks) if "etc/initramfs-tools/modules" in h)
    conf = next(i for i, h in enumerate(hooks) if "gpufleet-lab.conf" in h)
    assert listed < build < conf
    assert "MODULES=list" in hooks[conf]
    root = tmp_path / "root"
    (root / "etc/initramfs-tools").mkdir(parents=True)
    subprocess.run(["sh", "-c", hooks[listed], "hook", str(root)], check=True)
    assert (root / "etc/initramfs-tools/modules").read_text().split() == [
        "nouveau", "virtio_pci", "virtio_blk", "ext4",
    ]  # fmt: skip


def test_mkfs_writes_into_the_root_partition():
    lay = vmdisk.layout(16 * GIB)
    cmd = vmdisk.mkfs_cmd(lay, "u-u-i-d", "/x/root", "/x/disk.raw")
    assert cmd[0] == "mkfs.ext4"
    assert cmd[cmd.index("-E") + 1] == f"offset={lay.root_offset}"
    assert cmd[cmd.index("-d") + 1] == "/x/root" and cmd[cmd.index("-U") + 1] == "u-u-i-d"
    assert cmd[-2:] == ["/x/disk.raw", f"{lay.root_bytes // 1024}k"]


def test_grub_boots_the_guests_own_kernel():
    cfg = vmdisk.grub_config("1234-abcd")
    assert "search --no-floppy --fs-uuid --set=root 1234-abcd" in cfg
    assert "linux /vmlinuz root=UUID=1234-abcd ro" in cfg and "console=ttyS0" in cfg
    assert "initrd /initrd.img" in cfg
    # a standalone GRUB finds no GPT partition (hence no root) without these (seen: "no such device")
    lines = cfg.splitlines()
    search = next(i for i, ln in enumerate(lines) if ln.startswith("search"))
    assert lines.index("insmod part_gpt") < search and lines.index("insmod ext2") < search


def test_missing_firmware_file_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(vmdisk.os, "geteuid", lambda: 1000)
    with pytest.raises(LabError, match=r"OVMF_CODE_4M.fd missing: install ovmf \(as root\)") as err:
        vmdisk.ensure_file(str(tmp_path / "OVMF_CODE_4M.fd"), ["ovmf"])
    assert err.value.code == 2
    vmdisk.ensure_file(str(tmp_path), ["never-installed"])


def test_unknown_dist():
    with pytest.raises(LabError, match=r"--dist 'sid': choose from bookworm, trixie"):
        vmdisk.validate_dist("sid")


def test_the_secure_boot_base_is_a_recipe_of_its_own():
    sb = _recipe(packages=vmdisk.PACKAGES + vmdisk.SECURE_BOOT_PACKAGES, secure_boot=True)
    assert sb.name == "debian12-sb"
    assert sb.digest() != _recipe(packages=sb.packages).digest()  # the ESP differs, not only the packages
    assert {"shim-signed", "grub-efi-amd64-signed", "mokutil"} <= set(sb.packages)


def test_the_secure_boot_esp_holds_shim_signed_grub_and_its_config(tmp_path):
    recipe = _recipe(secure_boot=True)
    cfg = tmp_path / "grub.cfg"
    cfg.write_text(vmdisk.grub_config("UUID"))
    for src, _ in vmdisk.SECURE_BOOT_EFI:
        (tmp_path / "root" / src).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "root" / src).write_bytes(b"MZ")
    files = vmdisk.esp_files(recipe, tmp_path, cfg, out=None, logfile=None)
    names = {name: src for src, name in files}
    # shim is what the firmware starts; it loads grubx64.efi from its own directory, which reads grub.cfg
    assert names["BOOTX64.EFI"] == tmp_path / "root/usr/lib/shim/shimx64.efi.signed"
    assert names["grubx64.efi"] == tmp_path / "root/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed"
    assert names["mmx64.efi"] == tmp_path / "root/usr/lib/shim/mmx64.efi.signed"
    assert names["grub.cfg"] == cfg
    (tmp_path / "root/usr/lib/shim/mmx64.efi.signed").unlink()
    with pytest.raises(LabError, match=r"mmx64\.efi\.signed missing from the root filesystem"):
        vmdisk.esp_files(recipe, tmp_path, cfg, out=None, logfile=None)


def test_a_logged_command_writes_its_line_and_output_and_a_failure_points_at_the_log(tmp_path):
    logfile = tmp_path / "build.log"
    with open(logfile, "w", encoding="utf-8") as out:
        run_logged(["sh", "-c", "echo made it"], out, logfile, "first")
        with pytest.raises(LabError, match=rf"^second failed \(exit 3\): see {logfile}$"):
            run_logged(["sh", "-c", "echo broke >&2; exit 3"], out, logfile, "second")
    assert logfile.read_text(encoding="utf-8").splitlines() == [
        "$ sh -c 'echo made it'",
        "made it",
        "$ sh -c 'echo broke >&2; exit 3'",
        "broke",
    ]


def test_unmount_below_takes_only_that_tree_deepest_first(tmp_path, monkeypatch):
    """What a stopped `lab vm build` left mounted in its mmdebstrap root (seen 2026-12-03: make test stopped
    its background stage, and proc, sys, dev/pts and dev/shm stayed mounted under .lab/vm/build)."""
    root = tmp_path / "build" / "debian12" / "root"
    mounts = tmp_path / "mounts"
    mounts.write_text(
        "\n".join(
            [
                "proc /proc proc rw 0 0",
                f"proc {root}/proc proc ro,relatime 0 0",
                f"none {root}/dev/pts devpts rw 0 0",
                f"tmpfs {root}/dev/shm tmpfs rw 0 0",
                f"sys {root}/sys sysfs ro 0 0",
                f"tmpfs {root}/odd\\040name tmpfs rw 0 0",
                f"proc {tmp_path}/build/debian12x/proc proc rw 0 0",
            ]
        )
        + "\n"
    )
    calls = []
    monkeypatch.setattr(lab.subprocess, "run", lambda argv, **kw: calls.append(argv))
    assert unmount_below(tmp_path / "build" / "debian12", mounts) == [
        f"{root}/dev/pts",
        f"{root}/dev/shm",
        f"{root}/odd name",
        f"{root}/proc",
        f"{root}/sys",
    ]
    assert calls[0] == ["umount", "-l", f"{root}/dev/pts"]
    assert len(calls) == 5
    assert unmount_below(tmp_path / "nosuch", tmp_path / "no-mounts-file") == []
