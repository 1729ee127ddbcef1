"""probe_host: OS (os-release), kernel release, EFI and Secure Boot, container markers."""

import hashlib

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe import host as probe_host
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.common import Root

from tests.data.facts import fakeroot


def test_read_os_release_fallbacks(tmp_path):
    """Moved from nvidia_compat (its own os-release reader is gone): etc/, else usr/lib/os-release."""
    root = Root(str(tmp_path))
    os_info, reason = probe_host.read_os(root)
    assert os_info == {"distribution": "unknown", "version": "unknown", "key": None}
    assert reason == "/etc/os-release does not exist; /usr/lib/os-release does not exist"
    fakeroot.write(tmp_path, "/usr/lib/os-release", "ID='debian'\nVERSION_ID='12'\n# comment\n")
    assert probe_host.parse_os_release((tmp_path / "usr/lib/os-release").read_text()) == {
        "ID": "debian",
        "VERSION_ID": "12",
    }
    assert probe_host.read_os(root) == ({"distribution": "Debian", "version": "12", "key": "debian12"}, None)


@pytest.mark.parametrize(
    ("os_release", "expected"),
    [
        ('NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="24.04"\n', ("Ubuntu", "24.04", "ubuntu2404")),
        ("ID=ubuntu\nVERSION_ID=22.10\n", ("Ubuntu", "22.10", None)),  # 22.10 is not 22.04
        ('ID="rhel"\nVERSION_ID="9.4"\n', ("RedHat", "9.4", "rhel9")),
        ("ID=rocky\nVERSION_ID=9.5\n", ("Rocky", "9.5", "rhel9")),
        ("ID=almalinux\nVERSION_ID=10.0\n", ("AlmaLinux", "10.0", "rhel10")),
        ('ID="ol"\nVERSION_ID="8.10"\n', ("OracleLinux", "8.10", "rhel8")),
        ("ID=centos\nVERSION_ID=9\n", ("CentOS", "9", "rhel9")),
        ("ID=debian\nVERSION_ID=13\n", ("Debian", "13", "debian13")),
        ("ID=fedora\nVERSION_ID=42\n", ("Fedora", "42", None)),
        ("ID=arch\n", ("Arch", "", None)),
    ],
)
def test_os_names_are_ansibles_and_the_key_is_kb_hosts(tmp_path, os_release, expected):
    fakeroot.write(tmp_path, "/etc/os-release", os_release)
    os_info, reason = probe_host.read_os(Root(str(tmp_path)))
    assert reason is None
    assert (os_info["distribution"], os_info["version"], os_info["key"]) == expected


def test_kernel_release(tmp_path, monkeypatch):
    root = Root(str(tmp_path))
    assert probe_host.kernel_release(root, live=False) == (
        "",
        "/proc/sys/kernel/osrelease not present under root (and root is not /)",
    )
    monkeypatch.setattr(probe_host.os, "uname", type("U", (), {"release": "6.8.0-88-generic"}))
    assert probe_host.kernel_release(root, live=True) == ("6.8.0-88-generic", None)
    fakeroot.write(tmp_path, "/proc/sys/kernel/osrelease", "6.18.44\n")
    assert probe_host.kernel_release(root, live=False) == ("6.18.44", None)
    assert probe_host.kernel_release(root, live=True) == ("6.18.44", None)


def test_efi_and_secure_boot(tmp_path):
    root = Root(str(tmp_path))
    assert probe_host.efi(root) is False
    assert probe_host.secure_boot(root) == ("unknown", "no EFI variables (legacy BIOS boot or not exposed)")
    (tmp_path / "sys/firmware/efi/efivars").mkdir(parents=True)
    assert probe_host.efi(root) is True
    assert probe_host.secure_boot(root) == ("unknown", "no SecureBoot EFI variable")
    fakeroot.write(tmp_path, probe_host.SECURE_BOOT_VAR, b"\x06\x00\x00\x00\x01")
    assert probe_host.secure_boot(root) == ("enabled", None)


def _signature_list(kind, entries, size=None):
    """An EFI_SIGNATURE_LIST: type GUID, list size, header size 0, signature size, entries (owner + data)."""
    entry = size or 16 + len(entries[0])
    body = b"".join(b"\x11" * 16 + e for e in entries)
    return (
        kind
        + (28 + len(body)).to_bytes(4, "little")
        + (0).to_bytes(4, "little")
        + entry.to_bytes(4, "little")
        + body
    )


