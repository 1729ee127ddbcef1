"""probe_driver: /proc/driver/nvidia/version (real H200), Secure Boot, install method."""

from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import driver as probe_driver
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import packages as probe_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.packages import Packages

from tests.data.facts import fakeroot

H200 = Path(__file__).resolve().parents[4] / "data" / "h200-ubuntu2404"
GUID = "8be4df61-93ca-11d2-aa0d-00e098032b8c"


def test_proc_version_open_of_the_h200():
    text = (H200 / "proc-driver-nvidia-version.txt").read_text()
    assert probe_driver.parse_proc_version(text) == {"version": "580.159.04", "kernel_module": "open"}


def test_proc_version_proprietary():
    text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024\n"
    assert probe_driver.parse_proc_version(text) == {"version": "550.127.05", "kernel_module": "proprietary"}
    assert probe_driver.parse_proc_version("garbage") is None


@pytest.mark.parametrize(
    ("data", "state"),
    [(b"\x06\x00\x00\x00\x01", "enabled"), (b"\x06\x00\x00\x00\x00", "disabled"), (b"\x06", "unknown")],
)
def test_secure_boot(tmp_path, data, state):
    fakeroot.write(tmp_path, "/sys/firmware/efi/efivars/SecureBoot-" + GUID, data)
    assert probe_driver.secure_boot(Root(str(tmp_path)))[0] == state


def test_no_efi(tmp_path):
    assert probe_driver.secure_boot(Root(str(tmp_path))) == (
        "unknown",
        "no EFI variables (legacy BIOS boot or not exposed)",
    )


def test_format_cuda_int():
    assert probe_driver.format_cuda_int(13000) == "13.0"
    assert probe_driver.format_cuda_int(12080) == "12.8"
    assert probe_driver.format_cuda_int(None) == "unknown"


def test_package_installed_driver(tmp_path):
    fakeroot.dpkg_db(
        tmp_path,
        [
            ("nvidia-driver-580-open", "580.95.05-0ubuntu1", "hold ok installed", "amd64"),
            ("libnvidia-compute-580", "580.95.05-0ubuntu1", "install ok installed", "amd64"),
            ("cuda-compat-13-0", "580.95.05-0ubuntu1", "install ok installed", "amd64"),
        ],
        {"libnvidia-compute-580": ["/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"]},
    )
    root = Root(str(tmp_path))
    packages = Packages(root)
    host = {"container": "none", "reasons": {}}
    nvml = (
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        "libnvidia-compute-580",
    )
    driver = probe_driver.probe(root, False, packages, nvml=nvml, gpu_driver_info={}, host=host)
    assert driver["install_method"] == "package"
    assert driver["package"] == {
        "name": "nvidia-driver-580-open",
        "version": "580.95.05-0ubuntu1",
        "held": True,
        "manager": "deb",
    }
    assert (driver["version"], driver["branch"], driver["kernel_module"]) == ("580.95.05", "580", "open")
    assert host["driver_managed_externally"] is False


def test_no_driver_at_all(tmp_path):
    root = Root(str(tmp_path))
    host = {"container": "none", "reasons": {}}
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host)
    assert (driver["installed"], driver["install_method"], driver["version"]) == (False, "none", "unknown")
    assert driver["reasons"]["version"] == "no NVIDIA driver found"


# ------------------------------------------------------------------ the loaded module (moved from plan/gpus)
def proc_version(root, text):
    fakeroot.write(root, "/proc/driver/nvidia/version", text)


def test_h200_fixture_driver(tmp_path):
    proc_version(tmp_path, (H200 / "proc-driver-nvidia-version.txt").read_text())
    assert probe_driver.read_loaded_module(Root(str(tmp_path))) == (
        {"version": "580.159.04", "kernel_module": "open", "source": "/proc/driver/nvidia/version"},
        None,
    )
    driver = probe_driver.probe(
        Root(str(tmp_path)),
        False,
        Packages(Root(str(tmp_path))),
        nvml=None,
        gpu_driver_info={},
        host=host_fact(),
    )
    assert (driver["loaded_version"], driver["loaded_kernel_module"], driver["branch"]) == (
        "580.159.04",
        "open",
        "580",
    )


