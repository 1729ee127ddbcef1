"""VM guests' pure parts: accelerator choice, QEMU command line, inventory, CLI errors (no boot here)."""

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from lab import LabError, cli, vm

ROOT = Path(__file__).resolve().parents[3]

USABLE = {"dev": True, "pvm": False, "cpu_virt": True, "api": 12, "create_vm": True}


def _guest(tmp_path, monkeypatch, **kw):
    monkeypatch.setattr(vm, "GUESTS_DIR", tmp_path / "guests")
    return vm.Guest(**{"name": "vm1", "dist": "bookworm", "base": "debian12-x.raw", "port": 2222, **kw})


@pytest.mark.parametrize(
    "change,needle",
    [
        ({"dev": False}, "no /dev/kvm"),
        ({"pvm": True}, "kvm_pvm"),
        ({"cpu_virt": False}, "vmx/svm"),
        ({"api": None}, "read-write"),
        ({"api": 11}, "API version 11"),
        ({"create_vm": False}, "KVM_CREATE_VM"),
    ],
)
def test_tcg_when_kvm_cannot_run_uefi(change, needle):
    facts = {**USABLE, **change}
    accel, reason = vm.choose_accel("auto", facts)
    assert accel == "tcg" and needle in reason
    with pytest.raises(LabError, match=f"--accel kvm: .*{needle}") as err:
        vm.choose_accel("kvm", facts)
    assert err.value.code == 2


def test_kvm_when_it_works():
    assert vm.choose_accel("auto", USABLE)[0] == "kvm"
    assert vm.choose_accel("kvm", USABLE)[0] == "kvm"
    assert vm.choose_accel("tcg", USABLE) == ("tcg", "asked for (--accel tcg)")


def test_kvm_facts_of_a_pvm_machine(tmp_path):
    (tmp_path / "module" / "kvm_pvm").mkdir(parents=True)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse2 hypervisor\n", encoding="utf-8")
    facts = vm.kvm_facts(dev=str(tmp_path / "kvm"), sys_module=str(tmp_path / "module"), cpuinfo=str(cpuinfo))
    assert facts == {"dev": False, "api": None, "create_vm": False, "pvm": True, "cpu_virt": False}
    cpuinfo.write_text("flags\t\t: fpu vmx\n", encoding="utf-8")
    assert vm.kvm_facts(dev=str(tmp_path / "kvm"), cpuinfo=str(cpuinfo))["cpu_virt"] is True


def _opt(cmd, flag):
    return [cmd[i + 1] for i, c in enumerate(cmd) if c == flag]


def test_qemu_command_tcg(tmp_path, monkeypatch):
    guest = _guest(tmp_path, monkeypatch)
    cmd = vm.qemu_cmd(guest, "tcg", "/fw/OVMF_CODE_4M.fd")
    assert cmd[:4] == ["nice", "-n", "10", "qemu-system-x86_64"]
    assert _opt(cmd, "-accel") == ["tcg,thread=multi"] and _opt(cmd, "-cpu") == ["max"]
    assert _opt(cmd, "-machine") == ["q35"] and _opt(cmd, "-m") == ["2048"] and _opt(cmd, "-smp") == ["2"]
    drives = _opt(cmd, "-drive")
    assert drives[0] == "if=pflash,format=raw,unit=0,readonly=on,file=/fw/OVMF_CODE_4M.fd"
    assert drives[1] == f"if=pflash,format=raw,unit=1,file={tmp_path}/guests/vm1/OVMF_VARS.fd"
    assert drives[2].startswith(f"file={tmp_path}/guests/vm1/disk.qcow2,format=qcow2,if=virtio")
    assert "hostfwd=tcp:127.0.0.1:2222-:22" in _opt(cmd, "-netdev")[0]
    assert _opt(cmd, "-serial") == [f"file:{tmp_path}/guests/vm1/console.log"]
    assert _opt(cmd, "-pidfile") == [f"{tmp_path}/guests/vm1/qemu.pid"] and cmd[-1] == "-daemonize"
    assert "-global" not in cmd