def test_mok_list_rt_certificates(tmp_path):
    root = Root(str(tmp_path))
    assert probe_host.mok_enrolled(root) == (None, "no EFI variables (legacy BIOS boot or not exposed)")
    (tmp_path / "sys/firmware/efi/efivars").mkdir(parents=True)
    assert probe_host.mok_enrolled(root)[0] is None
    assert "no MokListRT" in probe_host.mok_enrolled(root)[1]
    vendor, lab = b"\x30\x82\x00\x02ve", b"\x30\x82\x00\x03lab"
    sha256_list = _signature_list(bytes.fromhex("2616c4c14c509240aca941f936934328"), [b"h" * 32])
    data = _signature_list(probe_host.EFI_CERT_X509, [vendor]) + sha256_list
    data += _signature_list(probe_host.EFI_CERT_X509, [lab]) + b"\xff" * 5  # a torn tail is ignored
    assert probe_host.x509_in_signature_lists(data) == [vendor, lab]
    # before the MOKvar table: a runtime EFI variable, 4 bytes of attributes first
    fakeroot.write(tmp_path, probe_host.MOK_LIST_RT[1][0], b"\x06\x00\x00\x00" + data)
    digests = [hashlib.sha256(vendor).hexdigest(), hashlib.sha256(lab).hexdigest()]
    assert probe_host.mok_enrolled(root) == (digests, None)
    # the MOKvar table (kernel 5.11+) comes first when both are there
    fakeroot.write(tmp_path, probe_host.MOK_LIST_RT[0][0], _signature_list(probe_host.EFI_CERT_X509, [lab]))
    assert probe_host.mok_enrolled(root) == ([digests[1]], None)


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"/.dockerenv": ""}, "docker"),
        ({"/run/.containerenv": ""}, "podman"),
        ({"/proc/1/environ": "PATH=/bin\0container=lxc\0", "/proc/1/cgroup": "0::/\n"}, "lxc"),
        ({"/proc/1/environ": "container=weird\0", "/proc/1/cgroup": "0::/\n"}, "other"),
        ({"/proc/1/cgroup": "12:pids:/kubepods/burstable/pod1\n"}, "kubernetes"),
        ({"/proc/1/cgroup": "0::/system.slice/docker-abc.scope\n"}, "docker"),
        ({"/proc/1/cgroup": "0::/\n"}, "none"),
    ],
)
def test_container_markers(tmp_path, files, expected):
    for path, text in files.items():
        fakeroot.write(tmp_path, path, text)
    assert probe_host.detect_container(Root(str(tmp_path)), environ={}) == (expected, None)


def test_container_unknown_without_proc(tmp_path):
    assert probe_host.detect_container(Root(str(tmp_path)), environ={}) == (
        "unknown",
        "cannot read /proc/1/cgroup: /proc does not exist",
    )


def test_host_fact_of_the_h200_tree(tmp_path):
    fakeroot.h200(tmp_path)
    host = probe_host.probe(Root(str(tmp_path)), live=False)
    assert host["os"] == {
        "distribution": "Ubuntu",
        "version": "24.04",
        "key": "ubuntu2404",
        "debian_mirror": None,
    }
    assert host["kernel_release"] == "6.18.44"
    assert host["efi"] is False
    assert host["container"] == "docker"
    assert "kernel_release" not in host["reasons"] and "os" not in host["reasons"]


def test_host_fact_of_an_empty_tree(tmp_path):
    host = probe_host.probe(Root(str(tmp_path)), live=False)
    assert (host["kernel_release"], host["efi"], host["os"]["key"]) == ("", False, None)
    assert set(host["reasons"]) >= {"kernel_release", "os", "container", "vm"}


def _apt_root(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / name.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "etc/os-release").parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "etc/os-release").write_text('ID=debian\nVERSION_ID="12"\n')
    return probe_host.probe(Root(str(tmp_path)), live=False)


def test_debian_mirror_from_deb822(tmp_path):
    host = _apt_root(
        tmp_path,
        {
            "/etc/apt/sources.list.d/debian.sources": (
                "Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n\n"
                "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm\nComponents: main\n"
            )
        },
    )
    assert host["os"]["debian_mirror"] == "http://mirror.example/debian"


def test_debian_mirror_from_one_line_sources_with_options(tmp_path):
    host = _apt_root(
        tmp_path,
        {
            "/etc/apt/sources.list": (
                "# deb http://commented.example/debian bookworm main\n"
                "deb [arch=amd64 signed-by=/k.gpg] https://mirror.example/debian bookworm main\n"
            )
        },
    )
    assert host["os"]["debian_mirror"] == "https://mirror.example/debian"