def host_fact():
    return {"container": "none", "reasons": {}}


def test_proprietary_driver_and_sys_module_fallback(tmp_path):
    root = Root(str(tmp_path))
    proc_version(tmp_path, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.195.03  Release Build\n")
    assert probe_driver.read_loaded_module(root)[0]["kernel_module"] == "proprietary"
    proc_version(tmp_path, "garbage\n")
    fakeroot.write(tmp_path, "/sys/module/nvidia/version", "575.57.08\n")
    assert probe_driver.read_loaded_module(root) == (
        {"version": "575.57.08", "kernel_module": None, "source": "/sys/module/nvidia/version"},
        "unrecognized content in /proc/driver/nvidia/version",
    )
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host_fact())
    assert (driver["loaded_version"], driver["loaded_kernel_module"], driver["version"]) == (
        "575.57.08",
        None,
        "575.57.08",
    )
    assert driver["reasons"]["loaded_kernel_module"] == (
        "/sys/module/nvidia/version does not say the flavor "
        "(unrecognized content in /proc/driver/nvidia/version)"
    )


def test_no_driver_no_loaded_module(tmp_path):
    root = Root(str(tmp_path))
    assert probe_driver.read_loaded_module(root) == (None, None)
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host_fact())
    assert (driver["loaded_version"], driver["loaded_kernel_module"]) == (None, None)
    assert driver["reasons"]["loaded_version"] == (
        "no nvidia kernel module loaded (/proc/driver/nvidia/version and /sys/module/nvidia/version absent)"
    )
    assert driver["module_for_running_kernel"] == {"version": None, "kernel_module": None}
    assert driver["reasons"]["module_for_running_kernel"] == "runtime probe skipped: root is not /"
    assert (driver["packages"], driver["runfile_markers"]) == ([], [])


# ------------------------------------------------------------------ the module the running kernel would load
NOT_FOUND = "modinfo exited 1: modinfo: ERROR: Module {} not found."


def modinfo_of(modules):
    """A fake run_command: ``modules`` maps a module name to its `modinfo NAME` output, or to None for a
    `modinfo NAME` that times out; `modinfo -n NAME` answers the filename line. Records every call."""
    calls = []

    def run_command(argv, timeout=10.0, env=None):
        calls.append((argv, timeout))
        name = argv[-1]
        if name not in modules:
            return 1, "", "", NOT_FOUND.format(name)
        text = modules[name]
        if argv[1] == "-n":
            return 0, f"/lib/modules/6.1.0-57-amd64/updates/dkms/{name}.ko\n", "", None
        if text is None:
            return None, "", "", f"/usr/sbin/modinfo timed out after {timeout}s"
        return 0, text, "", None

    return run_command, calls


def modinfo_text(version, license_text):
    lines = [
        "filename:       /lib/modules/6.1.0-57-amd64/updates/dkms/nvidia.ko",
        "alias:          char-major-195-*",
    ]
    lines += [f"version:        {version}"] if version else []
    lines += [f"license:        {license_text}"] if license_text is not None else []
    lines += [
        "srcversion:     0123456789ABCDEF0123456",
        "vermagic:       6.1.0-57-amd64 SMP preempt mod_unload modversions",
        "sig_key:        01:02:03",
        "\t\tversion:0",
        "parm:           NVreg_OpenRmEnableUnsupportedGpus:int",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("license_text", "flavor"), [("Dual MIT/GPL", "open"), ("NVIDIA", "proprietary")])
