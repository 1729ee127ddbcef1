"""The lab's DKMS build cache: NVIDIA's kernel modules compiled once at native speed, replayed in TCG guests.

Under software emulation the DKMS build of Debian's nvidia-kernel-dkms takes about an hour (most of it the
driver's conftest, hundreds of small compiles), natively a few minutes. ``record`` installs the guest's
kernel headers and the driver's DKMS package into a throwaway mmdebstrap chroot of the same Debian release,
with ``data/dkms-make-cache.sh`` as ``/usr/bin/make`` (make's own diverted): DKMS's make there compiles and
keeps the modules under a key of the sources, make arguments, kernel headers (Module.symvers) and compiler.
``seed`` copies the same wrapper and the kept modules into a guest in replay mode. In the guest the role
runs as anywhere: apt installs the package, its postinst runs dkms, dkms runs make, and the wrapper gives
back the modules for a matching key (any mismatch compiles for real). DKMS then signs (MOK), installs, runs
depmod and the initramfs hooks itself.

Cache: ``.lab/vm/dkms-cache/<dist>/<kernel release>/<key>.tar`` plus a stamp per (package, kernel) recorded.
"""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

from lab import LabError, aptsources, run_logged, vm, vmdisk

WRAPPER = Path(__file__).with_name("data") / "dkms-make-cache.sh"
GUEST_CACHE = "/var/cache/gpufleet-lab/dkms"
CACHE_DIR = vm.VM_DIR / "dkms-cache"
# make's /usr/bin/make goes to /usr/bin/make.distrib when its package unpacks; the wrapper takes its place
DIVERT = "dpkg-divert --local --rename --divert /usr/bin/make.distrib --add /usr/bin/make"
# The DKMS package of each kernel module flavor on Debian (non-free / contrib), as the role's plan names them.
PACKAGES = {"proprietary": "nvidia-kernel-dkms", "open": "nvidia-open-kernel-dkms"}


def validate_flavor(flavor):
    if flavor not in PACKAGES:
        raise LabError(f"--flavor {flavor!r}: allowed {', '.join(PACKAGES)}", 2)
    return flavor


def validate_release(release):
    if not release or any(c not in "abcdefghijklmnopqrstuvwxyz0123456789.-+_" for c in release):
        raise LabError(f"--kernel {release!r}: not a kernel release (e.g. 6.1.0-57-amd64)", 2)
    return release


def stamp(dist, flavor, release):
    return CACHE_DIR / dist / f"{PACKAGES[flavor]}-{release}.done"


def record_cmd(dist, flavor, releases, mirror, cache):
    """mmdebstrap into a temporary chroot (format null: nothing kept) that builds and keeps the modules."""
    package = PACKAGES[flavor]
    headers = [f"linux-headers-{r}" for r in releases]
    setup = f'chmod 0755 "$1/usr/bin/make" && mkdir -p "$1{GUEST_CACHE}"'
    setup += f' && echo record > "$1{GUEST_CACHE}/mode"'
    build = " && ".join(f'chroot "$1" dkms autoinstall -k {shlex.quote(r)}' for r in releases)
    comps = vmdisk.COMPONENTS
    cmd = [
        "mmdebstrap",
        "--variant=apt",
        "--mode=root",
        "--format=null",
        "--aptopt=APT::Install-Recommends false",
        f"--include=dkms,{','.join(headers)}",
        f'--essential-hook=chroot "$1" {DIVERT}',
        f"--essential-hook=upload {WRAPPER} /usr/bin/make",
        f"--essential-hook={setup}",
        f'--customize-hook=chroot "$1" apt-get install -y --no-install-recommends {package}',
        f"--customize-hook={build}",
        f"--customize-hook=sync-out {GUEST_CACHE} {cache}",
        vmdisk.validate_dist(dist),
        "/dev/null",
        f"deb {mirror.archive} {dist} {comps}",
        f"deb {mirror.archive} {dist}-updates {comps}",
    ]
    if mirror.security:
        cmd.append(f"deb {mirror.security} {dist}-security {comps}")
    return cmd


