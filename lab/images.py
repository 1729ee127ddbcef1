"""Debian base images built with mmdebstrap from this machine's apt mirror and `docker import`ed.

Each image has a recipe (suite, packages, hooks, image config). Its sha256 is stored in
the image label `gpufleet.recipe`; an image is rebuilt only when missing or when the
recipe (hence the hash) changed.
"""

import hashlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
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


# ---------------------------------------------------------------------------------------------------
# EL-shaped images: a Debian 12 userland with RHEL 9's package manager stack (Debian packages dnf 4.14, as
# RHEL 9 does, libdnf 0.69 with modularity, the versionlock plugin, rpm 4.18) and an EL identity, so that
# Ansible sees Rocky/RedHat, os_family RedHat, pkg_mgr dnf, and gpufleet's dnf paths run real dnf against
# the lab's signed NVIDIA-layout RPM repository. Not RHEL: no kernel module build, no dracut, no SELinux,
# glibc and the libraries are Debian's (docs/testing.md says what these hosts prove).
# ---------------------------------------------------------------------------------------------------
EL_PACKAGES = (
    "dnf",
    "python3-dnf",
    "python3-libdnf",
    "python3-hawkey",
    "dnf-plugins-core",  # the versionlock plugin (RHEL's python3-dnf-plugin-versionlock)
    "rpm",
    "gnupg",
    "g++",  # nvcc's host compiler (RHEL's gcc-c++ from AppStream; the lab repository has no such package)
)
EL_IDENTITIES = {
    # os-release as Rocky Linux 9.6 and RHEL 10.0 ship it (the fields Ansible and gpufleet's facts read)
    "rocky9": {
        "release": "Rocky Linux release 9.6 (Blue Onyx)",
        "links": ("rocky-release", "system-release"),
        "os_release": {
            "NAME": "Rocky Linux",
            "VERSION": "9.6 (Blue Onyx)",
            "ID": "rocky",
            "ID_LIKE": "rhel centos fedora",
            "VERSION_ID": "9.6",
            "PLATFORM_ID": "platform:el9",
            "PRETTY_NAME": "Rocky Linux 9.6 (Blue Onyx)",
            "CPE_NAME": "cpe:/o:rocky:rocky:9::baseos",
            "REDHAT_SUPPORT_PRODUCT": "Rocky Linux",
            "REDHAT_SUPPORT_PRODUCT_VERSION": "9.6",
        },
        # EL 8/9 keep the rpm database in /var/lib/rpm, EL 10 in /usr/lib/sysimage/rpm
        "dbpath": "/var/lib/rpm",
    },
    "rhel10": {
        "release": "Red Hat Enterprise Linux release 10.0 (Coughlan)",
        "links": ("system-release",),
        "os_release": {
            "NAME": "Red Hat Enterprise Linux",
            "VERSION": "10.0 (Coughlan)",
            "ID": "rhel",
            "ID_LIKE": "centos fedora",
            "VERSION_ID": "10.0",
            "PLATFORM_ID": "platform:el10",
            "PRETTY_NAME": "Red Hat Enterprise Linux 10.0 (Coughlan)",
            "CPE_NAME": "cpe:/o:redhat:enterprise_linux:10::baseos",
            "REDHAT_SUPPORT_PRODUCT": "Red Hat Enterprise Linux 10",
            "REDHAT_SUPPORT_PRODUCT_VERSION": "10.0",
        },
        "dbpath": "/usr/lib/sysimage/rpm",
    },
}
# RHEL's /etc/dnf/dnf.conf (Debian's dnf ships best=False, skip_if_unavailable=True)
EL_DNF_CONF = """[main]
gpgcheck=1
installonly_limit=3
clean_requirements_on_remove=True
best=True
skip_if_unavailable=False
"""
# Where the Debian userland's dpkg database goes: an EL host has none, and gpufleet's facts take a dpkg
# database for apt (probe/packages.package_manager). Kept in the image for whoever debugs it.
EL_HIDDEN_DPKG = "/usr/lib/gpufleet-lab/dpkg"


# An EL host's rpm database lists its base system; an EL-shaped one has Debian's packages in dpkg's. What
# NVIDIA's packages and gpufleet's roles ask rpm and dnf for (scriptlet interpreters, ldconfig, the
# versionlock plugin's package) is provided by one stand-in package in the rpm database, built and installed
# in the image.
EL_BASE_PACKAGE = "gpufleet-lab-el-base"
EL_BASE_PROVIDES = (
    "/bin/sh",
    "/bin/bash",
    "/usr/bin/sh",
    "/sbin/ldconfig",
    "/usr/sbin/ldconfig",
    "bash",
    "coreutils",
    "glibc",
    "systemd",
    "python3",
    "rpm",
    "dnf",
    "gnupg2",
    "python3-dnf-plugin-versionlock",
)
EL_BASE_SPEC = f"""Name: {EL_BASE_PACKAGE}
Version: 1
Release: 1
Summary: gpufleet lab: the base system of an EL-shaped host, as the rpm database sees it
License: MIT
BuildArch: noarch
AutoReqProv: no
{chr(10).join(f"Provides: {p}" for p in EL_BASE_PROVIDES)}

%description
A stand-in: the Debian userland of a gpufleet lab EL-shaped host provides these (dpkg installed them).

%files
"""