def test_module_for_running_kernel(monkeypatch, license_text, flavor):
    run_command, calls = modinfo_of({"nvidia": modinfo_text("580.95.05", license_text)})
    monkeypatch.setattr(probe_driver, "which", lambda name, root=None: "/usr/sbin/modinfo")
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": "580.95.05", "kernel_module": flavor},
        None,
    )
    # the file name first (the module index only), then every field in one run, which decompresses the
    # module once, under its own longer timeout
    assert calls == [
        (["/usr/sbin/modinfo", "-n", "nvidia"], 10.0),
        (["/usr/sbin/modinfo", "nvidia"], probe_driver.MODINFO_TIMEOUT),
    ]


def test_parse_modinfo_takes_fields_not_continuation_lines():
    fields = probe_driver.parse_modinfo(modinfo_text("535.309.01", "NVIDIA"))
    assert (fields["version"], fields["license"], fields["srcversion"]) == (
        "535.309.01",
        "NVIDIA",
        "0123456789ABCDEF0123456",
    )
    assert "\t\tversion" not in fields and probe_driver.parse_modinfo("") == {}


def test_debian_nvidia_current_module_is_found(monkeypatch):
    """Debian's DKMS packages install nvidia-current.ko, which `modinfo nvidia` does not find (the lab's
    Debian 12 guest): the probe then asks for nvidia-current."""
    run_command, calls = modinfo_of({"nvidia-current": modinfo_text("535.309.01", "NVIDIA")})
    monkeypatch.setattr(probe_driver, "which", lambda name, root=None: "/usr/sbin/modinfo")
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": "535.309.01", "kernel_module": "proprietary"},
        None,
    )
    assert [argv for argv, _ in calls] == [
        ["/usr/sbin/modinfo", "-n", "nvidia"],
        ["/usr/sbin/modinfo", "-n", "nvidia-current"],
        ["/usr/sbin/modinfo", "nvidia-current"],
    ]


def test_a_modinfo_that_times_out_reading_the_module_is_the_reason(monkeypatch):
    """Debian 13's nvidia-current.ko.xz, decompressed by modinfo under software emulation, ran past the
    probe's 10 s twice in driver-vm-debian13 (2026-12-02, 2026-12-03). The file is found from the index
    at once; reading it gets MODINFO_TIMEOUT, and if even that runs out the reason says so, not the
    other name's "not found": the module is there."""
    run_command, calls = modinfo_of({"nvidia-current": None})
    monkeypatch.setattr(probe_driver, "which", lambda name, root=None: "/usr/sbin/modinfo")
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True, timeout=4.0) == (
        {"version": None, "kernel_module": None},
        f"/usr/sbin/modinfo timed out after {probe_driver.MODINFO_TIMEOUT}s",
    )
    assert calls[-1] == (["/usr/sbin/modinfo", "nvidia-current"], probe_driver.MODINFO_TIMEOUT)


def test_a_modinfo_that_times_out_finding_the_file_is_the_reason(monkeypatch):
    def run_command(argv, timeout=10.0, env=None):
        if argv[-1] == "nvidia":
            return 1, "", "", NOT_FOUND.format("nvidia")
        return None, "", "", f"/usr/sbin/modinfo timed out after {timeout}s"

    monkeypatch.setattr(probe_driver, "which", lambda name, root=None: "/usr/sbin/modinfo")
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True, timeout=4.0) == (
        {"version": None, "kernel_module": None},
        "/usr/sbin/modinfo timed out after 4.0s",
    )


