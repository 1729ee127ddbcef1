"""The nvidia_driver role's initramfs-tools hook takes nouveau out of the initramfs whatever put it there
(a modules list, plymouth), run as mkinitramfs runs hooks: `prereqs`, then with DESTDIR set."""

import subprocess
from pathlib import Path

import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan.driver.record import files as driver_files

ROLE = Path(__file__).resolve().parents[3] / "roles" / "nvidia_driver"


def _hook(tmp_path):
    osvars = yaml.safe_load((ROLE / "vars" / "Debian.yml").read_text())
    assert driver_files("debian")["initramfs"].startswith("/etc/initramfs-tools/hooks/")  # the plan's path
    assert osvars["__nvidia_driver_nouveau_initramfs_mode"] == "0755"
    hook = tmp_path / "gpufleet-omit-nouveau"
    hook.write_text(osvars["__nvidia_driver_nouveau_initramfs_content"])
    hook.chmod(0o755)
    return hook


def test_prereqs_answer_is_empty(tmp_path):
    res = subprocess.run([_hook(tmp_path), "prereqs"], capture_output=True, text=True, check=False)
    assert res.returncode == 0 and res.stdout.strip() == ""


def test_nouveau_is_deleted_and_every_other_module_kept(tmp_path):
    dest = tmp_path / "initramfs"
    drm = dest / "usr" / "lib" / "modules" / "6.1.0-57-amd64" / "kernel" / "drivers" / "gpu" / "drm"
    (drm / "nouveau").mkdir(parents=True)
    (drm / "nouveau" / "nouveau.ko").write_bytes(b"\x7fELF")
    (drm / "nouveau" / "nouveau.ko.xz").write_bytes(b"xz")
    (drm / "ttm.ko").write_bytes(b"\x7fELF")
    legacy = dest / "lib" / "modules" / "6.1.0-57-amd64"
    legacy.mkdir(parents=True)
    (legacy / "nouveau.ko.zst").write_bytes(b"zst")
    env = {"DESTDIR": str(dest), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([_hook(tmp_path)], env=env, capture_output=True, check=False)
    assert res.returncode == 0, res.stderr
    left = sorted(p.name for p in dest.rglob("*.ko*"))
    assert left == ["ttm.ko"]


def test_a_destdir_without_modules_is_fine(tmp_path):
    res = subprocess.run([_hook(tmp_path)], env={"DESTDIR": str(tmp_path / "empty")}, check=False)
    assert res.returncode == 0


def test_the_initramfs_file_gets_its_directory_first_on_every_family():
    """Issue 38: a minimal EL host has no /etc/dracut.conf.d until dracut is installed (the driver's packages
    pull it in after this file is written): the role makes the plan's initramfs_dir first, under the same
    conditions as the file."""
    for family in ("debian", "ubuntu", "rhel"):
        found = driver_files(family)
        assert found["initramfs_dir"] == str(Path(found["initramfs"]).parent)
    assert driver_files("rhel")["initramfs_dir"] == "/etc/dracut.conf.d"
    tasks = yaml.safe_load((ROLE / "tasks" / "modprobe.yml").read_text())
    names = [t["name"] for t in tasks]
    made = names.index("Configure | Initramfs configuration directory")
    written = names.index("Configure | Keep nouveau out of the initramfs")
    assert made < written
    assert tasks[made]["ansible.builtin.file"]["path"] == "{{ __nvidia_driver_plan.files.initramfs_dir }}"
    assert tasks[made]["when"] == tasks[written]["when"]
