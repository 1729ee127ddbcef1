"""VM guests: Debian 12/13 under QEMU that boot through UEFI (OVMF) + GRUB from their own disk.

Each guest is a qcow2 overlay on a cached base disk (lab/vmdisk.py), its own copy of the OVMF
variables, a pidfile, a serial console log and a monitor socket, all in ``.lab/vm/guests/<name>/``.
SSH: the lab key, root, a port on 127.0.0.1 forwarded to the guest's port 22 (QEMU user-mode
network, through which the guest also reaches the Debian mirror). KVM when it really works,
otherwise QEMU's software emulation (TCG). The running guests are written to ``.lab/vm-inventory.yml``
in the lab hosts' inventory format (group ``lab_hosts`` -> ``lab_vms``).
"""

import contextlib
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import asdict, dataclass

from lab import STATE, LabError, engine, lock_file, vmdisk, vmmok
from lab.hosts import SSH_OPTS, ensure_key, inventory_vars

VM_DIR = STATE / "vm"
GUESTS_DIR = VM_DIR / "guests"
CONSOLES_DIR = VM_DIR / "consoles"  # a deleted guest's last serial console log (its boots, for a failed run)
INVENTORY = STATE / "vm-inventory.yml"
QEMU = "qemu-system-x86_64"
OVMF_DIR = "/usr/share/OVMF"
FIRMWARE = {
    False: ("OVMF_CODE_4M.fd", "OVMF_VARS_4M.fd"),
    True: ("OVMF_CODE_4M.secboot.fd", "OVMF_VARS_4M.ms.fd"),  # Microsoft's keys enrolled (Debian's shim)
}
ACCELS = ("auto", "kvm", "tcg")
MEMORY_MIB = 2048
CPUS = 2
BOOT_TIMEOUT = 600
# ssh to a guest: a reboot through QEMU's user-mode network can leave the connection (and the ControlMaster
# every later ssh goes through) open with nobody behind it; keepalives end it within 15 s (driver-vm's reboot
# once waited on one for its whole timeout). The lab's VM inventory, ssh_cmd and the driver-vm scenarios'
# group_vars use these (tests/unit/lab/test_vm.py holds the group_vars to them).
SSH_KEEPALIVE = ("-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3")
MAX_NAME = 40
# ioctls of /dev/kvm (linux/kvm.h): _IO(0xAE, 0x00) and _IO(0xAE, 0x01)
KVM_GET_API_VERSION = 0xAE00
KVM_CREATE_VM = 0xAE01
KVM_API_VERSION = 12


@dataclass
class Guest:
    name: str
    dist: str
    base: str
    port: int
    accel: str = "tcg"
    secure_boot: bool = False

    @property
    def dir(self):
        return GUESTS_DIR / self.name

    @property
    def disk(self):
        return self.dir / "disk.qcow2"

    @property
    def vars(self):
        return self.dir / "OVMF_VARS.fd"

    @property
    def pidfile(self):
        return self.dir / "qemu.pid"

    @property
    def console(self):
        return self.dir / "console.log"

    @property
    def monitor(self):
        return self.dir / "monitor.sock"


def validate_name(name):
    ok = name and len(name) <= MAX_NAME and name[0].isalpha() and name[-1].isalnum()
    if not ok or not all(c.isalnum() or c == "-" for c in name):
        raise LabError(
            f"guest name {name!r}: use letters, digits and '-' (at most {MAX_NAME}), starting with a letter"
        )
    return name


def validate_accel(accel):
    if accel not in ACCELS:
        raise LabError(f"--accel {accel!r}: choose from {', '.join(ACCELS)}")
    return accel


# --- accelerator -------------------------------------------------------------------------------------