def test_module_for_running_kernel_absent_or_odd(monkeypatch):
    monkeypatch.setattr(probe_driver, "which", lambda name, root=None: None)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": None, "kernel_module": None},
        "modinfo not found",
    )
    monkeypatch.setattr(probe_driver, "which", lambda name, root=None: "/usr/sbin/modinfo")
    run_command, _ = modinfo_of({})
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": None, "kernel_module": None},
        NOT_FOUND.format("nvidia"),
    )
    run_command, _ = modinfo_of({"nvidia": modinfo_text(None, "NVIDIA")})
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": None, "kernel_module": None},
        "modinfo reports no version for nvidia (/lib/modules/6.1.0-57-amd64/updates/dkms/nvidia.ko)",
    )
    run_command, _ = modinfo_of({"nvidia": modinfo_text("580.95.05", "GPL")})
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": "580.95.05", "kernel_module": None},
        "modinfo: license 'GPL' names no known flavor",
    )
    run_command, _ = modinfo_of({"nvidia": modinfo_text("580.95.05", None)})
    monkeypatch.setattr(probe_driver, "run_command", run_command)
    assert probe_driver.module_for_running_kernel(live=True) == (
        {"version": "580.95.05", "kernel_module": None},
        "modinfo reports no license for nvidia (/lib/modules/6.1.0-57-amd64/updates/dkms/nvidia.ko)",
    )


# ------------------------------------------------------------------ packages and runfile markers
def test_driver_packages_and_runfile_markers(tmp_path):
    fakeroot.dpkg_db(
        tmp_path,
        [
            ("nvidia-driver-580-open", "580.95.05-0ubuntu1", "hold ok installed", "amd64"),
            ("libnvidia-compute-580", "580.95.05-0ubuntu1", "install ok installed", "amd64"),
            ("linux-modules-nvidia-580-open-generic", "6.8.0-88.89", "install ok installed", "amd64"),
            ("nvidia-fabricmanager-580", "580.95.05-1", "install ok installed", "amd64"),
            ("datacenter-gpu-manager-4-core", "1:4.4.1-1", "install ok installed", "amd64"),
            ("firmware-nvidia-gsp", "580.95.05-1", "install ok installed", "amd64"),
            ("libcuda1", "580.95.05-1", "install ok installed", "amd64"),
            ("cuda-drivers-580", "580.95.05-1", "install ok installed", "amd64"),
            ("cuda-toolkit-13-0", "13.0.2-1", "install ok installed", "amd64"),  # not a driver package
            ("libcudnn9-cuda-13", "9.14.0.64-1", "install ok installed", "amd64"),  # neither
            ("nvidia-driver-570", "570.1-1", "deinstall ok config-files", "amd64"),  # removed
        ],
    )
    fakeroot.write(tmp_path, "/var/log/nvidia-installer.log", "old runfile install\n")
    root = Root(str(tmp_path))
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host_fact())
    assert [{k: p[k] for k in ("name", "version", "held")} for p in driver["packages"]] == [
        {"name": "cuda-drivers-580", "version": "580.95.05-1", "held": False},
        {"name": "datacenter-gpu-manager-4-core", "version": "1:4.4.1-1", "held": False},
        {"name": "firmware-nvidia-gsp", "version": "580.95.05-1", "held": False},
        {"name": "libcuda1", "version": "580.95.05-1", "held": False},
        {"name": "libnvidia-compute-580", "version": "580.95.05-0ubuntu1", "held": False},
        {"name": "linux-modules-nvidia-580-open-generic", "version": "6.8.0-88.89", "held": False},
        {"name": "nvidia-driver-580-open", "version": "580.95.05-0ubuntu1", "held": True},
        {"name": "nvidia-fabricmanager-580", "version": "580.95.05-1", "held": False},
    ]
    assert {p["manager"] for p in driver["packages"]} == {"deb"}
    origins = {p["name"]: p["origin"]["repository"] for p in driver["packages"]}
    assert origins["linux-modules-nvidia-580-open-generic"] == "ubuntu_archive"
    assert origins["nvidia-driver-580-open"] == origins["cuda-drivers-580"] == "nvidia_repo"
    assert driver["runfile_markers"] == ["/var/log/nvidia-installer.log"]
    assert driver["install_method"] == "package"  # a leftover installer log is not a runfile install
    fakeroot.write(tmp_path, "/usr/bin/nvidia-uninstall", "#!/bin/sh\n")
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host_fact())
    assert driver["runfile_markers"] == ["/usr/bin/nvidia-uninstall", "/var/log/nvidia-installer.log"]


