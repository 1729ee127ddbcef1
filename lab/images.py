"""Debian base images built with mmdebstrap from this machine's apt mirror and `docker import`ed.

Each image has a recipe (suite, packages, hooks, image config). Its sha256 is stored in
the image label `gpufleet.recipe`; an image is rebuilt only when missing or when the
recipe (hence the hash) changed.
"""

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field

from lab import STATE, LabError, aptsources, engine, unmount_below

# What ansible (and the roles' tasks) need on every target.
BASE_PACKAGES = (
    "python3",
    "python3-apt",
    "sudo",
    "ca-certificates",
    "xz-utils",
    "iproute2",
)
# What a systemd "host" adds: an init, a bus, ps and an sshd, pip for wheel installs.
SYSTEMD_PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "procps",
    "openssh-server",
    "python3-pip",
)
# Keep images (and lab/vmdisk.py's VM disks) small: no docs, man pages or translations.
DPKG_EXCLUDES = (
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/info/*",
)
SSH_HOSTKEY_SCRIPT = """#!/bin/sh
# gpufleet lab: one ed25519 sshd host key per container, made at first boot
test -s /etc/ssh/ssh_host_ed25519_key || exec ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
"""
SSH_DROPIN = """[Service]
ExecStartPre=
ExecStartPre=/usr/local/sbin/gpufleet-ssh-hostkey
ExecStartPre=/usr/sbin/sshd -t
"""
SYSTEMD_HOOKS = (
    # units that make no sense (or hang) in a container without privileges
    'chroot "$1" systemctl mask getty@tty1.service serial-getty@console.service '
    "systemd-udevd.service systemd-udev-trigger.service systemd-modules-load.service "
    "sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount "
    "systemd-remount-fs.service systemd-firstboot.service",
    'chroot "$1" systemctl enable ssh.service',
    # each container gets its own machine-id on first boot
    ': > "$1/etc/machine-id"',
    # and its own sshd host key: ed25519 only (RSA keys take a minute on a busy 2-core machine)
    'rm -f "$1"/etc/ssh/ssh_host_*_key*',
    f'printf %s {shlex.quote(SSH_HOSTKEY_SCRIPT)} > "$1/usr/local/sbin/gpufleet-ssh-hostkey"',
    'chmod 755 "$1/usr/local/sbin/gpufleet-ssh-hostkey"',
    'mkdir -p "$1/etc/systemd/system/ssh.service.d" "$1/etc/ssh/sshd_config.d"',
    f'printf %s {shlex.quote(SSH_DROPIN)} > "$1/etc/systemd/system/ssh.service.d/hostkey.conf"',
    'printf "HostKey /etc/ssh/ssh_host_ed25519_key\\n" > "$1/etc/ssh/sshd_config.d/gpufleet-hostkey.conf"',
)
SYSTEMD_CHANGES = (
    "ENV container=docker",
    'CMD ["/lib/systemd/systemd"]',
)
PLAIN_CHANGES = ('CMD ["/bin/bash"]',)

# How to run a systemd image without --privileged (which fails on these machines).
SYSTEMD_RUN = {
    "tmpfs": {"/run": "rw,exec", "/run/lock": "rw"},
    "volumes": {"/sys/fs/cgroup": {"bind": "/sys/fs/cgroup", "mode": "ro"}},
    "cgroupns": "host",
    "command": ["/lib/systemd/systemd"],
}


@dataclass(frozen=True)
class Recipe:
    name: str
    suite: str
    systemd: bool
    packages: tuple = field(default=())
    hooks: tuple = field(default=())
    changes: tuple = field(default=())

    @property
    def tag(self):
        return f"gpufleet/{self.name}"

    def digest(self):
        """sha256 of everything that shapes the image (not the mirror host)."""
        doc = {
            "suite": self.suite,
            "variant": "minbase",
            "packages": sorted(self.packages),
            "hooks": list(self.hooks),
            "dpkg": list(DPKG_EXCLUDES),
            "changes": list(self.changes),
            "format": 1,
        }
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _recipe(name, suite, systemd):
    pkgs = BASE_PACKAGES + (SYSTEMD_PACKAGES if systemd else ())
    return Recipe(
        name=name,
        suite=suite,
        systemd=systemd,
        packages=pkgs,
        hooks=SYSTEMD_HOOKS if systemd else (),
        changes=SYSTEMD_CHANGES if systemd else PLAIN_CHANGES,
    )


RECIPES = {
    r.name: r
    for r in (
        _recipe("debian12", "bookworm", False),
        _recipe("debian12-systemd", "bookworm", True),
        _recipe("debian13", "trixie", False),
        _recipe("debian13-systemd", "trixie", True),
    )
}


def resolve(names):
    """Recipes for the given names (all when empty); one-line LabError for an unknown name."""
    if not names:
        return list(RECIPES.values())
    out = []
    for name in names:
        key = name.split("/", 1)[-1] if name.startswith("gpufleet/") else name
        if key not in RECIPES:
            raise LabError(f"unknown image {name!r}: choose from {', '.join(RECIPES)}")
        out.append(RECIPES[key])
    return out


def apt_lines(recipe, mirror):
    lines = [f"deb {mirror.archive} {recipe.suite} main", f"deb {mirror.archive} {recipe.suite}-updates main"]
    if mirror.security:
        lines.append(f"deb {mirror.security} {recipe.suite}-security main")
    return lines


def mmdebstrap_cmd(recipe, mirror, target):
    cmd = [
        "mmdebstrap",
        "--variant=minbase",
        "--mode=root",
        "--format=tar",
        "--aptopt=APT::Install-Recommends false",
        f"--include={','.join(recipe.packages)}",
    ]
    cmd += [f"--dpkgopt={opt}" for opt in DPKG_EXCLUDES]
    cmd += [f"--customize-hook={hook}" for hook in recipe.hooks]
    cmd += [
        # no apt lists or caches in the image
        '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin',
        recipe.suite,
        str(target),
    ]
    cmd += apt_lines(recipe, mirror)
    return cmd


def image_recipe_label(client, tag):
    import docker

    try:
        img = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return (img.labels or {}).get("gpufleet.recipe", "")


def build(client, names=(), force=False, log=print):
    """Build the missing/outdated images; returns {tag: 'built'|'up to date'}."""
    recipes = resolve(names)
    if any(image_recipe_label(client, r.tag) != r.digest() for r in recipes) or force:
        # the trixie key ships in debian-archive-keyring; mmdebstrap builds the images
        engine.ensure_tool("mmdebstrap", ["mmdebstrap", "debian-archive-keyring"], log)
    results = {}
    mirror = None
    for recipe in recipes:
        digest = recipe.digest()
        if not force and image_recipe_label(client, recipe.tag) == digest:
            results[recipe.tag] = "up to date"
            log(f"images: {recipe.tag} up to date ({digest[:12]})")
            continue
        if mirror is None:
            mirror = aptsources.debian_mirror(aptsources.read_sources())
        results[recipe.tag] = _build_one(recipe, mirror, digest, log)
    return results


def _build_one(recipe, mirror, digest, log):
    build_dir = STATE / "build"
    build_dir.mkdir(parents=True, exist_ok=True)
    tarball = build_dir / f"{recipe.name}.tar"
    logfile = build_dir / f"{recipe.name}.log"
    log(f"images: building {recipe.tag} ({recipe.suite}, recipe {digest[:12]}; log {logfile})")
    start = time.monotonic()
    for attempt in (1, 2):
        with open(logfile, "w", encoding="utf-8") as out:
            res = subprocess.run(
                mmdebstrap_cmd(recipe, mirror, tarball), stdout=out, stderr=subprocess.STDOUT, check=False
            )
        if res.returncode == 0:
            break
        _release_leftover_mounts(logfile)
        if attempt == 1:
            # a busy machine can keep the chroot's /proc busy for a moment at cleanup: once more
            log(f"images: mmdebstrap failed for {recipe.tag} ({_tail(logfile)}); retrying once")
            continue
        raise LabError(f"mmdebstrap failed for {recipe.tag} ({_tail(logfile)}): see {logfile}")
    changes = [*recipe.changes, f"LABEL gpufleet.recipe={digest}", f"LABEL gpufleet.suite={recipe.suite}"]
    previous = _image_id(recipe.tag)
    cmd = ["docker", "import"]
    for change in changes:
        cmd += ["--change", change]
    cmd += [str(tarball), f"{recipe.tag}:latest"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise LabError(f"docker import failed for {recipe.tag}: {res.stderr.strip()}")
    size = os.path.getsize(tarball)
    os.unlink(tarball)
    if previous and previous != _image_id(recipe.tag):
        # the replaced image is now untagged: drop it unless a container still uses it
        subprocess.run(["docker", "image", "rm", previous], capture_output=True, check=False)
    took = time.monotonic() - start
    log(f"images: built {recipe.tag} in {took:.0f}s ({size / 1e6:.0f} MB)")
    return f"built in {took:.0f}s"


def _image_id(tag):
    res = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", tag],
        capture_output=True,
        text=True,
        check=False,
    )
    return res.stdout.strip() if res.returncode == 0 else ""


def _release_leftover_mounts(logfile):
    """Unmount and remove what a failed mmdebstrap left in its temporary directory."""
    try:
        text = logfile.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    for tempdir in sorted(set(re.findall(r"removing tempdir (/\S+?)\.\.\.", text))):
        if not tempdir.startswith("/tmp/mmdebstrap."):
            continue
        unmount_below(tempdir)
        shutil.rmtree(tempdir, ignore_errors=True)


def _tail(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = [ln.strip() for ln in fh if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1][:200] if lines else "no output"
