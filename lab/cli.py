"""`python -m lab <command>`: the gpufleet lab. Errors are one line that says what to do."""

import argparse
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from lab import LabError, locked

# commands that change the lab take the lab lock (one at a time per checkout)
LOCKED = {"images", "mirror", "repo", "rpms", "up", "hosts", "down"}


def _client():
    from lab import engine

    return engine.client()


def cmd_docker(args):
    from lab import engine

    engine.ensure()
    engine.ensure_inotify()


def check_images(args):
    from lab import images

    images.resolve(args.names)


def check_hosts_up(args):
    from lab import hosts

    hosts.validate(args.count, args.image, args.prefix)


def cmd_images(args):
    from lab import images

    images.build(_client(), args.names, force=args.force)


def _mirror_args(args):
    from lab import mirror

    cudnn = tuple(args.cudnn or mirror.DEFAULT_CUDNN)
    cuda = tuple(args.cuda or mirror.DEFAULT_CUDA_RELEASES)
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    for v in variants:
        if v not in mirror.CUDNN_VARIANTS:
            raise LabError(f"--variants {args.variants!r}: choose from {','.join(mirror.CUDNN_VARIANTS)}")
    for version in cudnn:
        mirror.validate_cudnn_version(version)
    for release in cuda:
        mirror.validate_cuda_release(release)
    return cudnn, cuda, variants


def cmd_mirror_build(args):
    from lab import mirror

    cudnn, cuda, variants = _mirror_args(args)
    mirror.build(cudnn, cuda, variants)


def cmd_mirror_sbsa(_args):
    from lab import mirror, repo

    mirror.build_sbsa()
    repo.build_sbsa()  # the sbsa apt repository from those archives (only what is missing or changed)


def cmd_repo_build(args):
    from lab import repo

    repo.build(cudnn_versions=args.cudnn_version, cudnn_majors=args.cuda_major, dists=args.dist)


def cmd_rpms_build(args):
    from lab import engine, rpms

    for tool, package in rpms.TOOLS:
        engine.ensure_tool(tool, [package], print)
    rpms.build(cudnn_versions=args.cudnn_version, dists=args.dist)


def cmd_mirror_serve(args):
    from lab import serve

    ip = serve.serve(_client())
    print(f"mirror: {serve.MIRROR_URL} (from this machine: http://{ip}/)")


def cmd_up(args):
    from lab import engine, images, mirror, repo, serve

    cudnn, cuda, variants = _mirror_args(args)
    engine.ensure()
    engine.ensure_inotify()
    client = engine.client()

    def mirror_and_repo():
        mirror.build(cudnn, cuda, variants)
        repo.build()  # NVIDIA's packages from the mirror's archives (only what is missing or changed)

    # images (network + dpkg) and the mirror (unzip + hashing) overlap well: build both at once
    with ThreadPoolExecutor(max_workers=2) as pool:
        built = [pool.submit(images.build, client), pool.submit(mirror_and_repo)]
        for future in built:
            future.result()
    ip = serve.serve(client)
    print(f"lab: up; mirror {serve.MIRROR_URL} on network gpufleet-lab (from this machine: http://{ip}/)")


def cmd_hosts_up(args):
    from lab import hosts

    hosts.up(_client(), args.count, args.image, args.prefix)


def cmd_hosts_down(args):
    from lab import hosts

    hosts.down(_client(), args.prefix)


def cmd_status(args):
    from lab import status

    status.show()


def cmd_down(args):
    from lab import hosts, serve

    client = _client()
    hosts.down(client)
    serve.stop(client)


def check_vm(args):
    from lab import vm, vmdisk

    if getattr(args, "name", None) is not None:
        vm.validate_name(args.name)
    if getattr(args, "dist", None) is not None:
        vmdisk.validate_dist(args.dist)
    if getattr(args, "accel", None) is not None:
        vm.validate_accel(args.accel)
    if getattr(args, "timeout", 1) < 1:
        raise LabError(f"--timeout {args.timeout}: give seconds, at least 1")


def cmd_vm_build(args):
    from lab import vm

    vm.ensure_qemu()
    vm.build(args.dist, force=args.force, secure_boot=args.secure_boot)


def cmd_vm_start(args):
    from lab import vm

    vm.start(args.name, args.dist, args.accel, secure_boot=args.secure_boot, timeout=args.timeout)


def cmd_vm_stop(args):
    from lab import vm

    vm.stop(args.name, delete=args.delete)


def cmd_vm_reboot(args):
    from lab import vm

    vm.reboot(args.name, timeout=args.timeout)


def cmd_vm_list(args):
    from lab import vm

    vm.show()