def test_rpm_driver_packages_held_by_versionlock():
    qa = "kmod-nvidia-open-dkms\t3:580.95.05-1.el9\tx86_64\nnvidia-driver\t3:580.95.05-1.el9\tx86_64\n"
    locked = probe_packages.parse_versionlock("nvidia-driver-3:580.95.05-1.el9.*\n")
    db = probe_packages.parse_rpm_qa(qa, locked)
    fake = type("P", (), {"all": lambda self: db})()
    assert probe_packages.Packages.driver_packages(fake) == [
        {"name": "kmod-nvidia-open-dkms", "version": "3:580.95.05-1.el9", "held": False},
        {"name": "nvidia-driver", "version": "3:580.95.05-1.el9", "held": True},
    ]


# ------------------------------------------------------------------ what an install would meet (issue 12)
# nvidia-installer's log as its source writes it (NVIDIA/nvidia-installer 590.48.01: log.c log_init() header,
# install-from-cwd.c "Installing NVIDIA driver version" and the completion line, wrapped at 79 columns with
# the "-> " bullet's indent); the header and command line as in microsoft/pai#2040.
INSTALLER_LOG = """nvidia-installer log file '/var/log/nvidia-installer.log'
creation time: Mon Dec  1 08:00:00 2026
installer version: 570.86.10

PATH: /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

nvidia-installer command line:
    ./nvidia-installer
    --silent
    --dkms

Using built-in stream user interface
-> Detected 16 CPUs online; setting concurrency level to 16.
-> Installing NVIDIA driver version 570.86.10.
-> Kernel module compilation complete.
-> Installing DKMS kernel module:
-> Installation of the kernel module for the NVIDIA Accelerated Graphics Driver for Linux-x86_64 (version:
   570.86.10) is now complete.
"""


def test_installer_log_says_the_version_it_installed_and_whether_it_completed():
    assert probe_driver.parse_installer_log(INSTALLER_LOG) == {"version": "570.86.10", "completed": True}
    failed = (
        INSTALLER_LOG.split("-> Kernel module", maxsplit=1)[0]
        + "ERROR: Installation has failed.  Please see ...\n"
    )
    assert probe_driver.parse_installer_log(failed) == {"version": "570.86.10", "completed": False}
    header_only = INSTALLER_LOG.split("PATH:", maxsplit=1)[0]
    assert probe_driver.parse_installer_log(header_only) == {"version": "570.86.10", "completed": None}
    assert probe_driver.parse_installer_log("old runfile install\n") == {"version": None, "completed": None}


def runfile_root(tmp_path, uninstaller=True, log=INSTALLER_LOG):
    if uninstaller:
        fakeroot.write(tmp_path, "/usr/bin/nvidia-uninstall", "#!/bin/sh\n", mode=0o755)
    if log is not None:
        fakeroot.write(tmp_path, "/var/log/nvidia-installer.log", log)
    return Root(str(tmp_path))