def record(dist, flavor, releases, log=print):
    """Build and keep the modules of ``flavor`` for each kernel release (skipped when already recorded)."""
    flavor = validate_flavor(flavor)
    releases = [validate_release(r) for r in releases]
    todo = [r for r in releases if not stamp(dist, flavor, r).exists()]
    if not todo:
        log(f"vm: DKMS cache for {PACKAGES[flavor]} on {dist} {' '.join(releases)} already recorded")
        return 0.0
    cache = CACHE_DIR / dist
    cache.mkdir(parents=True, exist_ok=True)
    logfile = CACHE_DIR / f"record-{dist}.log"
    began = time.monotonic()
    log(f"vm: recording the DKMS cache for {PACKAGES[flavor]} on {dist} {' '.join(todo)} (log {logfile})")
    with open(logfile, "w", encoding="utf-8") as out:
        cmd = record_cmd(dist, flavor, todo, aptsources.debian_mirror(aptsources.read_sources()), cache)
        run_logged(cmd, out, logfile, "DKMS cache recording")
    for release in todo:
        kept = list((cache / release).glob("*.tar"))
        if not kept:
            raise LabError(f"DKMS cache: no modules were kept for {release}: see {logfile}")
        stamp(dist, flavor, release).write_text(" ".join(p.name for p in kept) + "\n", encoding="utf-8")
    took = time.monotonic() - began
    log(f"vm: DKMS cache recorded in {took:.0f}s")
    return took


def seed_script():
    return (
        f"set -e; mkdir -p {GUEST_CACHE}; tar -C {GUEST_CACHE} -xf -; "
        f"{DIVERT}; install -m 0755 {GUEST_CACHE}/dkms-make-cache.sh /usr/bin/make; "
        f"echo replay > {GUEST_CACHE}/mode; ls {GUEST_CACHE}"
    )


def seed(name, log=print):
    """Copy the wrapper and this dist's kept modules into running guest ``name`` (replay mode)."""
    guest = vm._running(name)
    cache = CACHE_DIR / guest.dist
    if not cache.is_dir():
        raise LabError(f"no DKMS cache for {guest.dist}: `python -m lab vm dkms-cache {name}` records it")
    tar = ["tar", "-cf", "-", "-C", str(cache), "--exclude=mode", "--exclude=*.done", "."]
    tar += ["-C", str(WRAPPER.parent), WRAPPER.name]
    began = time.monotonic()
    with subprocess.Popen(tar, stdout=subprocess.PIPE) as pack:
        res = subprocess.run(vm.ssh_cmd(guest, [seed_script()]), stdin=pack.stdout, capture_output=True,
                             text=True, check=False)  # fmt: skip
    if pack.returncode or res.returncode:
        raise LabError(f"seeding the DKMS cache into {name} failed: {res.stderr.strip()[-300:]}")
    log(f"vm: {name}: DKMS cache seeded ({time.monotonic() - began:.0f}s)")


def kernels_of(name):
    """The kernel releases in running guest ``name`` that have headers (a /lib/modules/<r>/build link)."""
    guest = vm._running(name)
    listing = "for d in /lib/modules/*/build; do basename ${d%/build}; done"
    code, out = vm._ssh_out(guest, [listing])
    if code != 0 or not out:
        raise LabError(f"{name}: cannot list its kernels with headers")
    return out.split()


def cache_guest(name, flavor="proprietary", also=(), log=print):
    """Record (when missing) for every kernel with headers in guest ``name`` and for the releases ``also``
    (kernels a scenario installs later, e.g. a kernel update), then seed it."""
    also = [validate_release(r) for r in also]
    guest = vm._running(name)
    releases = kernels_of(name)
    record(guest.dist, flavor, releases + [r for r in also if r not in releases], log=log)
    seed(name, log=log)