def el_base_hooks(dbpath):
    """Build the base stand-in with the image's rpmbuild and install it into the image's rpm database."""
    built = f"/root/rpmbuild/RPMS/noarch/{EL_BASE_PACKAGE}-*"
    return (
        _sh_write(f"/root/{EL_BASE_PACKAGE}.spec", EL_BASE_SPEC),
        f'chroot "$1" rpmbuild -bb --quiet --define "_topdir /root/rpmbuild" /root/{EL_BASE_PACKAGE}.spec',
        f'chroot "$1" sh -c "rpm -i --nodeps --dbpath {dbpath} {built}"',
        f'rm -rf "$1/root/rpmbuild" "$1/root/{EL_BASE_PACKAGE}.spec"',
    )


def _sh_write(path, text):
    return f'printf %s {shlex.quote(text)} > "$1{path}"'


def el_hooks(identity):
    """mmdebstrap customize hooks that give a Debian root the EL identity ``identity`` (EL_IDENTITIES)."""
    ident = EL_IDENTITIES[identity]
    os_release = "".join(f'{k}="{v}"\n' for k, v in ident["os_release"].items())
    major = ident["os_release"]["VERSION_ID"].split(".")[0]
    macros = f"%_dbpath {ident['dbpath']}\n%__gpg /usr/bin/gpg\n"
    hooks = [
        # /etc/os-release -> ../usr/lib/os-release, as on RHEL (Debian's base-files one replaced)
        'rm -f "$1/etc/os-release" "$1/usr/lib/os-release" "$1/etc/debian_version" "$1/etc/lsb-release"',
        _sh_write("/usr/lib/os-release", os_release),
        'ln -sf ../usr/lib/os-release "$1/etc/os-release"',
        _sh_write("/etc/redhat-release", ident["release"] + "\n"),
        *(f'ln -sf redhat-release "$1/etc/{link}"' for link in ident["links"]),
        # dnf's $releasever: Debian's dnf has no system-release package to read it from
        'mkdir -p "$1/etc/dnf/vars" "$1/etc/yum.repos.d" "$1/etc/pki/rpm-gpg" "$1/etc/rpm"',
        _sh_write("/etc/dnf/vars/releasever", major + "\n"),
        # Debian's rpm keeps its database in ~/.rpmdb; EL's is system-wide. Debian's %__gpg names gpg2.
        _sh_write("/etc/rpm/macros.gpufleet-lab-el", macros),
        f'mkdir -p "$1{ident["dbpath"]}"',
        f'chroot "$1" rpm --initdb --dbpath {ident["dbpath"]}',
        *el_base_hooks(ident["dbpath"]),
        _sh_write("/etc/dnf/dnf.conf", EL_DNF_CONF),
        # Debian's dnf-plugins-core enables plugins RHEL ships in packages it does not install by default
        'for p in local post-transaction-actions; do f="$1/etc/dnf/plugins/$p.conf"; '
        'if [ -f "$f" ]; then sed -i "s/^enabled *=.*/enabled = 0/" "$f"; fi; done',
        # glibc on RHEL searches /usr/lib64 (NVIDIA's RPMs put libraries there); Debian's does not
        'mkdir -p "$1/etc/ld.so.conf.d" "$1/usr/lib64"',
        _sh_write("/etc/ld.so.conf.d/gpufleet-lab-el-lib64.conf", "/usr/lib64\n"),
        # no apt sources and no dpkg database: gpufleet's facts must see an rpm host
        'rm -rf "$1/etc/apt/sources.list" "$1/etc/apt/sources.list.d"',
        f'mkdir -p "$1{EL_HIDDEN_DPKG}" && mv "$1/var/lib/dpkg/status" "$1{EL_HIDDEN_DPKG}/status"',
    ]
    return tuple(hooks)