def kvm_facts(dev="/dev/kvm", sys_module="/sys/module", cpuinfo="/proc/cpuinfo"):
    """What decides whether KVM can run an OVMF guest here (read, and one KVM_CREATE_VM probe)."""
    facts = {"dev": os.path.exists(dev), "api": None, "create_vm": False}
    facts["pvm"] = os.path.isdir(os.path.join(sys_module, "kvm_pvm"))
    try:
        with open(cpuinfo, encoding="utf-8") as fh:
            flags = {w for line in fh if line.startswith("flags") for w in line.split(":", 1)[1].split()}
    except OSError:
        flags = set()
    facts["cpu_virt"] = bool(flags & {"vmx", "svm"})
    if facts["dev"]:
        try:
            fd = os.open(dev, os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            return facts
        try:
            facts["api"] = fcntl.ioctl(fd, KVM_GET_API_VERSION)
            os.close(fcntl.ioctl(fd, KVM_CREATE_VM, 0))
            facts["create_vm"] = True
        except OSError:
            pass
        finally:
            os.close(fd)
    return facts


def kvm_problem(facts):
    """Why KVM cannot run a UEFI guest here, or None when it can."""
    checks = (
        (not facts["dev"], "no /dev/kvm"),
        (
            facts["pvm"],
            "/dev/kvm is served by kvm_pvm, which runs only PVM kernels by direct boot (not OVMF)",
        ),
        (not facts["cpu_virt"], "the CPU shows no vmx/svm (no hardware virtualisation)"),
        (facts["api"] is None, "/dev/kvm cannot be opened read-write"),
        (facts["api"] != KVM_API_VERSION, f"KVM API version {facts['api']} (want {KVM_API_VERSION})"),
        (not facts["create_vm"], "KVM_CREATE_VM failed"),
    )
    return next((why for failed, why in checks if failed), None)


def choose_accel(request, facts):
    """(accel, reason): kvm when it works, tcg otherwise; LabError when kvm is asked for and fails."""
    validate_accel(request)
    if request == "tcg":
        return "tcg", "asked for (--accel tcg)"
    problem = kvm_problem(facts)
    if problem is None:
        return "kvm", "/dev/kvm works (hardware virtualisation)"
    if request == "kvm":
        raise LabError(f"--accel kvm: {problem}: use --accel tcg (software emulation) or auto", 2)
    return "tcg", f"software emulation: {problem}"


# --- QEMU ---------------------------------------------------------------------------------------------


def firmware(secure_boot, ovmf_dir=OVMF_DIR):
    code, varstore = (os.path.join(ovmf_dir, f) for f in FIRMWARE[secure_boot])
    for path in (code, varstore):
        if not os.path.exists(path):
            raise LabError(f"UEFI firmware {path} missing: install ovmf (as root), then rerun", 2)
    return code, varstore


# Why make test's background work is niced per session, not only per process (said here once; the guests'
# QEMU and scripts/test_stages.sh's bg: stages, BG_NICE, both rely on it): where the kernel groups processes
# by session (sched_autogroup_enabled, as on Debian's kernels) it shares the CPUs between sessions first and
# applies a nice only inside one. QEMU -daemonize and a setsid'd stage are sessions of their own, so under a
# plain nice 10 each took as much CPU as the whole foreground (measured; the changelog has the figures);
# their autogroup's nice, /proc/PID/autogroup, is what counts.
NICE = 10


def set_autogroup_nice(pid, nice=NICE, proc="/proc", log=None):
    """Give the autogroup (session) of ``pid`` the nice ``nice`` (NICE above says why); True when written,
    False where the kernel has no autogroups or refuses, e.g. EINVAL for a process in its default group, one
    whose session never called setsid (a nice is only a preference: QEMU runs the same either way; ``log``
    gets why)."""
    path = os.path.join(proc, str(pid), "autogroup")
    try:
        with open(path, "w", encoding="ascii") as fh:
            fh.write(f"{nice}\n")
    except OSError as err:
        if log is not None:
            log(f"vm: pid {pid} keeps its session's nice: {path}: {err.strerror or err}")
        return False
    return True


def qemu_cmd(guest, accel, code, nice=NICE):
    """The QEMU command line of ``guest`` (daemonized; console to a file; SSH on 127.0.0.1:port)."""
    machine = "q35,smm=on" if guest.secure_boot else "q35"
    cmd = ["nice", "-n", str(nice), QEMU, "-name", f"guest={guest.name}", "-machine", machine]
    cmd += (
        ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else ["-accel", "tcg,thread=multi", "-cpu", "max"]
    )
    cmd += ["-m", str(MEMORY_MIB), "-smp", str(CPUS)]
    if guest.secure_boot:
        cmd += ["-global", "driver=cfi.pflash01,property=secure,value=on"]
    cmd += [
        "-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={code}",
        "-drive", f"if=pflash,format=raw,unit=1,file={guest.vars}",
        "-drive", f"file={guest.disk},format=qcow2,if=virtio,discard=unmap",
        "-netdev", f"user,id=net0,hostfwd=tcp:127.0.0.1:{guest.port}-:22",
        "-device", "virtio-net-pci,netdev=net0",
        "-device", "virtio-rng-pci",
        "-display", "none",
        "-serial", f"file:{guest.console}",
        "-monitor", f"unix:{guest.monitor},server=on,wait=off",
        "-pidfile", str(guest.pidfile),
        "-daemonize",
    ]  # fmt: skip
    return cmd


def free_port(preferred=None):
    """``preferred`` when nothing listens there on 127.0.0.1, else a port the kernel picks."""
    for port in ([preferred] if preferred else []) + [0]:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise LabError("no free TCP port on 127.0.0.1")


# --- state --------------------------------------------------------------------------------------------


def vm_lock(log=print):
    """One VM-changing step at a time per lab (not the lab lock: a 2-minute build must not block hosts)."""
    return lock_file(VM_DIR / "vm.lock", "vm", log)


def load(name):
    path = GUESTS_DIR / name / "guest.json"
    try:
        return Guest(**json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def save(guest):
    guest.dir.mkdir(parents=True, exist_ok=True)
    tmp = guest.dir / "guest.json.part"
    tmp.write_text(json.dumps(asdict(guest), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, guest.dir / "guest.json")


def all_guests():
    if not GUESTS_DIR.is_dir():
        return []
    found = (load(p.name) for p in sorted(GUESTS_DIR.iterdir()) if p.is_dir())
    return [g for g in found if g is not None]


def pid_of(guest):
    """QEMU's pid when this guest's QEMU runs (checked against /proc, so a reused pid does not count)."""
    try:
        pid = int(guest.pidfile.read_text(encoding="ascii").strip())
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read().split(b"\0")
    except (OSError, ValueError):
        return None
    return pid if QEMU.encode() in cmdline[0] and str(guest.pidfile).encode() in cmdline else None


def recipe_for(dist, secure_boot=False):
    """The base disk recipe of ``dist``; with ``secure_boot``, the one that boots Debian's signed chain."""
    key = ensure_key()
    packages = vmdisk.PACKAGES + (vmdisk.SECURE_BOOT_PACKAGES if secure_boot else ())
    return vmdisk.DiskRecipe(
        suite=vmdisk.validate_dist(dist),
        pubkey=key.with_suffix(".pub").read_text().strip(),
        packages=packages,
        secure_boot=secure_boot,
    )


# --- inventory ----------------------------------------------------------------------------------------


def inventory_text(guests, key):
    """The running guests as lab hosts: lab_hosts -> lab_vms, SSH to 127.0.0.1:<port>."""
    lines = [
        "# Written by `python -m lab vm`: the lab's running VM guests (QEMU; SSH through 127.0.0.1:<port>).",
        "all:",
        "  children:",
        "    lab_hosts:",
        "      children:",
        "        lab_vms:",
        "          hosts:" if guests else "          hosts: {}",
    ]
    for guest in sorted(guests, key=lambda g: g.name):
        lines += [
            f"            {guest.name}:",
            "              ansible_host: 127.0.0.1",
            f"              ansible_port: {guest.port}",
            f"              lab_vm_dist: {guest.dist}",
            f"              lab_vm_accel: {guest.accel}",
        ]
    lines += inventory_vars(10, key, [" ".join(SSH_KEEPALIVE)])
    return "\n".join(lines) + "\n"


def refresh_inventory():
    running = [g for g in all_guests() if pid_of(g)]
    if not running:
        if INVENTORY.exists():
            INVENTORY.unlink()
        return None
    INVENTORY.parent.mkdir(parents=True, exist_ok=True)
    tmp = INVENTORY.with_name(INVENTORY.name + ".part")
    tmp.write_text(inventory_text(running, ensure_key()), encoding="utf-8")
    os.replace(tmp, INVENTORY)
    return INVENTORY


# --- commands -----------------------------------------------------------------------------------------


def ensure_qemu(log=print):
    engine.ensure_tool(QEMU, ["qemu-system-x86", "ovmf"], log)
    engine.ensure_tool("qemu-img", ["qemu-utils"], log)
    vmdisk.ensure_file(os.path.join(OVMF_DIR, FIRMWARE[False][0]), ["ovmf"], log)


def build(dist="bookworm", force=False, log=print, secure_boot=False):
    recipe = recipe_for(dist, secure_boot)
    with vm_lock(log):
        path = vmdisk.build(recipe, force=force, log=log)
        _prune(log)
    return path


def _prune(log):
    """Remove the base disks that no guest uses and that no dist's current recipe gives."""
    keep = {vmdisk.BASE_DIR / g.base for g in all_guests()}
    keep |= {vmdisk.base_path(recipe_for(dist, sb)) for dist in vmdisk.DISTS for sb in (False, True)}
    vmdisk.prune(keep, log=log)


def _create(name, dist, secure_boot, log):
    """A new guest: qcow2 overlay on the current base disk, its own OVMF variables (Secure Boot: with the
    lab's MOK certificate enrolled, lab/vmmok.py)."""
    base = vmdisk.build(recipe_for(dist, secure_boot), log=log)
    guest = Guest(name=name, dist=dist, base=base.name, port=free_port(), secure_boot=secure_boot)
    guest.dir.mkdir(parents=True, exist_ok=True)
    _, varstore = firmware(secure_boot)
    shutil.copyfile(varstore, guest.vars)
    if secure_boot:
        vmmok.enroll(guest.vars, log)
    res = subprocess.run(
        ["qemu-img", "create", "-q", "-f", "qcow2", "-b", str(base), "-F", "raw", str(guest.disk)],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise LabError(f"qemu-img create failed for {name}: {res.stderr.strip()}")
    log(f"vm: {name}: new disk {guest.disk} (overlay on {base.name})")
    return guest


def _launch(guest, accel_request, log):
    facts = kvm_facts()
    accel, reason = choose_accel(accel_request, facts)
    log(f"vm: {guest.name}: accelerator {accel} ({reason})")
    code, _ = firmware(guest.secure_boot)
    guest.accel = accel
    guest.port = free_port(guest.port)
    save(guest)
    if guest.pidfile.exists():
        guest.pidfile.unlink()
    res = subprocess.run(qemu_cmd(guest, accel, code), capture_output=True, text=True, check=False)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["no output"])[-1]
        raise LabError(f"qemu failed to start {guest.name}: {last}")
    pid = pid_of(guest)
    if pid:
        set_autogroup_nice(pid, log=log)


def start(name, dist=None, accel="auto", *, secure_boot=False, timeout=BOOT_TIMEOUT, log=print):
    """Start guest ``name`` (made on first use; dist: its own, else bookworm); wait for SSH."""
    validate_name(name)
    if dist is not None:
        vmdisk.validate_dist(dist)
    validate_accel(accel)
    ensure_qemu(log)
    began = time.monotonic()
    with vm_lock(log):
        guest = load(name)
        dist = dist or (guest.dist if guest else "bookworm")
        if guest is not None and guest.dist != dist:
            raise LabError(
                f"guest {name} is {guest.dist}, not {dist}: `python -m lab vm stop {name} --delete` first"
            )
        if guest is None:
            guest = _create(name, dist, secure_boot, log)
        elif guest.secure_boot != secure_boot:
            raise LabError(
                f"guest {name} was made with secure_boot={guest.secure_boot}: delete it to change that"
            )
        current = vmdisk.base_path(recipe_for(dist, guest.secure_boot)).name
        if guest.base != current:
            log(
                f"vm: {name}: its disk is on base {guest.base}, the recipe now gives {current}: "
                f"`python -m lab vm stop {name} --delete` remakes it"
            )
        if pid_of(guest):
            log(f"vm: {name}: already running (port {guest.port})")
        else:
            _launch(guest, accel, log)
            log(f"vm: {name}: booting (serial console {guest.console})")
    wait_ssh(guest, timeout, began)
    _set_hostname(guest)
    with vm_lock(log):
        refresh_inventory()
    log(
        f"vm: {name}: SSH answers on 127.0.0.1:{guest.port} after {time.monotonic() - began:.0f}s; "
        f"inventory {INVENTORY}"
    )
    return guest


def ssh_cmd(guest, command=(), key=None):
    key = key or ensure_key()
    target = ["-i", str(key), "-p", str(guest.port), "root@127.0.0.1"]
    return ["ssh", *SSH_OPTS, *SSH_KEEPALIVE, *target, *command]


def wait_ssh(guest, timeout, began=None, log=print):
    """Until ``ssh true`` works (slirp accepts TCP before the guest listens, so a connect proves nothing)."""
    began = began or time.monotonic()
    deadline = time.monotonic() + timeout
    cmd = ssh_cmd(guest, ["true"])
    while time.monotonic() < deadline:
        if not pid_of(guest):
            raise LabError(
                f"qemu of {guest.name} exited during boot: see {guest.console} ({_tail(guest.console)})"
            )
        try:
            res = subprocess.run(cmd, capture_output=True, check=False, timeout=30)
        except subprocess.TimeoutExpired:
            continue  # a guest that is shutting down can hold a connection open without answering
        if res.returncode == 0:
            return time.monotonic() - began
        stuck = _console_failure(guest)
        if stuck:
            raise LabError(f"{guest.name} is stuck at boot ({stuck!r}): see {guest.console}")
        time.sleep(2)
    raise LabError(
        f"no SSH to {guest.name} within {timeout}s (last console line: {_tail(guest.console)}): "
        f"see {guest.console}"
    )


# what the serial console shows when a boot cannot go on by itself
BOOT_FAILURES = ("grub>", "Kernel panic", "(initramfs)", "Give root password for maintenance")


def boot_failure(console_text):
    """The console line that shows the boot is stuck (GRUB shell, panic, initramfs shell), or None."""
    for line in console_text.splitlines():
        if any(marker in line for marker in BOOT_FAILURES):
            return " ".join(line.split())[:160]
    return None


def _console_failure(guest):
    try:
        return boot_failure(guest.console.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def _set_hostname(guest):
    script = (
        f'[ "$(cat /etc/hostname)" = {guest.name} ] || {{ echo {guest.name} > /etc/hostname; '
        f"hostname {guest.name}; sed -i 's/^127.0.1.1 .*/127.0.1.1 {guest.name}/' /etc/hosts; }}"
    )
    _ssh_out(guest, [script])


def _tail(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = [" ".join(ln.split()) for ln in fh if ln.strip()]
    except OSError:
        return "no console output"
    return lines[-1][:160] if lines else "no console output"


def _monitor(guest, command):
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(5)
        sock.connect(str(guest.monitor))
        sock.sendall(command.encode() + b"\n")
        time.sleep(0.5)


def stop(name, delete=False, timeout=90, log=print):
    """ACPI power-off (then SIGTERM, then SIGKILL); ``delete`` removes the guest's disk too."""
    validate_name(name)
    guest = load(name)
    if guest is None and delete:
        log(f"vm: {name}: no such guest, nothing to delete")
        return
    if guest is None:
        raise LabError(f"no guest {name}: `python -m lab vm list` shows the guests")
    with vm_lock(log):
        pid = pid_of(guest)
        if pid:
            began = time.monotonic()
            with contextlib.suppress(OSError):
                _monitor(guest, "system_powerdown")
            how = _wait_exit(guest, pid, timeout)
            log(f"vm: {name}: stopped ({how}, {time.monotonic() - began:.0f}s)")
        else:
            log(f"vm: {name}: not running")
        if delete:
            kept = keep_console(guest)
            shutil.rmtree(guest.dir)
            log(f"vm: {name}: deleted" + (f" (its serial console log kept: {kept})" if kept else ""))
            _prune(log)
        refresh_inventory()


def keep_console(guest):
    """Copy the guest's serial console log to ``CONSOLES_DIR/<name>.log`` before the guest is deleted, so a
    scenario that failed (molecule destroys its guests) still shows what the guest's boots printed; the copy
    replaces the previous one of that name. The copy's path, or None when the guest had no console log."""
    if not guest.console.is_file():
        return None
    CONSOLES_DIR.mkdir(parents=True, exist_ok=True)
    kept = CONSOLES_DIR / f"{guest.name}.log"
    shutil.copyfile(guest.console, kept)
    return kept


def _wait_exit(guest, pid, timeout):
    for how, sig, wait in (("powered off", None, timeout), ("SIGTERM", signal.SIGTERM, 15)):
        if sig:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not pid_of(guest):
                return how
            time.sleep(1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return "SIGKILL"


def _ssh_out(guest, command, timeout=60):
    """(exit status, stdout) of ``command`` in the guest; (None, "") when it does not answer in time."""
    try:
        res = subprocess.run(
            ssh_cmd(guest, command), capture_output=True, text=True, check=False, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None, ""
    return res.returncode, res.stdout.strip()


def reboot(name, timeout=BOOT_TIMEOUT, log=print):
    """Reboot from inside (systemctl reboot) and wait until SSH answers with a new boot id."""
    guest = _running(name)
    boot_id = ["cat", "/proc/sys/kernel/random/boot_id"]
    code, before = _ssh_out(guest, boot_id)
    if code != 0:
        raise LabError(f"no SSH to {name} before the reboot: `python -m lab vm start {name}` waits for it")
    began = time.monotonic()
    _ssh_out(guest, ["systemctl", "reboot"], timeout=30)
    deadline = began + timeout
    while time.monotonic() < deadline:
        wait_ssh(guest, max(1, deadline - time.monotonic()), began)
        code, after = _ssh_out(guest, boot_id)
        if code == 0 and after != before:
            log(
                f"vm: {name}: rebooted (boot id {after[:8]}); "
                f"SSH answers after {time.monotonic() - began:.0f}s"
            )
            return time.monotonic() - began
        time.sleep(2)
    raise LabError(f"{name} did not come back within {timeout}s: see {guest.console}")


def _running(name):
    validate_name(name)
    guest = load(name)
    if guest is None:
        raise LabError(f"no guest {name}: `python -m lab vm start {name}` makes it")
    if not pid_of(guest):
        raise LabError(f"guest {name} is not running: `python -m lab vm start {name} --dist {guest.dist}`")
    return guest


def port(name):
    """The host port that forwards to running guest ``name``'s SSH."""
    return _running(name).port


def ssh(name, command):
    guest = _running(name)
    return subprocess.run(ssh_cmd(guest, list(command)), check=False).returncode


def rows():
    """One row per guest: name, dist, state, port, accel, base (current/outdated)."""
    out = []
    for guest in all_guests():
        current = vmdisk.base_path(recipe_for(guest.dist, guest.secure_boot)).name
        state = "running" if pid_of(guest) else "stopped"
        base = "current" if guest.base == current else "outdated"
        out.append([guest.name, guest.dist, state, str(guest.port), guest.accel, f"{guest.base} ({base})"])
    return out


def show(log=print):
    table = rows()
    if not table:
        log("vm: no guests (`python -m lab vm start NAME` makes one)")
        return
    table.insert(0, ["NAME", "DIST", "STATE", "PORT", "ACCEL", "BASE"])
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for row in table:
        log("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
