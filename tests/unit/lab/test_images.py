import dataclasses
import subprocess

import pytest

from lab import LabError, engine, images
from lab.aptsources import DebianMirror
from lab.images import (
    EL_BASE_PROVIDES,
    EL_BASE_SPEC,
    RECIPES,
    SYSTEMD_HOOKS,
    SYSTEMD_RUN,
    mmdebstrap_cmd,
    resolve,
)


def test_four_debian_images_and_el_and_ubuntu_shaped_ones_on_demand():
    assert sorted(r.tag for r in RECIPES.values()) == [
        "gpufleet/debian12",
        "gpufleet/debian12-arm64-systemd",
        "gpufleet/debian12-systemd",
        "gpufleet/debian13",
        "gpufleet/debian13-systemd",
        "gpufleet/el10-systemd",
        "gpufleet/el9-systemd",
        "gpufleet/ubuntu2204-systemd",
        "gpufleet/ubuntu2404-arm64-systemd",
        "gpufleet/ubuntu2404-systemd",
    ]
    assert RECIPES["debian13"].suite == "trixie"
    assert [r.name for r in RECIPES.values() if r.on_demand] == [
        "el9-systemd",
        "el10-systemd",
        "ubuntu2404-systemd",
        "ubuntu2204-systemd",
        "debian12-arm64-systemd",
        "ubuntu2404-arm64-systemd",
    ]


def test_packages():
    for recipe in RECIPES.values():
        assert {"python3", "sudo", "ca-certificates"} <= set(recipe.packages)
        if recipe.systemd:
            assert {"systemd", "systemd-sysv", "dbus", "procps", "openssh-server"} <= set(recipe.packages)


def test_digest_is_stable_and_tracks_the_recipe():
    recipe = RECIPES["debian12-systemd"]
    assert recipe.digest() == RECIPES["debian12-systemd"].digest()
    assert len(recipe.digest()) == 64
    more = dataclasses.replace(recipe, packages=(*recipe.packages, "vim"))
    assert more.digest() != recipe.digest()
    other_suite = dataclasses.replace(recipe, suite="trixie")
    assert other_suite.digest() != recipe.digest()
    assert len({r.digest() for r in RECIPES.values()}) == len(RECIPES)


def test_digest_ignores_package_order():
    recipe = RECIPES["debian12"]
    assert dataclasses.replace(recipe, packages=tuple(reversed(recipe.packages))).digest() == recipe.digest()


def test_resolve():
    # `lab up` builds the Debian images; the EL-shaped ones when a scenario names them
    assert [r.name for r in resolve([])] == ["debian12", "debian12-systemd", "debian13", "debian13-systemd"]
    assert resolve(["el9-systemd"])[0].on_demand
    assert resolve(["gpufleet/debian13"])[0].name == "debian13"


def test_unknown_image_is_one_line_error():
    with pytest.raises(LabError) as err:
        resolve(["ubuntu2404"])
    msg = str(err.value)
    assert "\n" not in msg
    assert "'ubuntu2404'" in msg
    assert "debian12-systemd" in msg


def test_mmdebstrap_uses_the_given_mirror_only():
    mirror = DebianMirror("http://m.example/debian", "http://m.example/debian-security")
    cmd = mmdebstrap_cmd(RECIPES["debian13-systemd"], mirror, "/tmp/x.tar")
    assert "--variant=minbase" in cmd
    assert cmd[-3:] == [
        "deb http://m.example/debian trixie main",
        "deb http://m.example/debian trixie-updates main",
        "deb http://m.example/debian-security trixie-security main",
    ]
    assert any(a.startswith("--include=") and "openssh-server" in a for a in cmd)


def test_systemd_runs_unprivileged():
    assert "privileged" not in SYSTEMD_RUN
    assert SYSTEMD_RUN["volumes"]["/sys/fs/cgroup"]["mode"] == "ro"
    assert set(SYSTEMD_RUN["tmpfs"]) == {"/run", "/run/lock"}