def test_debian_mirror_none_without_a_debian_source(tmp_path):
    host = _apt_root(
        tmp_path,
        {
            "/etc/apt/sources.list.d/x.sources": (
                "Types: deb\nURIs: http://mirror.example/debian\nEnabled: no\n"
            ),
            "/etc/apt/sources.list.d/nvidia.list": "deb http://repo.example/cuda/debian12/x86_64/ /\n",
        },
    )
    assert host["os"]["debian_mirror"] is None


@pytest.mark.parametrize(
    ("e_machine", "little_endian", "expected", "reason"),
    [
        (62, True, "x86_64", None),
        (183, True, "aarch64", None),
        (21, True, "ppc64le", None),
        (21, False, None, "/bin/sh is for ELF machine 21, not one of aarch64, ppc64le, x86_64"),
        (243, True, None, "/bin/sh is for ELF machine 243, not one of aarch64, ppc64le, x86_64"),
    ],
)
def test_machine_of_a_tree_from_its_shell(tmp_path, e_machine, little_endian, expected, reason):
    fakeroot.elf_shell(tmp_path, e_machine, little_endian=little_endian)
    assert probe_host.machine(Root(str(tmp_path)), live=False) == (expected, reason)


def test_machine_that_cannot_be_told(tmp_path, monkeypatch):
    root = Root(str(tmp_path))
    assert probe_host.machine(root, live=False) == (None, "cannot read /bin/sh: /bin does not exist")
    fakeroot.write(tmp_path, "/bin/sh", "#!/bin/busybox\n")
    assert probe_host.machine(root, live=False) == (None, "/bin/sh is not an ELF file")
    monkeypatch.setattr(probe_host.platform, "machine", lambda: "")
    assert probe_host.machine(root, live=True) == (None, "platform.machine() returned nothing")
    monkeypatch.setattr(probe_host.platform, "machine", lambda: "aarch64")
    assert probe_host.machine(root, live=True) == ("aarch64", None)  # live: uname -m, not the tree
    host = probe_host.probe(root, live=False)
    assert (host["machine"], host["reasons"]["machine"]) == (None, "/bin/sh is not an ELF file")


# THE definition is probe/host.py's driver_managed_externally (the plan reads it from the facts); the
# assertions of the installer's former definition, on the one left.
def test_h200_is_host_managed():
    managed, reason = probe_host.driver_managed_externally(
        "docker",
        "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
        "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
        None,
        readonly=True,
    )
    assert managed is True
    assert "container" in reason
    assert "/usr/local/nvidia" in reason


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (("none", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "libnvidia-compute-580", False), False),
        (("docker", None, None, False), False),  # empty container: installable userspace
        (("none", "/usr/lib/libnvidia-ml.so.1", None, False), False),  # runfile on bare metal
        (("none", "/usr/local/nvidia/lib64/libnvidia-ml.so.1", None, True), True),
        (("docker", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", None, False), True),  # toolkit-injected
        (("docker", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "libnvidia-compute-580", False), False),
    ],
)
def test_host_managed_matrix(case, expected):
    container, path, owner, readonly = case
    managed, _ = probe_host.driver_managed_externally(container, path, path, owner, readonly=readonly)
    assert bool(managed) is expected


def test_tegra_from_l4t_release_or_device_tree(tmp_path):
    """A Jetson (Tegra SoC, L4T) is told from NVIDIA's /etc/nv_tegra_release, else the device tree's SoC name;
    an Arm server (Grace: no such file, a device tree without nvidia,tegra) is not one."""
    root = Root(str(tmp_path))
    assert probe_host.tegra(root) is None
    assert probe_host.probe(root, live=False)["tegra"] is None
    fakeroot.write(tmp_path, "/proc/device-tree/compatible", "nvidia,grace\0arm,sbsa\0")
    assert probe_host.tegra(root) is None
    fakeroot.write(tmp_path, "/proc/device-tree/compatible", "nvidia,p3737-0000\0nvidia,tegra234\0")
    assert probe_host.tegra(root) == "/proc/device-tree/compatible names nvidia,tegra234"
    fakeroot.write(tmp_path, "/etc/nv_tegra_release", "# R36 (release), REVISION: 4.3, GCID: 38968081\n")
    expected = "/etc/nv_tegra_release exists (# R36 (release), REVISION: 4.3, GCID: 38968081)"
    assert probe_host.tegra(root) == expected
    assert probe_host.probe(root, live=False)["tegra"].startswith("/etc/nv_tegra_release exists")
