"""probe_boot, the driver's runtime state (loaded vs user space, GSP firmware) and cuda-compat."""

import os

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import boot as probe_boot
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.facts import gather

from tests.data.consumers import roots
from tests.data.facts import fakeroot


@pytest.mark.parametrize(
    ("releases", "ordered"),
    [
        # by their numbers
        (
            ["6.8.0-100-generic", "6.8.0-51-generic", "6.8.0-9-generic", "6.12.1"],
            ["6.8.0-9-generic", "6.8.0-51-generic", "6.8.0-100-generic", "6.12.1"],
        ),
        # as `sort -V` does (grub-mkconfig's order, linux-update-symlinks'): the text between numbers counts
        (
            ["6.1.0-57-cloud-amd64", "6.1.0-57-amd64", "6.1.0-9", "6.1.0-57-rt-amd64"],
            ["6.1.0-9", "6.1.0-57-amd64", "6.1.0-57-cloud-amd64", "6.1.0-57-rt-amd64"],
        ),
    ],
)
def test_release_key_orders_kernels(releases, ordered):
    assert sorted(releases, key=probe_boot.release_key) == ordered


def test_the_vmlinuz_link_names_the_next_boot(tmp_path):
    """Debian's /vmlinuz link (linux-update-symlinks) wins over the newest kernel; a dangling one does not."""
    roots.bare_metal(tmp_path, running="6.1.0-57-amd64", newer="6.1.0-57-cloud-amd64")
    boot = gather(str(tmp_path), live=False)["driver"]["next_boot"]
    assert (boot["kernel"], boot["why"]) == (
        "6.1.0-57-cloud-amd64",
        "the newest installed kernel (the bootloader's default entry)",
    )
    os.symlink("boot/vmlinuz-6.1.0-57-amd64", tmp_path / "vmlinuz")
    boot = gather(str(tmp_path), live=False)["driver"]["next_boot"]
    assert (boot["kernel"], boot["why"], boot["has_module"]) == ("6.1.0-57-amd64", "the /vmlinuz link", True)
    os.remove(tmp_path / "vmlinuz")
    os.symlink("boot/vmlinuz-6.1.0-50-amd64", tmp_path / "vmlinuz")
    assert gather(str(tmp_path), live=False)["driver"]["next_boot"]["kernel"] == "6.1.0-57-cloud-amd64"


RHEL9 = ["5.14.0-427.13.1.el9_4.x86_64", "5.14.0-503.11.1.el9_5.x86_64"]
MACHINE_ID = "0f3c1e7a9b2d4c5e8f6a7b8c9d0e1f2a"


def _next_boot(tmp_path):
    root = Root(str(tmp_path))
    facts, reason = probe_boot.probe(root, running=RHEL9[1], dkms=[], packages=[])
    assert reason is None
    return facts["next_boot"]["kernel"], facts["next_boot"]["why"]


def test_grubbys_saved_entry_names_the_next_boot_on_rhel(tmp_path):
    """grubby --set-default on RHEL 8-10 writes saved_entry=<machine-id>-<release> into /boot/grub2/grubenv:
    an older kernel set as the default is the next boot, not the newest."""
    roots.kernels(tmp_path, RHEL9)
    assert _next_boot(tmp_path) == (RHEL9[1], "the newest installed kernel (the bootloader's default entry)")
    fakeroot.write(
        tmp_path, "/boot/grub2/grubenv", f"# GRUB Environment Block\nsaved_entry={MACHINE_ID}-{RHEL9[0]}\n"
    )
    assert _next_boot(tmp_path) == (RHEL9[0], "/boot/grub2/grubenv saved_entry")


