"""The lab's DKMS build cache: the make wrapper records and replays for real; the record command's shape."""

import os
import subprocess
import tarfile

import pytest

from lab import LabError, vmdisk, vmdkms
from lab.aptsources import DebianMirror

MAKEFILE = """\
modules:
\techo compiled >> $(COUNTER)
\tmkdir -p sub && echo "elf" > sub/nvidia-current.ko && echo "elf2" > nvidia-current-uvm.ko
clean:
\trm -rf sub *.ko
"""


def _tree(tmp_path):
    build = tmp_path / "dkms" / "nvidia-current" / "535.309.01" / "build"
    build.mkdir(parents=True)
    (build / "Makefile").write_text(MAKEFILE)
    (build / "nv.c").write_text("int x;\n")
    cache = tmp_path / "cache"
    cache.mkdir()
    return build, cache


def _headers(tmp_path, kver="6.1.0-57-amd64", cc_version="gcc-12 (Debian 12.2.0-14) 12.2.0"):
    """A kernel's build tree whose config names its compiler (a script on PATH answering --version)."""
    build = tmp_path / "headers" / kver
    (build / "include" / "config").mkdir(parents=True, exist_ok=True)
    (build / "include" / "config" / "auto.conf").write_text('CONFIG_CC_VERSION_TEXT="gcc-12 (Debian) 12"\n')
    (build / "Module.symvers").write_text("0x1 sym vmlinux EXPORT_SYMBOL\n")
    (tmp_path / "modules" / kver).mkdir(parents=True, exist_ok=True)
    link = tmp_path / "modules" / kver / "build"
    if not link.exists():
        link.symlink_to(build)
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "gcc-12").write_text(f"#!/bin/sh\necho '{cc_version}'\n")
    (bindir / "gcc-12").chmod(0o755)


def _clean(env):
    """No outer make's state (make test runs these tests from make: MAKEFLAGS, MAKELEVEL)."""
    for name in ("GPUFLEET_LAB_MAKE_INNER", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES"):
        env.pop(name, None)
    return env


def _make(build, cache, tmp_path, mode, *args):
    (cache / "mode").write_text(mode + "\n")
    env = {
        **os.environ,
        "GPUFLEET_LAB_DKMS_CACHE": str(cache),
        "GPUFLEET_LAB_DKMS_TREE": str(tmp_path / "dkms" / "nvidia-current"),
        "COUNTER": str(tmp_path / "compiled"),
        "GPUFLEET_LAB_DKMS_MAKE": "make",
        "GPUFLEET_LAB_DKMS_MODULES": str(tmp_path / "modules"),
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
    }
    _clean(env)
    return subprocess.run(
        ["sh", str(vmdkms.WRAPPER), *args], cwd=build, env=env, capture_output=True, text=True, check=False
    )


def _compiles(tmp_path):
    path = tmp_path / "compiled"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_record_then_replay_gives_the_modules_back_without_compiling(tmp_path):
    build, cache = _tree(tmp_path)
    args = ["-j2", "modules", "KERNEL_UNAME=6.1.0-57-amd64"]
    rec = _make(build, cache, tmp_path, "record", *args)
    assert rec.returncode == 0, rec.stdout + rec.stderr
    assert "recorded 2 modules" in rec.stdout and _compiles(tmp_path) == 1
    kept = list((cache / "6.1.0-57-amd64").glob("*.tar"))
    assert len(kept) == 1
    with tarfile.open(kept[0]) as tar:
        assert sorted(tar.getnames()) == ["./nvidia-current-uvm.ko", "./sub/nvidia-current.ko"]
    assert _make(build, cache, tmp_path, "replay", "clean").returncode == 0
    assert not (build / "sub").exists()
    # -j differs between the recording host and the guest: not part of the key
    rep = _make(build, cache, tmp_path, "replay", "-j1", "modules", "KERNEL_UNAME=6.1.0-57-amd64")
    assert rep.returncode == 0 and "replayed 2 modules for 6.1.0-57-amd64" in rep.stdout
    assert _compiles(tmp_path) == 1, "replay compiled"
    assert (build / "sub" / "nvidia-current.ko").read_text() == "elf\n"


@pytest.mark.parametrize(
    "change",
    ["source", "kernel", "args"],
)
def test_a_different_source_kernel_or_target_compiles_for_real(tmp_path, change):
    build, cache = _tree(tmp_path)
    assert _make(build, cache, tmp_path, "record", "modules", "KERNEL_UNAME=6.1.0-57-amd64").returncode == 0
    subprocess.run(["make", "-s", "clean"], cwd=build, check=True)
    args = ["modules", "KERNEL_UNAME=6.1.0-57-amd64"]
    if change == "source":
        (build / "nv.c").write_text("int y;\n")
    elif change == "kernel":
        args[1] = "KERNEL_UNAME=6.1.0-58-amd64"
    else:
        args.append("NV_EXCLUDE_BUILD_MODULES=nvidia-uvm")
    rep = _make(build, cache, tmp_path, "replay", *args)
    assert rep.returncode == 0 and "no entry" in rep.stdout
    assert _compiles(tmp_path) == 2


def test_outside_a_dkms_build_tree_it_is_plain_make(tmp_path):
    build, cache = _tree(tmp_path)
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "Makefile").write_text("all:\n\t@echo plain\n")
    env_make = {"GPUFLEET_LAB_DKMS_MAKE": "make"}
    (cache / "mode").write_text("replay\n")
    env = {**os.environ, **env_make, "GPUFLEET_LAB_DKMS_CACHE": str(cache)}
    env["GPUFLEET_LAB_DKMS_TREE"] = str(build.parent)
    _clean(env)
    res = subprocess.run(
        ["sh", str(vmdkms.WRAPPER)], cwd=other, env=env, capture_output=True, text=True, check=False
    )
    assert res.stdout == "plain\n"