def test_qemu_command_kvm_and_secure_boot(tmp_path, monkeypatch):
    guest = _guest(tmp_path, monkeypatch, secure_boot=True)
    cmd = vm.qemu_cmd(guest, "kvm", "/fw/OVMF_CODE_4M.secboot.fd")
    assert _opt(cmd, "-accel") == ["kvm"] and _opt(cmd, "-cpu") == ["host"]
    assert _opt(cmd, "-machine") == ["q35,smm=on"]
    assert _opt(cmd, "-global") == ["driver=cfi.pflash01,property=secure,value=on"]
    assert "file=/fw/OVMF_CODE_4M.secboot.fd" in _opt(cmd, "-drive")[0]


def test_autogroup_nice_is_written_where_the_kernel_has_autogroups(tmp_path):
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "autogroup").write_text("/autogroup-7 nice 0\n", encoding="ascii")
    assert vm.set_autogroup_nice(4242, proc=str(tmp_path)) is True
    assert (tmp_path / "4242" / "autogroup").read_text(encoding="ascii") == "10\n"
    # no such process, or a kernel without autogroups: nothing to do, no error, and the log says why
    logged = []
    assert vm.set_autogroup_nice(4343, proc=str(tmp_path), log=logged.append) is False
    path = f"{tmp_path}/4343/autogroup"
    assert logged == [f"vm: pid 4343 keeps its session's nice: {path}: No such file or directory"]