def test_grub_reboots_one_time_entry_wins_over_the_saved_default(tmp_path):
    """grub2-reboot / grub-reboot set next_entry for the next boot only: that is the next boot."""
    roots.kernels(tmp_path, RHEL9)
    fakeroot.write(
        tmp_path,
        "/boot/grub2/grubenv",
        f"saved_entry={MACHINE_ID}-{RHEL9[1]}\nnext_entry={MACHINE_ID}-{RHEL9[0]}\n",
    )
    assert _next_boot(tmp_path) == (RHEL9[0], "/boot/grub2/grubenv next_entry")
    fakeroot.write(tmp_path, "/boot/grub2/grubenv", f"saved_entry={MACHINE_ID}-{RHEL9[1]}\nnext_entry=\n")
    assert _next_boot(tmp_path) == (RHEL9[1], "/boot/grub2/grubenv saved_entry")


def test_a_saved_bls_entry_without_the_release_in_its_id_is_read_for_its_kernel(tmp_path):
    """A BLS entry id of the admin's own (grub2-editenv - set saved_entry=rescue-test): its `linux` line names
    the kernel. An entry that names no installed kernel, or an id that is a path, leaves the default."""
    roots.kernels(tmp_path, RHEL9)
    fakeroot.write(tmp_path, "/boot/grub2/grubenv", "saved_entry=pinned\n")
    fakeroot.write(
        tmp_path,
        "/boot/loader/entries/pinned.conf",
        f"title Red Hat Enterprise Linux (pinned)\nversion {RHEL9[0]}\nlinux /vmlinuz-{RHEL9[0]}\n"
        f"initrd /initramfs-{RHEL9[0]}.img\noptions root=/dev/vda2\n",
    )
    assert _next_boot(tmp_path) == (
        RHEL9[0],
        "/boot/grub2/grubenv saved_entry (/boot/loader/entries/pinned.conf)",
    )
    fakeroot.write(tmp_path, "/boot/loader/entries/pinned.conf", "linux /vmlinuz-5.14.0-1.el9.x86_64\n")
    assert _next_boot(tmp_path)[0] == RHEL9[1]
    fakeroot.write(tmp_path, "/boot/grub2/grubenv", "saved_entry=../entries/pinned\n")
    assert _next_boot(tmp_path)[0] == RHEL9[1]


def test_the_running_kernel_with_dkms_and_a_newer_one_without(tmp_path):
    roots.bare_metal(tmp_path, newer="6.8.0-51-generic")
    driver = gather(str(tmp_path), live=False)["driver"]
    assert [(k["release"], k["running"], k["module"]["kind"], k["headers"]) for k in driver["kernels"]] == [
        ("6.8.0-49-generic", True, "dkms", True),
        ("6.8.0-51-generic", False, "none", False),
    ]
    assert driver["next_boot"]["kernel"] == "6.8.0-51-generic"
    assert driver["next_boot"]["has_module"] is False
    assert driver["versions"] == {"loaded": "580.95.05", "userspace": "580.126.09", "package": "580.126.09"}
    assert driver["version_mismatch"] is True
    assert driver["gsp_firmware"] == ["580.126.09"]
    assert driver["userspace"]["libnvidia-ml.so.1"]["real_path"] == (
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.126.09"
    )


def test_a_precompiled_package_and_a_module_in_modules_dep(tmp_path):
    root = Root(str(tmp_path))
    roots.kernels(tmp_path, ["6.8.0-51-generic", "6.8.0-52-generic"])
    fakeroot.write(
        tmp_path, "/usr/lib/modules/6.8.0-52-generic/modules.dep", "kernel/nvidia-580/nvidia.ko: x\n"
    )
    packages = [{"name": "linux-modules-nvidia-580-open-6.8.0-51-generic", "version": "6.8.0-51.52+1"}]
    facts, reason = probe_boot.probe(root, running="6.8.0-51-generic", dkms=[], packages=packages)
    assert reason is None
    modules = {k["release"]: k["module"] for k in facts["kernels"]}
    assert modules["6.8.0-51-generic"]["kind"] == "package"
    assert modules["6.8.0-51-generic"]["package"] == "linux-modules-nvidia-580-open-6.8.0-51-generic"
    assert modules["6.8.0-52-generic"] == {
        "kind": "file",
        "version": None,
        "path": "/usr/lib/modules/6.8.0-52-generic/kernel/nvidia-580/nvidia.ko",
        "package": None,
    }