def cmd_vm_ssh(args):
    from lab import vm

    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    code = vm.ssh(args.name, command)
    if code:
        raise LabError(f"ssh {args.name} {' '.join(command)}: exit {code}", code)


def cmd_vm_port(args):
    from lab import vm

    print(vm.port(args.name))


def cmd_vm_dkms_cache(args):
    from lab import vm, vmdkms

    with vm.vm_lock():
        vmdkms.cache_guest(args.name, vmdkms.validate_flavor(args.flavor), also=args.kernel or ())


def _add_vm_parser(sub):
    p = sub.add_parser("vm", help="VM guests (QEMU, UEFI + GRUB from their own disk; KVM or TCG)")
    vsub = p.add_subparsers(dest="vm_command", required=True, metavar="ACTION")
    dist = {"default": "bookworm", "help": "bookworm (Debian 12) or trixie (Debian 13); default bookworm"}
    b = vsub.add_parser("build", help="build the base disk (cached by recipe hash)")
    b.add_argument("--dist", **dist)
    b.add_argument("--force", action="store_true", help="rebuild even when up to date")
    b.add_argument(
        "--secure-boot", action="store_true", help="the base that boots Debian's signed shim, GRUB and kernel"
    )
    b.set_defaults(func=cmd_vm_build, check=check_vm)
    s = vsub.add_parser(
        "start", help="start guest NAME (made on first use), wait for SSH, write the inventory"
    )
    s.add_argument("name", metavar="NAME")
    s.add_argument("--dist", default=None, help="bookworm or trixie; default: the guest's own, else bookworm")
    s.add_argument("--accel", default="auto", help="auto (KVM when it works, else TCG), kvm or tcg")
    s.add_argument(
        "--secure-boot",
        action="store_true",
        help="Secure Boot: OVMF secboot firmware (SMM) with Microsoft's keys, the signed boot chain's base, "
        "and the lab's MOK certificate enrolled (.lab/vm/mok)",
    )
    s.add_argument("--timeout", type=int, default=600, help="seconds to wait for SSH (default 600)")
    s.set_defaults(func=cmd_vm_start, check=check_vm)
    s = vsub.add_parser("stop", help="power guest NAME off (ACPI, then SIGTERM)")
    s.add_argument("name", metavar="NAME")
    s.add_argument("--delete", action="store_true", help="also delete its disk")
    s.set_defaults(func=cmd_vm_stop, check=check_vm)
    s = vsub.add_parser("reboot", help="reboot guest NAME from inside and wait for SSH")
    s.add_argument("name", metavar="NAME")
    s.add_argument("--timeout", type=int, default=600, help="seconds to wait for SSH (default 600)")
    s.set_defaults(func=cmd_vm_reboot, check=check_vm)
    vsub.add_parser("list", help="the guests of this lab").set_defaults(func=cmd_vm_list)
    s = vsub.add_parser("ssh", help="run a command in guest NAME: vm ssh NAME -- CMD...")
    s.add_argument("name", metavar="NAME")
    s.add_argument("cmd", nargs=argparse.REMAINDER, metavar="CMD")
    s.set_defaults(func=cmd_vm_ssh, check=check_vm)
    s = vsub.add_parser("port", help="the host port of running guest NAME's SSH")
    s.add_argument("name", metavar="NAME")
    s.set_defaults(func=cmd_vm_port, check=check_vm)
    s = vsub.add_parser(
        "dkms-cache",
        help="record NVIDIA's DKMS modules natively for guest NAME's kernels (when missing) and seed them",
    )
    s.add_argument("name", metavar="NAME")
    s.add_argument("--flavor", default="proprietary", help="proprietary (default) or open")
    s.add_argument(
        "--kernel",
        action="append",
        metavar="RELEASE",
        help="also for kernel RELEASE, not installed in the guest yet (a kernel update); repeatable",
    )
    s.set_defaults(func=cmd_vm_dkms_cache, check=check_vm)