# ---------------------------------------------------------------------------------------------------
# Ubuntu-shaped images: a Debian 12 userland (apt, python3-apt, dpkg) with an Ubuntu identity, so that
# Ansible sees distribution Ubuntu, os_family Debian, pkg_mgr apt, and gpufleet's plans take their Ubuntu
# branch (NVIDIA's ubuntu2404/ubuntu2204 repositories, the driver's Ubuntu names and pin package). Not Ubuntu:
# the packages, the kernel and the archive (the image's apt sources stay Debian's) are Debian's.
# ---------------------------------------------------------------------------------------------------
UBUNTU_IDENTITIES = {
    # os-release and lsb-release as Ubuntu 24.04.3 and 22.04.5 ship them (the fields Ansible and gpufleet's
    # facts read); /etc/debian_version as Ubuntu's base-files has it
    "ubuntu2404": {
        "os_release": {
            "PRETTY_NAME": "Ubuntu 24.04.3 LTS",
            "NAME": "Ubuntu",
            "VERSION_ID": "24.04",
            "VERSION": "24.04.3 LTS (Noble Numbat)",
            "VERSION_CODENAME": "noble",
            "ID": "ubuntu",
            "ID_LIKE": "debian",
            "UBUNTU_CODENAME": "noble",
        },
        "debian_version": "trixie/sid",
    },
    "ubuntu2204": {
        "os_release": {
            "PRETTY_NAME": "Ubuntu 22.04.5 LTS",
            "NAME": "Ubuntu",
            "VERSION_ID": "22.04",
            "VERSION": "22.04.5 LTS (Jammy Jellyfish)",
            "VERSION_CODENAME": "jammy",
            "ID": "ubuntu",
            "ID_LIKE": "debian",
            "UBUNTU_CODENAME": "jammy",
        },
        "debian_version": "bookworm/sid",
    },
}


def ubuntu_hooks(identity):
    """mmdebstrap customize hooks that give a Debian root the Ubuntu identity ``identity``."""
    ident = UBUNTU_IDENTITIES[identity]["os_release"]
    os_release = "".join(f'{k}="{v}"\n' for k, v in ident.items())
    lsb = (
        f"DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE={ident['VERSION_ID']}\nDISTRIB_CODENAME={ident['VERSION_CODENAME']}\n"
        f'DISTRIB_DESCRIPTION="{ident["PRETTY_NAME"]}"\n'
    )
    return (
        'rm -f "$1/etc/os-release" "$1/usr/lib/os-release"',
        _sh_write("/usr/lib/os-release", os_release),
        'ln -sf ../usr/lib/os-release "$1/etc/os-release"',
        _sh_write("/etc/lsb-release", lsb),
        _sh_write("/etc/debian_version", UBUNTU_IDENTITIES[identity]["debian_version"] + "\n"),
    )


@dataclass(frozen=True)
class Recipe:
    name: str
    suite: str
    systemd: bool
    packages: tuple = field(default=())
    hooks: tuple = field(default=())
    changes: tuple = field(default=())
    # built only when named (`python -m lab images <name>`, the scenarios that use it), not by `lab up`
    on_demand: bool = False
    # the Debian architecture: another than amd64 is built and run under QEMU user emulation
    arch: str = "amd64"

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
        if self.arch != "amd64":  # only where set: the amd64 images' digests stay what they were
            doc["arch"] = self.arch
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


def _el_recipe(name, identity):
    # BASE_PACKAGES without python3-apt (an EL host has no apt for Ansible to drive), the EL stack, systemd
    base = tuple(p for p in BASE_PACKAGES if p != "python3-apt")
    return Recipe(
        name=name,
        suite="bookworm",
        systemd=True,
        packages=base + SYSTEMD_PACKAGES + EL_PACKAGES,
        # the systemd hooks first (they enable ssh.service through systemctl), the identity last
        hooks=SYSTEMD_HOOKS + el_hooks(identity),
        changes=SYSTEMD_CHANGES,
        on_demand=True,
    )


def _ubuntu_recipe(name, identity):
    # the systemd image's packages and g++ (nvcc's host compiler: the lab network has no Ubuntu archive)
    return Recipe(
        name=name,
        suite="bookworm",
        systemd=True,
        packages=BASE_PACKAGES + SYSTEMD_PACKAGES + ("g++",),
        hooks=SYSTEMD_HOOKS + ubuntu_hooks(identity),
        changes=SYSTEMD_CHANGES,
        on_demand=True,
    )


# Under QEMU user emulation systemd cannot set up the credentials of three units at boot (each fails with
# status 243/CREDENTIALS: "Failed at step CREDENTIALS spawning ...: Invalid argument") and ends "degraded";
# the lab masks them (the image's users and files exist already: nothing a lab container needs from them).
ARM64_MASKED = (
    "systemd-sysusers.service", "systemd-tmpfiles-setup.service", "systemd-tmpfiles-setup-dev.service",
)  # fmt: skip