def _el_root(tmp_path, name):
    """Run an EL (or Ubuntu) recipe's identity hooks (those after the systemd ones) on a fake Debian root,
    with `chroot` (rpm --initdb) left out: what the image's /etc and /var look like."""
    root = tmp_path / name
    for d in ("etc/apt/sources.list.d", "var/lib/dpkg", "etc/dnf/plugins", "usr/lib", "root"):
        (root / d).mkdir(parents=True)
    (root / "etc/os-release").write_text("ID=debian\n")
    (root / "etc/debian_version").write_text("12.12\n")
    (root / "etc/apt/sources.list").write_text("deb http://deb.example/debian bookworm main\n")
    (root / "var/lib/dpkg/status").write_text("Package: dpkg\n")
    (root / "etc/dnf/plugins/local.conf").write_text("[main]\nenabled = 1\n")
    hooks = RECIPES[name].hooks[len(SYSTEMD_HOOKS) :]
    for hook in hooks:
        if "chroot" in hook:
            assert "rpm --initdb" in hook or "gpufleet-lab-el-base" in hook
            continue
        subprocess.run(["sh", "-c", hook, "hook", str(root)], check=True)
    return root


@pytest.mark.parametrize(
    ("name", "ident", "major", "dbpath"),
    [
        ("el9-systemd", 'ID="rocky"', "9", "var/lib/rpm"),
        ("el10-systemd", 'ID="rhel"', "10", "usr/lib/sysimage/rpm"),
    ],
)
def test_an_el_shaped_root_has_an_el_identity_and_no_debian_one(tmp_path, name, ident, major, dbpath):
    """Issue 38: what Ansible's facts and gpufleet's nvidia_facts read to tell an EL host (os-release with
    PLATFORM_ID, /etc/redhat-release, dnf's releasever, rpm's system-wide database) and nothing that says
    Debian (debian_version, apt sources, a dpkg database: probe/packages takes that for apt)."""
    recipe = RECIPES[name]
    assert recipe.systemd and "python3-apt" not in recipe.packages
    assert {"dnf", "python3-dnf", "dnf-plugins-core", "rpm"} <= set(recipe.packages)
    root = _el_root(tmp_path, name)
    os_release = (root / "etc/os-release").read_text()
    assert ident in os_release and f'PLATFORM_ID="platform:el{major}"' in os_release
    assert (root / "etc/redhat-release").read_text().startswith(("Rocky Linux release", "Red Hat Enterprise"))
    assert (root / "etc/dnf/vars/releasever").read_text() == f"{major}\n"
    assert f"%_dbpath /{dbpath}" in (root / "etc/rpm/macros.gpufleet-lab-el").read_text()
    assert (root / dbpath).is_dir()
    assert "best=True" in (root / "etc/dnf/dnf.conf").read_text()
    assert "enabled = 0" in (root / "etc/dnf/plugins/local.conf").read_text()
    assert (root / "etc/ld.so.conf.d/gpufleet-lab-el-lib64.conf").read_text() == "/usr/lib64\n"
    for gone in (
        "etc/debian_version",
        "etc/apt/sources.list",
        "etc/apt/sources.list.d",
        "var/lib/dpkg/status",
    ):
        assert not (root / gone).exists(), gone
    assert (root / "usr/lib/gpufleet-lab/dpkg/status").exists()
    assert not (root / "root/gpufleet-lab-el-base.spec").exists()  # built, installed, removed


def test_the_rpm_database_has_a_base_system_that_nvidias_scriptlets_and_the_roles_need():
    """An EL-shaped host's rpm database starts empty: NVIDIA's libcudnn9 RPM's %post (/bin/sh, ldconfig) and
    the driver role's versionlock plugin package would be "nothing provides" without the base stand-in."""
    assert {"/bin/sh", "/sbin/ldconfig", "glibc", "python3-dnf-plugin-versionlock"} <= set(EL_BASE_PROVIDES)
    assert "AutoReqProv: no" in EL_BASE_SPEC and "Provides: /bin/sh" in EL_BASE_SPEC
    for name in ("el9-systemd", "el10-systemd"):
        hooks = " ".join(RECIPES[name].hooks)
        assert "rpmbuild -bb" in hooks and "rpm -i --nodeps" in hooks