def _add_mirror_options(p):
    p.add_argument(
        "--cudnn",
        action="append",
        metavar="X.Y.Z.B",
        help="cuDNN version as on the package index (repeatable; default 9.28.0.42 and 9.14.0.64)",
    )
    p.add_argument(
        "--cuda", action="append", metavar="X.Y.Z", help="CUDA release (default: 13.0.2 and 13.1.0)"
    )
    p.add_argument("--variants", default="12,13", help="cuDNN CUDA variants (default 12,13)")


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("docker", help="make the docker engine answer (installs/starts it when root)")
    p.set_defaults(func=cmd_docker)

    p = sub.add_parser(
        "images", help="build the base images (only missing or changed ones; EL-shaped: named)"
    )
    p.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="debian12 debian12-systemd debian13 debian13-systemd, el9-systemd el10-systemd (EL-shaped), "
        "ubuntu2404-systemd ubuntu2204-systemd (Ubuntu-shaped), debian12-arm64-systemd "
        "ubuntu2404-arm64-systemd (arm64, emulated)",
    )
    p.add_argument("--force", action="store_true", help="rebuild even when up to date")
    p.set_defaults(func=cmd_images, check=check_images)

    p = sub.add_parser("mirror", help="the NVIDIA redist mirror")
    msub = p.add_subparsers(dest="mirror_command", required=True, metavar="ACTION")
    b = msub.add_parser("build", help="build .lab/mirror from NVIDIA's wheels (only what is missing/changed)")
    _add_mirror_options(b)
    b.set_defaults(func=cmd_mirror_build, check=_mirror_args)
    msub.add_parser(
        "sbsa",
        help="add the linux-sbsa (Arm server) archives (mirror.SBSA_CUDNN, SBSA_CUDA: aarch64 wheels) and "
        "the sbsa apt repository built from them (repo.SBSA_DIRS)",
    ).set_defaults(func=cmd_mirror_sbsa)
    msub.add_parser("serve", help="serve .lab/mirror at http://gpufleet-mirror/").set_defaults(
        func=cmd_mirror_serve
    )

    p = sub.add_parser("repo", help="the NVIDIA-layout signed apt repository (built from the mirror)")
    rsub = p.add_subparsers(dest="repo_command", required=True, metavar="ACTION")
    rb = rsub.add_parser(
        "build", help="build NVIDIA's .debs and the signed repositories in .lab/mirror/cuda/repos"
    )
    rb.set_defaults(func=cmd_repo_build)
    subset = "only this one (repeatable; default: the whole recipe)"
    rb.add_argument("--cudnn-version", action="append", metavar="X.Y.Z.B", help=f"cuDNN version: {subset}")
    rb.add_argument("--cuda-major", action="append", metavar="M", help=f"cuDNN's CUDA major: {subset}")
    rb.add_argument("--dist", action="append", metavar="DIR", help=f"repository (ubuntu2404, ...): {subset}")

    p = sub.add_parser(
        "rpms", help="the NVIDIA-layout signed RPM repositories of EL-shaped hosts (from the mirror)"
    )
    rsub = p.add_subparsers(dest="rpms_command", required=True, metavar="ACTION")
    rb = rsub.add_parser("build", help="build NVIDIA's .rpms and the signed rhel9/rhel10 repositories")
    rb.set_defaults(func=cmd_rpms_build)
    rb.add_argument("--cudnn-version", action="append", metavar="X.Y.Z.B", help=f"cuDNN version: {subset}")
    rb.add_argument("--dist", action="append", metavar="DIR", help=f"repository (rhel9, rhel10): {subset}")

    p = sub.add_parser("up", help="docker + images + mirror build + repo build + mirror serve")
    _add_mirror_options(p)
    p.set_defaults(func=cmd_up, check=_mirror_args)

    p = sub.add_parser("hosts", help="lab hosts: systemd containers with sshd")
    hsub = p.add_subparsers(dest="hosts_command", required=True, metavar="ACTION")
    h = hsub.add_parser(
        "up", help="start N hosts of this checkout's lab (labelled with its directory), write the inventory"
    )
    h.add_argument("--count", type=int, default=3)
    h.add_argument("--image", default="gpufleet/debian12-systemd")
    h.add_argument("--prefix", default="gpufleet-host")
    h.set_defaults(func=cmd_hosts_up, check=check_hosts_up)
    h = hsub.add_parser("down", help="remove this checkout's lab hosts (never another checkout's)")
    h.add_argument("--prefix", default=None)
    h.set_defaults(func=cmd_hosts_down)

    sub.add_parser("status", help="engine, images, mirror and hosts").set_defaults(func=cmd_status)
    sub.add_parser("down", help="remove the lab hosts and the mirror server").set_defaults(func=cmd_down)
    _add_vm_parser(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check = getattr(args, "check", None)
        if check:
            check(args)  # bad input fails here, before the lock and before any change
        if args.command in LOCKED:
            with locked():
                args.func(args)
        else:
            args.func(args)
    except LabError as exc:
        print(f"lab: error: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("lab: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # docker's API errors, OSError, ...: one line unless LAB_DEBUG is set
        if os.environ.get("LAB_DEBUG"):
            raise
        text = " ".join(str(exc).split())[:300]
        print(
            f"lab: error: {args.command} failed: {exc.__class__.__name__}: {text} "
            "(check `python -m lab status`; LAB_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 1
    return 0