def test_a_container_has_no_next_boot(tmp_path):
    fakeroot.h200(tmp_path)
    driver = gather(str(tmp_path), live=False)["driver"]
    assert driver["kernels"] == []
    assert driver["next_boot"] is None
    assert driver["reasons"]["next_boot"].startswith("no installed kernel under root")
    assert driver["version_mismatch"] is False  # 580.159.04 loaded, libnvidia-ml.so.580.159.04 mounted


def test_driver_without_a_versioned_user_space(tmp_path):
    roots.bare_metal(tmp_path)
    for name in ("libnvidia-ml.so", "libcuda.so"):
        fakeroot.link(tmp_path, f"/usr/lib/x86_64-linux-gnu/{name}.1", "/nowhere")
    driver = gather(str(tmp_path), live=False)["driver"]
    assert driver["version_mismatch"] is None
    assert driver["reasons"]["version_mismatch"] == (
        "no versioned libnvidia-ml/libcuda where the loader finds them "
        "(its cache, glibc's trusted directories)"
    )


def test_cuda_compat_directory_and_package(tmp_path):
    fakeroot.h200(tmp_path)
    roots.cuda_compat(tmp_path)
    (toolkit,) = gather(str(tmp_path), live=False)["cuda"]["toolkits"]
    assert toolkit["compat"] == {
        "path": "/usr/local/cuda-13.0/compat",
        "libcuda": "/usr/local/cuda-13.0/compat/libcuda.so.580.95.05",
        "libcuda_version": "580.95.05",
        "package": {
            "name": "cuda-compat-13-0",
            "version": "580.95.05-0ubuntu1",
            "held": False,
            "manager": "deb",
        },
    }


def test_no_compat_no_entry(tmp_path):
    fakeroot.tarball(tmp_path, "/usr/local/cuda-12.8", "9.1.0", lib_dir="lib64")
    fakeroot.write(tmp_path, "/usr/local/cuda-12.8/version.json", '{"cuda": {"version": "12.8.1"}}')
    (toolkit,) = gather(str(tmp_path), live=False)["cuda"]["toolkits"]
    assert toolkit["compat"] is None


# --------------------------------------------------------------------------- boot_pending (issue 18)
BTIME = 1764600000


def _boot(tmp_path, btime=BTIME):
    fakeroot.write(tmp_path, "/proc/stat", f"cpu  1 2 3\nintr 5\nctxt 7\nbtime {btime}\nprocesses 9\n")


def _touch(tmp_path, inner, when):
    os.utime(tmp_path / inner.lstrip("/"), (when, when))


def test_boot_pending_initramfs_and_dkms_module_changed_after_this_boot(tmp_path):
    roots.bare_metal(tmp_path)
    _boot(tmp_path)
    fakeroot.write(tmp_path, "/boot/initrd.img-6.8.0-49-generic", "initramfs")
    _touch(tmp_path, "/boot/initrd.img-6.8.0-49-generic", BTIME + 60)
    _touch(tmp_path, "/usr/lib/modules/6.8.0-49-generic/updates/dkms/nvidia.ko", BTIME - 60)
    pending = gather(str(tmp_path), live=False)["driver"]["boot_pending"]
    assert pending == {"boot_time": BTIME, "initramfs_changed": True, "module_changed": False, "reason": None}
    _touch(tmp_path, "/boot/initrd.img-6.8.0-49-generic", BTIME - 60)
    _touch(tmp_path, "/usr/lib/modules/6.8.0-49-generic/updates/dkms/nvidia.ko", BTIME + 1)
    pending = gather(str(tmp_path), live=False)["driver"]["boot_pending"]
    assert (pending["initramfs_changed"], pending["module_changed"]) == (False, True)