def _arm64_recipe(name, identity=None):
    # an Arm server's userland (Debian 12 arm64) with systemd like the other lab hosts, and g++ (nvcc's host
    # compiler: emulated apt-get is slow, and the lab network has no archive); with ``identity``, an
    # Ubuntu-shaped one (a GH200 node's Ubuntu 24.04: NVIDIA's ubuntu2404/sbsa repository)
    identity_hooks = ubuntu_hooks(identity) if identity else ()
    return Recipe(
        name=name,
        suite="bookworm",
        systemd=True,
        packages=BASE_PACKAGES + SYSTEMD_PACKAGES + ("g++",),
        hooks=(*SYSTEMD_HOOKS, f'chroot "$1" systemctl mask {" ".join(ARM64_MASKED)}', *identity_hooks),
        changes=SYSTEMD_CHANGES,
        on_demand=True,
        arch="arm64",
    )


RECIPES = {
    r.name: r
    for r in (
        _recipe("debian12", "bookworm", False),
        _recipe("debian12-systemd", "bookworm", True),
        _recipe("debian13", "trixie", False),
        _recipe("debian13-systemd", "trixie", True),
        _el_recipe("el9-systemd", "rocky9"),
        _el_recipe("el10-systemd", "rhel10"),
        _ubuntu_recipe("ubuntu2404-systemd", "ubuntu2404"),
        _ubuntu_recipe("ubuntu2204-systemd", "ubuntu2204"),
        _arm64_recipe("debian12-arm64-systemd"),
        _arm64_recipe("ubuntu2404-arm64-systemd", "ubuntu2404"),
    )
}


def resolve(names):
    """Recipes for the given names (every image `lab up` builds when empty: not the on-demand ones); one-line
    LabError for an unknown name."""
    if not names:
        return [r for r in RECIPES.values() if not r.on_demand]
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
    if recipe.arch != "amd64":
        cmd.append(f"--arch={recipe.arch}")
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
    for arch in sorted({r.arch for r in recipes} - {"amd64"}):
        engine.ensure_foreign_arch(arch, log)
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
    if recipe.arch == "amd64":
        cmd = ["docker", "import"]
        for change in changes:
            cmd += ["--change", change]
        cmd += [str(tarball), f"{recipe.tag}:latest"]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    else:
        res = docker_load(tarball, recipe.arch, f"{recipe.tag}:latest", changes)
    if res.returncode != 0:
        raise LabError(f"loading {recipe.tag} into docker failed: {res.stderr.strip()}")
    size = os.path.getsize(tarball)
    os.unlink(tarball)
    if previous and previous != _image_id(recipe.tag):
        # the replaced image is now untagged: drop it unless a container still uses it
        subprocess.run(["docker", "image", "rm", previous], capture_output=True, check=False)
    took = time.monotonic() - start
    log(f"images: built {recipe.tag} in {took:.0f}s ({size / 1e6:.0f} MB)")
    return f"built in {took:.0f}s"


def image_config(arch, changes, diff_id, created):
    """The image config (docker save format) of a one-layer image of ``arch``: ``changes`` are the ENV, CMD
    and LABEL instructions `docker import --change` takes for amd64."""
    config = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], "Labels": {}}
    for change in changes:
        key, _, value = change.partition(" ")
        if key == "ENV":
            config["Env"].append(value)
        elif key == "CMD":
            config["Cmd"] = json.loads(value)
        elif key == "LABEL":
            name, _, label = value.partition("=")
            config["Labels"][name] = label
        else:
            raise LabError(f"image change {change!r}: only ENV, CMD and LABEL are supported ({arch} image)")
    doc = {
        "architecture": arch,
        "os": "linux",
        "created": created,
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": created, "created_by": f"mmdebstrap --arch={arch} (gpufleet lab)"}],
    }
    if arch == "arm64":
        doc["variant"] = "v8"
    return doc


def docker_load(tarball, arch, tag, changes):
    """Load the root tarball as a one-layer image labelled ``arch``, through a docker save archive: `docker
    import` labels every image with the daemon's own architecture (dockerd 20.10 ignores --platform), and a
    container of a mislabelled image looks for it in a registry."""
    sha = hashlib.sha256()
    with open(tarball, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            sha.update(chunk)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    config = json.dumps(image_config(arch, changes, f"sha256:{sha.hexdigest()}", created)).encode()
    config_name = hashlib.sha256(config).hexdigest() + ".json"
    layer = f"{sha.hexdigest()}/layer.tar"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": [layer]}]).encode()
    proc = subprocess.Popen(["docker", "load"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    with tarfile.open(fileobj=proc.stdin, mode="w|") as out:
        for name, data in ((config_name, config), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), int(time.time())
            out.addfile(info, io.BytesIO(data))
        with open(tarball, "rb") as fh:
            info = out.gettarinfo(fileobj=fh, arcname=layer)
            info.mode, info.uid, info.gid, info.uname, info.gname = 0o644, 0, 0, "root", "root"
            out.addfile(info, fh)
    stdout, stderr = proc.communicate()  # closes stdin: the end of the archive
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout.decode(), stderr.decode())


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
