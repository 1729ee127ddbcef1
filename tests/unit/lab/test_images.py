import dataclasses

import pytest

from lab import LabError
from lab.aptsources import DebianMirror
from lab.images import RECIPES, SYSTEMD_RUN, mmdebstrap_cmd, resolve


def test_four_images():
    assert sorted(r.tag for r in RECIPES.values()) == [
        "gpufleet/debian12",
        "gpufleet/debian12-systemd",
        "gpufleet/debian13",
        "gpufleet/debian13-systemd",
    ]
    assert RECIPES["debian13"].suite == "trixie"


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
    assert len({r.digest() for r in RECIPES.values()}) == 4


def test_digest_ignores_package_order():
    recipe = RECIPES["debian12"]
    assert dataclasses.replace(recipe, packages=tuple(reversed(recipe.packages))).digest() == recipe.digest()


def test_resolve():
    assert [r.name for r in resolve([])] == list(RECIPES)
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