@pytest.mark.skipif(not os.path.exists("/proc/self/autogroup"), reason="this kernel has no autogroups")
def test_a_daemonized_process_gets_the_nice_for_its_whole_session():
    """QEMU -daemonize is a session of its own (lab/vm.py's NICE says why its autogroup is niced)."""
    proc = subprocess.Popen(["setsid", "sleep", "30"])
    try:
        # wait for sleep itself: setsid has made the session by then. (Right after Popen, /proc/PID/cmdline
        # can read empty while setsid is still being exec'd: a wait for "not setsid" then read the runner's
        # own group, and the write gave the runner's session nice 10, or EINVAL in the kernel's default one.)
        deadline = time.monotonic() + 5
        while not Path(f"/proc/{proc.pid}/cmdline").read_bytes().startswith(b"sleep\0"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        before = Path(f"/proc/{proc.pid}/autogroup").read_text(encoding="ascii")
        own = Path("/proc/self/autogroup").read_text(encoding="ascii").split()
        # a group of its own: not the runner's (nor the kernel's default one, which shows nothing)
        assert before.startswith("/autogroup-") and (not own or before.split()[0] != own[0]), (before, own)
        assert vm.set_autogroup_nice(proc.pid) is True
        after = Path(f"/proc/{proc.pid}/autogroup").read_text(encoding="ascii")
        assert after.split()[0] == before.split()[0] and after.split()[-1] == "10", (before, after)
        assert Path("/proc/self/autogroup").read_text(encoding="ascii").split() == own
    finally:
        proc.kill()
        proc.wait()


def test_launch_gives_qemus_session_the_nice(tmp_path, monkeypatch):
    guest = _guest(tmp_path, monkeypatch)
    monkeypatch.setattr(vm, "VM_DIR", tmp_path)
    monkeypatch.setattr(vm, "kvm_facts", lambda: {**USABLE, "pvm": True})
    monkeypatch.setattr(vm, "firmware", lambda secure_boot: ("/fw/code", "/fw/vars"))
    monkeypatch.setattr(vm, "free_port", lambda port: port)
    monkeypatch.setattr(vm, "save", lambda g: None)
    ran, niced = [], []

    def run(cmd, **kw):
        ran.append(cmd)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(vm.subprocess, "run", run)
    monkeypatch.setattr(vm, "pid_of", lambda g: 4242)
    monkeypatch.setattr(
        vm, "set_autogroup_nice", lambda pid, nice=vm.NICE, log=None: niced.append((pid, nice, log))
    )
    log = [].append
    vm._launch(guest, "auto", log)
    assert ran[0][:3] == ["nice", "-n", "10"] and niced == [(4242, 10, log)]


def test_firmware_files(tmp_path):
    for name in ("OVMF_CODE_4M.fd", "OVMF_VARS_4M.fd"):
        (tmp_path / name).write_bytes(b"")
    assert vm.firmware(False, str(tmp_path)) == (f"{tmp_path}/OVMF_CODE_4M.fd", f"{tmp_path}/OVMF_VARS_4M.fd")
    with pytest.raises(LabError, match="OVMF_CODE_4M.secboot.fd missing: install ovmf"):
        vm.firmware(True, str(tmp_path))


def test_inventory_entries(tmp_path, monkeypatch):
    guests = [_guest(tmp_path, monkeypatch, name="vm2", port=2300), _guest(tmp_path, monkeypatch)]
    doc = yaml.safe_load(vm.inventory_text(guests, "/k/id_ed25519"))
    group = doc["all"]["children"]["lab_hosts"]["children"]["lab_vms"]
    assert list(group["hosts"]) == ["vm1", "vm2"]
    assert group["hosts"]["vm1"] == {
        "ansible_host": "127.0.0.1",
        "ansible_port": 2222,
        "lab_vm_dist": "bookworm",
        "lab_vm_accel": "tcg",
    }
    assert group["vars"]["ansible_user"] == "root"
    assert group["vars"]["ansible_ssh_private_key_file"] == "/k/id_ed25519"
    assert "StrictHostKeyChecking=no" in group["vars"]["ansible_ssh_common_args"]
    # a reboot through slirp can leave a dead connection open: keepalives end it
    assert " ".join(vm.SSH_KEEPALIVE) in group["vars"]["ansible_ssh_common_args"]
    assert "ServerAliveInterval=5" in vm.SSH_KEEPALIVE


def test_the_driver_vm_scenarios_use_the_labs_keepalives():
    """molecule's delegated driver writes its own inventory: the scenarios' group_vars carry the options."""
    group_vars = ROOT / "molecule" / "driver-vm" / "group_vars" / "driver_vm.yml"
    assert yaml.safe_load(group_vars.read_text())["ansible_ssh_extra_args"] == " ".join(vm.SSH_KEEPALIVE)
    empty = yaml.safe_load(vm.inventory_text([], "/k"))
    assert empty["all"]["children"]["lab_hosts"]["children"]["lab_vms"]["hosts"] == {}


def test_guest_state_and_pid(tmp_path, monkeypatch):
    guest = _guest(tmp_path, monkeypatch)
    vm.save(guest)
    assert vm.load("vm1") == guest and vm.all_guests() == [guest]
    assert vm.pid_of(guest) is None
    # a live pid that is not this guest's QEMU does not count
    guest.pidfile.write_text(f"{os.getpid()}\n", encoding="ascii")
    assert vm.pid_of(guest) is None


def test_free_port_prefers_the_recorded_one():
    port = vm.free_port()
    assert vm.free_port(port) == port
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        assert vm.free_port(taken) != taken


@pytest.mark.parametrize("name", ["", "9lives", "a b", "a_b", "x" * 41, "ends-"])
def test_bad_names(name):
    with pytest.raises(LabError, match="guest name"):
        vm.validate_name(name)


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["vm", "start", "a b"], "guest name 'a b'"),
        (["vm", "start", "vm1", "--dist", "sid"], "--dist 'sid': choose from bookworm, trixie"),
        (["vm", "start", "vm1", "--accel", "hvf"], "--accel 'hvf': choose from auto, kvm, tcg"),
        (["vm", "start", "vm1", "--timeout", "0"], "--timeout 0"),
        (["vm", "build", "--dist", "buster"], "--dist 'buster'"),
        (["vm", "stop", "nosuch"], "no guest nosuch"),
        (["vm", "ssh", "nosuch", "--", "true"], "no guest nosuch"),
    ],
)
def test_cli_errors_are_one_line(capsys, tmp_path, monkeypatch, argv, needle):
    monkeypatch.setattr(vm, "GUESTS_DIR", tmp_path / "guests")
    monkeypatch.setattr(vm, "VM_DIR", tmp_path)
    code = cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 1 and err.count("\n") == 0 and needle in err, err