def test_runfile_uninstaller_and_log(tmp_path):
    root = runfile_root(tmp_path)
    fakeroot.write(tmp_path, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.86.10", "ELF")
    nvml = (
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
        "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.570.86.10",
        None,
    )
    driver = probe_driver.probe(root, False, Packages(root), nvml=nvml, gpu_driver_info={}, host=host_fact())
    assert driver["install_method"] == "runfile"
    assert driver["runfile_markers"] == ["/usr/bin/nvidia-uninstall", "/var/log/nvidia-installer.log"]
    assert driver["runfile"] == {
        "uninstaller": "/usr/bin/nvidia-uninstall",
        "log": "/var/log/nvidia-installer.log",
        "version": "570.86.10",
        "completed": True,
    }


def dkms_tree(root, module, version, registered=True, source=True):
    if source:
        fakeroot.write(root, f"/usr/src/{module}-{version}/dkms.conf", f'PACKAGE_NAME="{module}"\n')
    if registered:
        fakeroot.link(root, f"/var/lib/dkms/{module}/{version}/source", f"/usr/src/{module}-{version}")
        fakeroot.write(root, f"/var/lib/dkms/{module}/{version}/6.8.0-45-generic/x86_64/log/make.log", "")


def test_dkms_trees_owned_and_unowned(tmp_path):
    fakeroot.dpkg_db(
        tmp_path,
        [
            ("nvidia-kernel-open-dkms", "580.95.05-0ubuntu1", "install ok installed", "amd64"),
            ("nvidia-open", "580.95.05-0ubuntu1", "install ok installed", "amd64"),
        ],
        {
            "nvidia-kernel-open-dkms": [
                "/usr/src",
                "/usr/src/nvidia-580.95.05",
                "/usr/src/nvidia-580.95.05/dkms.conf",
            ]
        },
    )
    dkms_tree(tmp_path, "nvidia", "580.95.05")  # the package's
    dkms_tree(tmp_path, "nvidia", "570.86.10")  # a runfile --dkms install left it
    dkms_tree(tmp_path, "nvidia-open", "575.57.08", source=False)  # registered, its sources gone
    dkms_tree(tmp_path, "nvidia-fs", "2.22.3")  # GPUDirect Storage: not the driver's module
    fakeroot.link(
        tmp_path, "/var/lib/dkms/nvidia/kernel-6.8.0-45-generic-x86_64", "570.86.10/6.8.0-45-generic/x86_64"
    )
    (tmp_path / "usr/src/linux-headers-6.8.0-45-generic").mkdir(parents=True)
    root = Root(str(tmp_path))
    assert probe_driver.dkms_trees(root, Packages(root)) == [
        {
            "module": "nvidia",
            "version": "570.86.10",
            "source_dir": "/usr/src/nvidia-570.86.10",
            "dkms_dir": "/var/lib/dkms/nvidia/570.86.10",
            "owned_by": None,
        },
        {
            "module": "nvidia",
            "version": "580.95.05",
            "source_dir": "/usr/src/nvidia-580.95.05",
            "dkms_dir": "/var/lib/dkms/nvidia/580.95.05",
            "owned_by": "nvidia-kernel-open-dkms",
        },
        {
            "module": "nvidia-open",
            "version": "575.57.08",
            "source_dir": "/usr/src/nvidia-open-575.57.08",
            "dkms_dir": "/var/lib/dkms/nvidia-open/575.57.08",
            "owned_by": None,
        },
    ]


def test_no_dkms_tree_reads_no_file_list(tmp_path, monkeypatch):
    fakeroot.dpkg_db(
        tmp_path, [("nvidia-dkms-580", "580.95.05-0ubuntu0.24.04.2", "install ok installed", "amd64")]
    )
    root = Root(str(tmp_path))
    packages = Packages(root)
    monkeypatch.setattr(packages, "files", lambda package: pytest.fail("a file list was read"))
    assert probe_driver.dkms_trees(root, packages) == []


@pytest.mark.parametrize(
    ("name", "version", "family", "repository", "confidence"),
    [
        # the Ubuntu archive's updates (noble-updates/security; NVIDIA/ansible-role-nvidia-driver#72)
        ("nvidia-driver-580", "580.95.05-0ubuntu0.24.04.2", "ubuntu", "ubuntu_archive", "high"),
        ("libnvidia-compute-515-server", "515.86.01-0ubuntu0.22.04.1", "ubuntu", "ubuntu_archive", "high"),
        ("linux-modules-nvidia-580-open-generic", "6.8.0-88.89", "ubuntu", "ubuntu_archive", "high"),
        # the graphics-drivers PPA (apt policy: 550.78-0ubuntu0~gpu24.04.1 from ppa.launchpadcontent.net)
        ("nvidia-driver-550", "550.78-0ubuntu0~gpu24.04.1", "ubuntu", "ubuntu_ppa", "high"),
        # NVIDIA's CUDA repository for Ubuntu: the H200's cuda-compat-13-0, NVIDIA/cuda-repo-management#19
        ("cuda-compat-13-0", "580.95.05-0ubuntu1", "ubuntu", "nvidia_repo", "medium"),
        ("libnvidia-compute-580", "580.159.03-1ubuntu1", "ubuntu", "nvidia_repo", "medium"),
        ("nvidia-fabricmanager-470", "470.239.06-1", "ubuntu", "nvidia_repo", "medium"),
        ("cuda-drivers-580", "580.95.05-1", "debian", "nvidia_repo", "medium"),
        # Debian's stable updates and backports
        ("nvidia-kernel-dkms", "535.216.01-1~deb12u1", "debian", "debian_archive", "high"),
        ("nvidia-open-kernel-dkms", "550.163.01-2~bpo12+1", "debian", "debian_archive", "high"),
        # "-N" on Debian: NVIDIA's Debian repository (550.54.15-1) or the Debian archive (535.261.03-1)
        ("libcuda1", "535.261.03-1", "debian", None, None),
        ("nvidia-driver-595", "595.58.03-1pop1~1778194999~22.04~98184da~dev", "ubuntu", "other", "high"),
    ],
)
def test_version_origin(name, version, family, repository, confidence):
    origin = probe_driver.version_origin(name, version, "deb", family)
    assert (origin["repository"], origin["confidence"]) == (repository, confidence), origin
    assert origin["evidence"]


def test_rpm_origins():
    assert probe_driver.version_origin("kmod-nvidia-open-dkms", "3:580.95.05-1.el9", "rpm")["repository"] == (
        "nvidia_repo"
    )
    assert (
        probe_driver.version_origin("kmod-nvidia", "580.95.05-1.el9_6.elrepo", "rpm")["repository"]
        == "elrepo"
    )
    assert probe_driver.version_origin("akmod-nvidia", "3:580.95.05-1.fc41", "rpm")["repository"] == "other"
    assert probe_driver.version_origin("nvidia-driver", "3:580.95.05-1.el9", "rpm")["repository"] is None


def test_the_h200s_real_nvidia_package_is_from_nvidias_repository():
    """tests/data/h200-ubuntu2404: cuda-compat-13-0 580.95.05-0ubuntu1 is from NVIDIA's ubuntu2404 repo."""
    rows = [line.split("\t") for line in (H200 / "dpkg-query-nvidia-cuda.tsv").read_text().splitlines()]
    (version,) = [row[1] for row in rows if row[0] == "cuda-compat-13-0"]
    assert (
        probe_driver.version_origin("cuda-compat-13-0", version, "deb", "ubuntu")["repository"]
        == "nvidia_repo"
    )


def debian12(tmp_path, packages):
    fakeroot.write(tmp_path, "/etc/os-release", 'ID=debian\nVERSION_ID="12"\nNAME="Debian GNU/Linux"\n')
    fakeroot.dpkg_db(tmp_path, [(n, v, "install ok installed", "amd64") for n, v in packages])
    return Root(str(tmp_path))


def origins_of(root):
    host = {"container": "none", "reasons": {}, "os": {"distribution": "Debian", "version": "12"}}
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host)
    return {p["name"]: p["origin"]["repository"] for p in driver["packages"]}, driver