def test_boot_pending_rhel_initramfs_and_a_module_file_of_modules_dep(tmp_path):
    root = Root(str(tmp_path))
    roots.kernels(tmp_path, ["5.14.0-503.el9.x86_64"])
    fakeroot.write(tmp_path, "/usr/lib/modules/5.14.0-503.el9.x86_64/modules.dep", "extra/nvidia.ko.xz: x\n")
    fakeroot.write(tmp_path, "/usr/lib/modules/5.14.0-503.el9.x86_64/extra/nvidia.ko.xz", "ko")
    fakeroot.write(tmp_path, "/boot/initramfs-5.14.0-503.el9.x86_64.img", "initramfs")
    _boot(tmp_path)
    _touch(tmp_path, "/boot/initramfs-5.14.0-503.el9.x86_64.img", BTIME + 5)
    _touch(tmp_path, "/usr/lib/modules/5.14.0-503.el9.x86_64/extra/nvidia.ko.xz", BTIME + 5)
    facts, _reason = probe_boot.probe(root, running="5.14.0-503.el9.x86_64", dkms=[], packages=[])
    assert facts["boot_pending"] == {
        "boot_time": BTIME,
        "initramfs_changed": True,
        "module_changed": True,
        "reason": None,
    }


def test_boot_pending_without_btime_or_files_says_why(tmp_path):
    roots.kernels(tmp_path, ["6.8.0-49-generic"])
    root = Root(str(tmp_path))
    facts, _reason = probe_boot.probe(root, running="6.8.0-49-generic", dkms=[], packages=[])
    assert facts["boot_pending"]["boot_time"] is None
    assert facts["boot_pending"]["initramfs_changed"] is False
    assert facts["boot_pending"]["reason"].startswith("cannot read /proc/stat")
    _boot(tmp_path)
    facts, _reason = probe_boot.probe(root, running="6.8.0-49-generic", dkms=[], packages=[])
    assert facts["boot_pending"]["reason"] == (
        "no initramfs of 6.8.0-49-generic (/boot/initrd.img-6.8.0-49-generic or "
        "/boot/initramfs-6.8.0-49-generic.img); no nvidia module file of 6.8.0-49-generic"
    )
    fakeroot.write(tmp_path, "/proc/stat", "cpu 1 2 3\n")
    assert probe_boot.boot_time(root) == (None, "/proc/stat has no btime line")


def test_a_container_reports_boot_pending_too(tmp_path):
    fakeroot.h200(tmp_path)
    pending = gather(str(tmp_path), live=False)["driver"]["boot_pending"]
    assert set(pending) == {"boot_time", "initramfs_changed", "module_changed", "reason"}
    assert pending["initramfs_changed"] is False
    assert pending["module_changed"] is False


def test_root_mtime_follows_links_inside_the_root(tmp_path):
    fakeroot.write(tmp_path, "/boot/initrd.img-6.8.0-49-generic", "x")
    _touch(tmp_path, "/boot/initrd.img-6.8.0-49-generic", BTIME)
    fakeroot.link(tmp_path, "/boot/initrd.img", "/boot/initrd.img-6.8.0-49-generic")
    root = Root(str(tmp_path))
    assert root.mtime("/boot/initrd.img") == (BTIME, None)
    assert root.mtime("/boot/nope")[0] is None
    assert "cannot stat /boot/nope" in root.mtime("/boot/nope")[1]


