"""Docker Engine: find it, or install and start it when we may (root on Debian/Ubuntu)."""

import os
import shutil
import subprocess
import time

from lab import STATE, LabError

DOCKERD = "/usr/sbin/dockerd"


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=False, **kw)


def docker_answers():
    """True when the docker CLI exists and the daemon answers."""
    if not shutil.which("docker"):
        return False
    return _run(["docker", "info", "--format", "{{.ServerVersion}}"], timeout=30).returncode == 0


def os_release(path="/etc/os-release"):
    data = {}
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                key, sep, value = line.strip().partition("=")
                if sep:
                    data[key] = value.strip().strip('"')
    except OSError:
        pass
    return data


def is_debian_like(release):
    ids = {release.get("ID", "")} | set(release.get("ID_LIKE", "").split())
    return bool(ids & {"debian", "ubuntu"})


def what_to_do(euid, release):
    """The one-line advice when we may not install/start docker ourselves, or None when we may."""
    if not is_debian_like(release):
        return (
            "docker is not running and this is not Debian/Ubuntu: install Docker Engine, start it, "
            "check that `docker info` answers, then rerun"
        )
    if euid != 0:
        return (
            "docker is not running: run `sudo python3 -m lab docker` (installs docker.io and starts "
            "dockerd), or `sudo apt-get install docker.io && sudo systemctl start docker`, and add "
            "yourself to the docker group"
        )
    return None


def apt_install(packages):
    """apt-get install (running apt-get update first when the install fails); LabError on failure."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # the VM scenarios run beside the rest of make test: wait for another apt instead of failing
    cmd = ["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "--no-install-recommends", *packages]
    res = _run(cmd, env=env)
    if res.returncode != 0:
        _run(["apt-get", "-o", "DPkg::Lock::Timeout=600", "update"], env=env)
        res = _run(cmd, env=env)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["?"])[-1]
        raise LabError(f"apt-get install {' '.join(packages)} failed ({last}): fix apt, then rerun", code=2)


def ensure_tool(binary, packages, log=print):
    """Make `binary` available: apt-get install `packages` when root on Debian/Ubuntu, else advise."""
    if shutil.which(binary):
        return
    if os.geteuid() != 0 or not is_debian_like(os_release()):
        raise LabError(f"{binary} not found: install {' '.join(packages)} (as root), then rerun", code=2)
    log(f"lab: installing {' '.join(packages)}")
    apt_install(packages)


# Foreign-architecture images and containers (arm64 on this x86_64 machine): QEMU user emulation through the
# kernel's binfmt_misc, the F flag loading the interpreter at registration so that it works inside containers;
# arch-test, which mmdebstrap needs for a foreign --arch.
FOREIGN_PACKAGES = ("qemu-user-static", "binfmt-support", "arch-test")
BINFMT_DIR = "/proc/sys/fs/binfmt_misc"
QEMU_HANDLERS = {"arm64": "qemu-aarch64"}


def binfmt_flags(text):
    """The flags of a binfmt_misc entry's text ("enabled\ninterpreter ...\nflags: PF\n..."), or None when
    the entry is disabled or has no flags line."""
    lines = (text or "").splitlines()
    if not lines or lines[0].strip() != "enabled":
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("flags:")), None)


def ensure_foreign_arch(arch, log=print):
    """Make containers and mmdebstrap of ``arch`` (arm64) run here: the packages, binfmt_misc mounted and the
    QEMU handler enabled with the F flag; LabError naming what to do otherwise."""
    handler = QEMU_HANDLERS.get(arch)
    if handler is None:
        raise LabError(f"architecture {arch!r}: the lab emulates {', '.join(QEMU_HANDLERS)} only")
    ensure_tool(f"{handler}-static", list(FOREIGN_PACKAGES), log)
    if not shutil.which("arch-test"):
        ensure_tool("arch-test", ["arch-test"], log)
    entry = os.path.join(BINFMT_DIR, handler)
    if not os.path.exists(os.path.join(BINFMT_DIR, "register")):
        _run(["mount", "-t", "binfmt_misc", "binfmt_misc", BINFMT_DIR])
    if binfmt_flags(_read(entry)) is None:
        _run(["update-binfmts", "--enable", handler])
    flags = binfmt_flags(_read(entry))
    if flags is None or "F" not in flags:
        raise LabError(
            f"{entry}: the {arch} emulation is not registered with the F flag (flags {flags!r}): as root, "
            f"`update-binfmts --enable {handler}` after installing {' '.join(FOREIGN_PACKAGES)}",
            code=2,
        )
    return flags


def _read(path):
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def ensure(timeout=90, log=print):
    """Make `docker info` answer; install docker.io and start dockerd when root on Debian/Ubuntu."""
    if docker_answers():
        log("docker: engine answers")
        return
    advice = what_to_do(os.geteuid(), os_release())
    if advice:
        raise LabError(advice, code=2)
    if not os.path.exists(DOCKERD) or not shutil.which("docker"):
        log("docker: installing docker.io")
        apt_install(["docker.io"])
    STATE.mkdir(parents=True, exist_ok=True)
    logfile = STATE / "dockerd.log"
    log(f"docker: starting dockerd (log: {logfile})")
    with open(logfile, "ab") as out:
        subprocess.Popen(
            [DOCKERD],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if docker_answers():
            log("docker: engine answers")
            return
        time.sleep(1)
    raise LabError(f"dockerd started but did not answer within {timeout}s: see {logfile}", code=2)


def client():
    """A docker SDK client; a LabError (not a traceback) when the engine is down."""
    import docker

    try:
        cli = docker.from_env(timeout=300)
        cli.ping()
    except Exception as exc:  # docker raises several unrelated types here
        name = exc.__class__.__name__
        raise LabError(f"docker engine not reachable ({name}): run `python -m lab docker`", 2) from exc
    return cli


# Every systemd container takes several inotify instances; the kernel default of 128 per
# user stops booting at about 15 lab containers ("Failed to create inotify object").
INOTIFY = "/proc/sys/fs/inotify/max_user_instances"
INOTIFY_MIN = 1024


def ensure_inotify(log=print, path=INOTIFY, minimum=INOTIFY_MIN):
    """Raise fs.inotify.max_user_instances to `minimum` (root), or say how."""
    try:
        with open(path, encoding="ascii") as fh:
            current = int(fh.read().strip())
    except (OSError, ValueError):
        return
    if current >= minimum:
        return
    try:
        with open(path, "w", encoding="ascii") as fh:
            fh.write(str(minimum))
    except OSError as exc:
        raise LabError(
            f"fs.inotify.max_user_instances is {current}, too low for many systemd containers: "
            f"run `sudo sysctl fs.inotify.max_user_instances={minimum}`, then rerun",
            code=2,
        ) from exc
    log(f"docker: raised fs.inotify.max_user_instances {current} -> {minimum} (systemd containers need it)")