@pytest.mark.parametrize(
    ("name", "version", "codename"),
    [("ubuntu2404-systemd", "24.04", "noble"), ("ubuntu2204-systemd", "22.04", "jammy")],
)
def test_an_ubuntu_shaped_root_has_an_ubuntu_identity(tmp_path, name, version, codename):
    """Issue 38: what Ansible reads to tell Ubuntu (os-release ID=ubuntu, lsb-release; tried: distribution
    Ubuntu, version 24.04, release noble, os_family Debian, pkg_mgr apt) on a Debian root with python3-apt
    and g++ (nvcc's host compiler)."""
    recipe = RECIPES[name]
    assert recipe.systemd and {"python3-apt", "g++"} <= set(recipe.packages)
    root = _el_root(tmp_path, name)
    os_release = (root / "etc/os-release").read_text()
    assert 'ID="ubuntu"' in os_release and f'VERSION_ID="{version}"' in os_release
    assert f'VERSION_CODENAME="{codename}"' in os_release
    assert f"DISTRIB_RELEASE={version}\n" in (root / "etc/lsb-release").read_text()
    assert (root / "etc/debian_version").read_text().endswith("/sid\n")
    assert (root / "var/lib/dpkg/status").exists() and (root / "etc/apt/sources.list").exists()


def test_the_arm64_image_is_built_with_a_foreign_arch_and_loaded_labelled_arm64(monkeypatch):
    """mmdebstrap --arch=arm64 (QEMU user emulation) and a docker save archive whose config says arm64 (docker
    import would label it amd64 on this dockerd); the amd64 images' digests and commands are unchanged."""
    arm, mirror = RECIPES["debian12-arm64-systemd"], DebianMirror("http://m.example/debian")
    cmd = images.mmdebstrap_cmd(arm, mirror, "/tmp/x.tar")
    assert "--arch=arm64" in cmd and "g++" in cmd[cmd.index("--include=" + ",".join(arm.packages))]
    assert any("systemctl mask systemd-sysusers.service" in c for c in cmd)
    assert not any(c.startswith("--arch") for c in images.mmdebstrap_cmd(RECIPES["debian12"], mirror, "/t"))
    assert arm.digest() != dataclasses.replace(arm, arch="amd64").digest()
    config = images.image_config("arm64", [*arm.changes, "LABEL gpufleet.recipe=abc"], "sha256:00", "now")
    assert (config["architecture"], config["variant"], config["os"]) == ("arm64", "v8", "linux")
    assert config["config"]["Cmd"] == ["/lib/systemd/systemd"]
    assert "container=docker" in config["config"]["Env"]
    assert config["config"]["Labels"] == {"gpufleet.recipe": "abc"}
    with pytest.raises(LabError, match="only ENV, CMD and LABEL"):
        images.image_config("arm64", ["EXPOSE 22"], "sha256:00", "now")


def test_the_ubuntu_shaped_arm_server_is_the_arm64_image_with_ubuntus_identity():
    """A GH200 node's Ubuntu 24.04 (NVIDIA's ubuntu2404/sbsa repository): the arm64 recipe, the units masked
    before the identity hooks, which are the x86_64 Ubuntu-shaped image's."""
    arm, ubuntu = RECIPES["ubuntu2404-arm64-systemd"], RECIPES["ubuntu2404-systemd"]
    debian_arm = RECIPES["debian12-arm64-systemd"]
    assert (arm.arch, arm.packages, arm.on_demand) == ("arm64", debian_arm.packages, True)
    identity = images.ubuntu_hooks("ubuntu2404")
    assert arm.hooks == (*debian_arm.hooks, *identity)
    assert ubuntu.hooks[-len(identity) :] == identity
    assert arm.digest() != debian_arm.digest()


def test_the_emulation_handler_must_be_enabled_with_the_f_flag():
    """binfmt_misc's entry (this machine's qemu-aarch64 once registered): the F flag opens the interpreter at
    registration, so that it works inside containers, whose root has no /usr/libexec/qemu-binfmt."""
    entry = "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: PF\noffset 0\n"
    assert engine.binfmt_flags(entry) == "PF"
    assert engine.binfmt_flags(entry.replace("enabled", "disabled", 1)) is None
    assert engine.binfmt_flags("") is None
    with pytest.raises(LabError, match="emulates arm64 only"):
        engine.ensure_foreign_arch("riscv64")