def test_debian_minus_one_is_undecided_until_an_nvidia_only_package_or_an_apt_list_says(tmp_path):
    root = debian12(tmp_path, [("libcuda1", "580.95.05-1"), ("nvidia-kernel-dkms", "580.95.05-1")])
    origins, driver = origins_of(root)
    assert origins == {"libcuda1": None, "nvidia-kernel-dkms": None}
    assert driver["packages"][0]["origin"]["candidates"] == ["nvidia_repo", "debian_archive"]
    # NVIDIA's repository's list carries this exact stanza (apt names lists host_path_..._Packages)
    lists = "/var/lib/apt/lists/"
    nvidia = lists + "developer.download.nvidia.com_compute_cuda_repos_debian12_x86%5f64_Packages"
    fakeroot.write(
        tmp_path,
        nvidia,
        "Package: libcuda1\nVersion: 580.82.07-1\nArchitecture: amd64\n\n"
        "Package: libcuda1\nVersion: 580.95.05-1\nArchitecture: amd64\nSize: 1\n\n"
        "Package: nvidia-kernel-dkmsx\nVersion: 580.95.05-1\n",
    )
    fakeroot.write(
        tmp_path, lists + "deb.debian.org_debian_dists_bookworm_main_binary-amd64_Packages", "x" * 10
    )
    fakeroot.write(
        tmp_path, lists + "deb.debian.org_debian_dists_bookworm-updates_main_binary-amd64_Packages.lz4", ""
    )
    origins, driver = origins_of(root)
    assert origins == {"libcuda1": "nvidia_repo", "nvidia-kernel-dkms": None}
    assert driver["packages"][0]["origin"]["confidence"] == "high"
    assert nvidia in driver["packages"][0]["origin"]["evidence"]
    assert "lz4" in driver["reasons"]["package_origins"]
    # a package only NVIDIA's repository ships, at the same version, decides the rest
    root = debian12(
        tmp_path,
        [("libcuda1", "580.95.05-1"), ("nvidia-kernel-dkms", "580.95.05-1"), ("cuda-drivers", "580.95.05-1")],
    )
    origins, _ = origins_of(root)
    assert origins == {
        "cuda-drivers": "nvidia_repo",
        "libcuda1": "nvidia_repo",
        "nvidia-kernel-dkms": "nvidia_repo",
    }