# --------------------------------------------------------------------------- initramfs staleness (issue 18)
def test_initramfs_older_than_a_modprobe_file_is_stale_and_names_it(tmp_path):
    roots.kernels(tmp_path, ["6.1.0-57-amd64", "6.1.0-57-cloud-amd64"])
    fakeroot.write(tmp_path, "/boot/initrd.img-6.1.0-57-amd64", "initramfs")
    fakeroot.write(tmp_path, "/boot/initrd.img-6.1.0-57-cloud-amd64", "initramfs")
    fakeroot.write(tmp_path, "/etc/modprobe.d/blacklist-nouveau-gpufleet.conf", "blacklist nouveau\n")
    fakeroot.write(tmp_path, "/etc/initramfs-tools/hooks/gpufleet-omit-nouveau", "#!/bin/sh\n")
    _touch(tmp_path, "/etc/initramfs-tools/hooks/gpufleet-omit-nouveau", BTIME - 100)
    _touch(tmp_path, "/etc/modprobe.d/blacklist-nouveau-gpufleet.conf", BTIME)
    _touch(tmp_path, "/boot/initrd.img-6.1.0-57-amd64", BTIME - 10)
    _touch(tmp_path, "/boot/initrd.img-6.1.0-57-cloud-amd64", BTIME + 10)
    facts, _reason = probe_boot.probe(Root(str(tmp_path)), running="6.1.0-57-amd64", dkms=[], packages=[])
    by_release = {k["release"]: k["initramfs"] for k in facts["kernels"]}
    assert by_release["6.1.0-57-amd64"] == {
        "path": "/boot/initrd.img-6.1.0-57-amd64",
        "stale": True,
        "older_than": "/etc/modprobe.d/blacklist-nouveau-gpufleet.conf",
    }
    assert by_release["6.1.0-57-cloud-amd64"] == {
        "path": "/boot/initrd.img-6.1.0-57-cloud-amd64",
        "stale": False,
        "older_than": None,
    }
    # a hook under /etc/initramfs-tools/hooks counts as well
    _touch(tmp_path, "/etc/initramfs-tools/hooks/gpufleet-omit-nouveau", BTIME + 20)
    facts, _reason = probe_boot.probe(Root(str(tmp_path)), running="6.1.0-57-amd64", dkms=[], packages=[])
    assert [k["initramfs"]["older_than"] for k in facts["kernels"]] == [
        "/etc/initramfs-tools/hooks/gpufleet-omit-nouveau"
    ] * 2


def test_initramfs_dracut_conf_and_a_kernel_without_an_image(tmp_path):
    roots.kernels(tmp_path, ["5.14.0-503.el9.x86_64", "5.14.0-570.el9.x86_64"])
    fakeroot.write(tmp_path, "/boot/initramfs-5.14.0-570.el9.x86_64.img", "initramfs")
    fakeroot.write(tmp_path, "/etc/dracut.conf.d/gpufleet-omit-nouveau.conf", 'omit_drivers+=" nouveau "\n')
    _touch(tmp_path, "/boot/initramfs-5.14.0-570.el9.x86_64.img", BTIME)
    _touch(tmp_path, "/etc/dracut.conf.d/gpufleet-omit-nouveau.conf", BTIME + 1)
    root = Root(str(tmp_path))
    facts, _reason = probe_boot.probe(root, running="5.14.0-570.el9.x86_64", dkms=[], packages=[])
    assert [k["initramfs"] for k in facts["kernels"]] == [
        {"path": None, "stale": False, "older_than": None},
        {"path": "/boot/initramfs-5.14.0-570.el9.x86_64.img", "stale": True,
         "older_than": "/etc/dracut.conf.d/gpufleet-omit-nouveau.conf"},
    ]  # fmt: skip


def test_initramfs_without_any_input_file_is_current(tmp_path):
    roots.kernels(tmp_path, ["6.8.0-49-generic"])
    fakeroot.write(tmp_path, "/boot/initrd.img-6.8.0-49-generic", "initramfs")
    facts, _reason = probe_boot.probe(Root(str(tmp_path)), running="6.8.0-49-generic", dkms=[], packages=[])
    assert facts["kernels"][0]["initramfs"]["stale"] is False


def test_the_driver_user_space_outside_the_loader_cache_is_still_found(tmp_path):
    """glibc searches its trusted directories for a library its cache does not list (an ldconfig never run
    after a manual copy): the user-space version, and the mismatch with the loaded module, are still seen."""
    roots.bare_metal(tmp_path)
    fakeroot.ld_cache(tmp_path, [])
    driver = gather(str(tmp_path), live=False)["driver"]
    assert driver["versions"]["userspace"] == "580.126.09"
    assert driver["version_mismatch"] is True  # 580.95.05 loaded
    assert driver["userspace"]["libcuda.so.1"]["via"] == "default_dirs"
    assert driver["userspace"]["libcuda.so.1"]["path"] == "/lib/x86_64-linux-gnu/libcuda.so.1"