def test_missing_qemu_is_one_line(capsys, monkeypatch):
    monkeypatch.setattr(vm.engine.shutil, "which", lambda name: None)
    monkeypatch.setattr(vm.engine.os, "geteuid", lambda: 1000)
    code = cli.main(["vm", "start", "vm1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0
    assert "qemu-system-x86_64 not found: install qemu-system-x86 ovmf" in err


def test_cli_parses_ssh_command():
    args = cli.build_parser().parse_args(["vm", "ssh", "vm1", "--", "uname", "-r"])
    assert args.name == "vm1" and args.cmd == ["uname", "-r"]


@pytest.mark.parametrize(
    "text,found",
    [
        ("BdsDxe: loading Boot0002\nerror: no such device: 1234.\ngrub> ", "grub>"),
        ("[ 3.1] Kernel panic - not syncing: VFS: Unable to mount root fs", "Kernel panic - not syncing"),
        ("Gave up waiting for root file system device.\n(initramfs) ", "(initramfs)"),
        ("Welcome to GRUB!\n[ OK ] Reached target multi-user.target\ngpufleet-vm login:", None),
    ],
)
def test_boot_failure_on_the_console(text, found):
    line = vm.boot_failure(text)
    assert (line is None) if found is None else (found in line)


def test_prune_keeps_used_and_current_bases(tmp_path, monkeypatch):
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    monkeypatch.setattr(vm.vmdisk, "BASE_DIR", base_dir)
    monkeypatch.setattr(
        vm, "recipe_for", lambda dist, sb=False: vm.vmdisk.DiskRecipe(suite=dist, pubkey="k", secure_boot=sb)
    )
    # each dist's current base, and its Secure Boot base
    current = {
        vm.vmdisk.base_path(vm.recipe_for(d, sb)).name for d in vm.vmdisk.DISTS for sb in (False, True)
    }
    assert len(current) == 2 * len(vm.vmdisk.DISTS)
    for name in [*current, "debian12-000000000000.raw", "debian12-111111111111.raw"]:
        (base_dir / name).write_bytes(b"")
    vm.save(_guest(tmp_path, monkeypatch, base="debian12-111111111111.raw"))
    vm._prune(lambda line: None)
    assert {p.name for p in base_dir.iterdir()} == current | {"debian12-111111111111.raw"}


def test_a_deleted_guest_leaves_its_serial_console_log(tmp_path, monkeypatch):
    """molecule's destroy deletes a failed scenario's guest: its console (what its boots printed) stays."""
    guest = _guest(tmp_path, monkeypatch, name="gpufleet-deb13")
    monkeypatch.setattr(vm, "VM_DIR", tmp_path)
    monkeypatch.setattr(vm, "CONSOLES_DIR", tmp_path / "consoles")
    monkeypatch.setattr(vm, "_prune", lambda log: None)
    monkeypatch.setattr(vm, "refresh_inventory", lambda: None)
    vm.save(guest)
    console = "Booting Linux...\nA stop job is running for nvidia-persistenced\n"
    guest.console.write_text(console, encoding="utf-8")
    said = []
    vm.stop("gpufleet-deb13", delete=True, log=said.append)
    kept = tmp_path / "consoles" / "gpufleet-deb13.log"
    assert not guest.dir.exists()
    assert kept.read_text(encoding="utf-8") == console
    assert f"its serial console log kept: {kept}" in said[-1]
    vm.save(guest)  # a guest that never booted has no console: nothing to keep, and no old copy is claimed
    vm.stop("gpufleet-deb13", delete=True, log=said.append)
    assert said[-1] == "vm: gpufleet-deb13: deleted"