def test_the_archives_own_versions_read_no_apt_list(tmp_path, monkeypatch):
    root = debian12(tmp_path, [("nvidia-kernel-dkms", "535.216.01-1~deb12u1")])
    fakeroot.write(tmp_path, "/var/lib/apt/lists/x_Packages", "")
    monkeypatch.setattr(probe_driver, "apt_list_carriers", lambda *a: pytest.fail("apt lists were read"))
    assert origins_of(root)[0] == {"nvidia-kernel-dkms": "debian_archive"}


def test_h200_real_state_has_no_runfile_dkms_or_driver_package(tmp_path):
    fakeroot.h200(tmp_path)
    root = Root(str(tmp_path))
    driver = probe_driver.probe(root, False, Packages(root), nvml=None, gpu_driver_info={}, host=host_fact())
    assert driver["runfile"] == {"uninstaller": None, "log": None, "version": None, "completed": None}
    assert (driver["dkms"], driver["packages"], driver["runfile_markers"]) == ([], [], [])


H200_PROC_VERSION = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n"
    "GCC version:  gcc version 15.3.0 (GCC) \n"
)


PROPRIETARY_PROC_VERSION = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"
)


# The kernel's strings have one reader, probe/driver.py (these assertions moved with the readers).
def test_parse_proc_version_open_h200():
    assert probe_driver.parse_proc_version(H200_PROC_VERSION) == {
        "version": "580.159.04",
        "kernel_module": "open",
    }


def test_parse_proc_version_proprietary_and_garbage():
    assert probe_driver.parse_proc_version(PROPRIETARY_PROC_VERSION) == {
        "version": "535.104.05",
        "kernel_module": "proprietary",
    }
    assert probe_driver.parse_proc_version("") is None
    assert probe_driver.parse_proc_version(None) is None


@pytest.mark.parametrize(
    ("lic", "flavor"), [("Dual MIT/GPL", "open"), ("NVIDIA", "proprietary"), ("", None), ("weird", None)]
)
def test_flavor_from_license(lic, flavor):
    assert probe_driver.flavor_from_license(lic) == flavor