def test_record_command_builds_for_each_kernel_and_keeps_nothing_else():
    mirror = DebianMirror(archive="http://deb.example/debian", security="http://deb.example/debian-security")
    cmd = vmdkms.record_cmd("bookworm", "proprietary", ["6.1.0-57-amd64", "6.1.0-58-amd64"], mirror, "/c")
    assert "--format=null" in cmd and cmd[cmd.index("bookworm") + 1] == "/dev/null"
    assert "--include=dkms,linux-headers-6.1.0-57-amd64,linux-headers-6.1.0-58-amd64" in cmd
    assert f"--essential-hook=upload {vmdkms.WRAPPER} /usr/bin/make" in cmd
    assert any("apt-get install -y --no-install-recommends nvidia-kernel-dkms" in c for c in cmd)
    assert any("dkms autoinstall -k 6.1.0-57-amd64 && " in c and "-k 6.1.0-58-amd64" in c for c in cmd)
    assert f"--customize-hook=sync-out {vmdkms.GUEST_CACHE} /c" in cmd
    assert "deb http://deb.example/debian-security bookworm-security " + vmdisk.COMPONENTS in cmd


def test_cache_guest_also_records_kernels_the_guest_installs_later(monkeypatch):
    """--kernel: a kernel update the scenario installs without headers still replays from the cache."""
    calls = []
    monkeypatch.setattr(vmdkms.vm, "_running", lambda name: type("G", (), {"dist": "bookworm"})())
    monkeypatch.setattr(vmdkms, "kernels_of", lambda name: ["6.1.0-57-amd64"])
    monkeypatch.setattr(vmdkms, "record", lambda *a, **k: calls.append(("record", a)))
    monkeypatch.setattr(vmdkms, "seed", lambda name, **k: calls.append(("seed", name)))
    vmdkms.cache_guest("g1", "proprietary", also=["6.1.0-57-cloud-amd64", "6.1.0-57-amd64"], log=None)
    assert calls == [
        ("record", ("bookworm", "proprietary", ["6.1.0-57-amd64", "6.1.0-57-cloud-amd64"])),
        ("seed", "g1"),
    ]
    with pytest.raises(LabError, match="--kernel '6.1;rm'"):
        vmdkms.cache_guest("g1", also=["6.1;rm"])


@pytest.mark.parametrize("bad", ["", "6.1.0 57", "6.1;rm", "../x"])
def test_bad_kernel_release_is_refused(bad):
    with pytest.raises(LabError, match="--kernel"):
        vmdkms.validate_release(bad)


def test_bad_flavor_is_refused():
    with pytest.raises(LabError, match="--flavor 'closed': allowed proprietary, open") as err:
        vmdkms.validate_flavor("closed")
    assert err.value.code == 2


def test_the_key_holds_the_kernels_compiler_not_plain_gcc(tmp_path):
    """The guest has gcc-12 (the kernel's CONFIG_CC_VERSION_TEXT) but no plain gcc: the key must not
    depend on gcc. Another version of the kernel's compiler is another key."""
    build, cache = _tree(tmp_path)
    _headers(tmp_path)
    args = ["modules", "KERNEL_UNAME=6.1.0-57-amd64"]
    assert _make(build, cache, tmp_path, "record", *args).returncode == 0
    subprocess.run(["make", "-s", "clean"], cwd=build, check=True)
    assert "replayed" in _make(build, cache, tmp_path, "replay", *args).stdout
    subprocess.run(["make", "-s", "clean"], cwd=build, check=True)
    _headers(tmp_path, cc_version="gcc-12 (Debian 12.2.0-15) 12.2.0")
    assert "no entry" in _make(build, cache, tmp_path, "replay", *args).stdout
