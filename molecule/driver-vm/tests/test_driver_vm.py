"""driver-vm scenario: what nvidia_driver left on a Debian guest that boots its own kernel (after the
converge with reboot policy never, the auto run that rebooted, and the idempotence run). driver-vm-kernel,
driver-vm-sb, driver-vm-debian13 and driver-vm-upgrade run them too."""

import re

PACKAGES = [
    "nvidia-kernel-dkms",
    "nvidia-smi",
    "libcuda1",
    "libnvidia-ml1",
    "nvidia-kernel-support",
    "firmware-nvidia-gsp",
    "nvidia-persistenced",
]


def _branch(host):
    """The guest's planned branch: its release's group_vars (debian12.yml 535, debian13.yml 550)."""
    return host.ansible.get_variables()["nvidia_driver_branch"]


def _kernel(host):
    return host.check_output("uname -r")


def _planned_version(host):
    """The driver version apt installed: nvidia-kernel-dkms's upstream version (535.309.01-0+deb12u1)."""
    version = host.package("nvidia-kernel-dkms").version
    return version.split(":")[-1].split("-")[0]


def _dkms_installed(status, version, kernel):
    line = rf"^nvidia-current/{re.escape(version)}, {re.escape(kernel)}, x86_64: installed"
    return re.search(line, status, re.M)


def test_packages_installed_and_held(host):
    held = host.check_output("apt-mark showhold").split()
    for name in PACKAGES:
        assert host.package(name).is_installed, name
        assert name in held, name
    assert _planned_version(host).startswith(_branch(host) + ".")


def test_dkms_built_and_installed_for_the_running_kernel(host):
    kernel, version = _kernel(host), _planned_version(host)
    status = host.check_output("dkms status")
    assert _dkms_installed(status, version, kernel), status


def test_modinfo_reports_the_planned_version(host):
    kernel, version = _kernel(host), _planned_version(host)
    path = host.check_output(f"modinfo -k {kernel} -F filename nvidia-current")
    # Debian 12's DKMS installs nvidia-current.ko, Debian 13's compresses it (nvidia-current.ko.xz)
    expected = rf"/lib/modules/{re.escape(kernel)}/updates/dkms/nvidia-current\.ko(\.xz|\.zst)?"
    assert re.fullmatch(expected, path), path
    assert host.file(path).is_file
    assert host.check_output(f"modinfo -k {kernel} -F version nvidia-current") == version


def test_every_installed_kernel_has_the_module_and_its_headers(host):
    """The kernel guard: every kernel in /boot has its headers and its DKMS module (in driver-vm-kernel, also
    the kernel update installed without headers, the next boot's)."""
    version = _planned_version(host)
    kernels = [p.split("vmlinuz-", 1)[1] for p in host.check_output("ls /boot/vmlinuz-*").split()]
    assert _kernel(host) in kernels, kernels
    status = host.check_output("dkms status")
    for kernel in kernels:
        assert host.package(f"linux-headers-{kernel}").is_installed, kernel
        assert _dkms_installed(status, version, kernel), status
        assert host.check_output(f"modinfo -k {kernel} -F version nvidia-current") == version


def test_nouveau_blacklisted_and_out_of_the_initramfs(host):
    kernel = _kernel(host)
    conf = host.file("/etc/modprobe.d/blacklist-nouveau-gpufleet.conf")
    assert conf.is_file and "blacklist nouveau" in conf.content_string
    listing = host.check_output(f"lsinitramfs /boot/initrd.img-{kernel}").splitlines()
    assert not [f for f in listing if re.search(r"/nouveau\.ko", f)], "nouveau.ko is still in the initramfs"
    assert "etc/modprobe.d/blacklist-nouveau-gpufleet.conf" in listing
    # the lab image asks for nouveau in the initramfs: the role's hook is what took it out
    assert "nouveau" in host.file("/etc/initramfs-tools/modules").content_string.split()
    assert host.file("/etc/initramfs-tools/hooks/gpufleet-omit-nouveau").mode == 0o755


def test_booted_the_rebuilt_initramfs_without_nouveau(host):
    """The auto run rebooted: this boot started after the initramfs was written, and nouveau is not loaded."""
    kernel = _kernel(host)
    btime = int(host.check_output("awk '/^btime/ {print $2}' /proc/stat"))
    assert int(host.check_output(f"stat -c %Y /boot/initrd.img-{kernel}")) < btime
    assert (
        host.check_output("cat /proc/sys/kernel/random/boot_id")
        != host.file("/var/tmp/lab-boot-id-before-role").content_string.strip()
    )
    assert not host.file("/sys/module/nouveau").exists
    assert not host.file("/sys/module/nvidia_current").exists and not host.file("/sys/module/nvidia").exists


def test_no_nvidia_gpu_so_the_module_cannot_load(host):
    """The health gate's 'not loadable: no NVIDIA GPU present' is true: modprobe fails with No such device."""
    res = host.run("modprobe nvidia-current")
    assert res.rc != 0
    assert "No such device" in res.stderr, res.stderr
