"""Build synthetic `root` trees for nvidia_facts tests and the benchmark.

Every tree is made at test time in a temporary directory (nothing binary is committed). `h200()` rebuilds
the real H200 host (tests/data/h200-ubuntu2404, captured 2026-11-30) as files: sysfs attributes,
/proc/driver/nvidia, the kernel release and /etc/os-release, the dpkg database, the loader cache built
from `ldconfig -p`, CUDA 13.0 behind alternatives, the libcudnn9-cuda-13 package and the nvidia-cudnn-cu13
wheel in /opt/torch/.venv.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.ldcache import parse_ldconfig_p

from tests.data.builders import build_ld_cache

H200_DATA = Path(__file__).resolve().parents[1] / "h200-ubuntu2404"


def write(root, inner, text="", mode=None):
    path = Path(root) / inner.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    if mode is not None:
        path.chmod(mode)
    return path


def link(root, inner, target):
    path = Path(root) / inner.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    os.symlink(target, path)
    return path


def cudnn_header(major, minor, patch, v7=False):
    body = f"#define CUDNN_MAJOR {major}\n#define CUDNN_MINOR {minor}\n#define CUDNN_PATCHLEVEL {patch}\n"
    body += "#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n"
    if v7:
        return "/* cudnn.h v7 */\n#ifndef CUDNN_H_\n#define CUDNN_H_\n" + body + "#endif\n"
    return "#ifndef CUDNN_VERSION_H_\n#define CUDNN_VERSION_H_\n" + body + "#endif\n"


def dpkg_paragraph(name, version, status="install ok installed", arch="amd64", provides=None):
    text = (
        f"Package: {name}\nStatus: {status}\nPriority: optional\nArchitecture: {arch}\nVersion: {version}\n"
    )
    if provides:
        text += f"Provides: {provides}\n"
    text += "Description: test package\n continuation line\n"
    return text


def dpkg_db(root, packages, files=None):
    """packages: [(name, version, status, arch)]; files: {name: [paths]} -> info/<name>:<arch>.list."""
    write(root, "/var/lib/dpkg/status", "\n".join(dpkg_paragraph(*p) for p in packages))
    for name, paths in (files or {}).items():
        arch = next((p[3] for p in packages if p[0] == name), "amd64")
        write(root, f"/var/lib/dpkg/info/{name}:{arch}.list", "/.\n" + "\n".join(paths) + "\n")


def rpm_db(root, versionlock=""):
    """An rpm database marker (the names come from a mocked `rpm -qa`) and dnf's versionlock list."""
    write(root, "/var/lib/rpm/rpmdb.sqlite", "")
    if versionlock:
        write(root, "/etc/dnf/plugins/versionlock.list", versionlock)


def elf_shell(root, e_machine, *, little_endian=True, path="/usr/bin/dash"):
    """/bin/sh -> a file with the first 20 bytes of a 64-bit ELF header for ``e_machine`` (62 x86-64, 183
    AArch64): what a tree's CPU architecture is read from."""
    order = "little" if little_endian else "big"
    header = b"\x7fELF\x02" + (b"\x01" if little_endian else b"\x02") + b"\x01" + bytes(9)
    header += (3).to_bytes(2, order) + e_machine.to_bytes(2, order)  # e_type ET_DYN, e_machine
    write(root, path, header + bytes(44))
    link(root, "/bin/sh", path)


def ld_cache(root, entries):
    """entries: [(soname, path)] (x86-64 libc6 flags)."""
    write(root, "/etc/ld.so.cache", build_ld_cache([(s, p, 0x0303) for s, p in entries]))


def tarball(root, prefix, version, *, lib_dir="lib", header=True):
    major, minor, patch = (int(x) for x in version.split(".")[:3])
    if header:
        write(root, f"{prefix}/include/cudnn_version.h", cudnn_header(major, minor, patch))
    write(root, f"{prefix}/{lib_dir}/libcudnn.so.{version}", "ELF")
    link(root, f"{prefix}/{lib_dir}/libcudnn.so.{major}", f"libcudnn.so.{version}")
    link(root, f"{prefix}/{lib_dir}/libcudnn.so", f"libcudnn.so.{major}")


def pip_wheel(root, env, version, *, cuda_major=13, python="python3.12", header_version=None):
    sp = f"{env}/lib/{python}/site-packages"
    write(root, env + "/pyvenv.cfg", "home = /usr/bin\n")
    dist = f"nvidia_cudnn_cu{cuda_major}-{version}.dist-info"
    write(
        root,
        f"{sp}/{dist}/METADATA",
        f"Metadata-Version: 2.4\nName: nvidia-cudnn-cu{cuda_major}\nVersion: {version}\n\nbody\n",
    )
    hv = header_version or version
    major, minor, patch = (int(x) for x in hv.split(".")[:3])
    write(root, sp + "/nvidia/cudnn/include/cudnn_version.h", cudnn_header(major, minor, patch))
    write(root, sp + "/nvidia/cudnn/lib/libcudnn.so." + version.split(".")[0], "ELF")
    return sp


def conda_env(root, env, version, cuda_major=12, build="h87a2b3d_0"):
    major, minor, patch = (int(x) for x in version.split(".")[:3])
    files = [
        "include/cudnn_version.h",
        "lib/libcudnn.so.{}".format(".".join(version.split(".")[:3])),
        f"lib/libcudnn.so.{major}",
    ]
    write(
        root,
        f"{env}/conda-meta/cudnn-{version}-{build}.json",
        json.dumps(
            {
                "name": "cudnn",
                "version": version,
                "build": build,
                "depends": [f"cuda-version >={cuda_major}.0,<{cuda_major + 1}", "libzlib"],
                "files": files,
            }
        ),
    )
    write(root, env + "/conda-meta/history", "")
    write(root, env + "/include/cudnn_version.h", cudnn_header(major, minor, patch))
    write(root, f"{env}/lib/libcudnn.so.{major}.{minor}.{patch}", "ELF")
    link(root, f"{env}/lib/libcudnn.so.{major}", f"libcudnn.so.{major}.{minor}.{patch}")


def _dpkg_lists():
    """The three file lists of `dpkg -L libcudnn9-cuda-13 libcudnn9-dev-cuda-13 libcudnn9-headers-cuda-13`."""
    text = (H200_DATA / "dpkg-L-libcudnn9-cuda-13.txt").read_text()
    text = text.split("Package:")[0]
    blocks = [b.strip().splitlines() for b in text.strip().split("\n\n")]
    return dict(zip(("libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"), blocks))


# The update-alternatives database as `update-alternatives --display cuda` of the H200 shows it (dpkg format).
ALTERNATIVE = "auto\n/usr/local/{name}\n\n/usr/local/cuda-13.0\n130\n\n"
# NVIDIA's packages' linker files as the H200 has them
# (tests/gpu/evidence/h200-2026-12-01-brownfield/owners.txt:
# `dpkg -S`, `head /etc/ld.so.conf.d/*.conf`): 000_cuda.conf (the default toolkit), 987_cuda-13.conf (per
# major); gds-13-0.conf and nvidia.conf belong to no package there.
CUDA_LD_CONFS = {
    "cuda-toolkit-config-common": (
        "/etc/ld.so.conf.d/000_cuda.conf",
        "/usr/local/cuda/targets/x86_64-linux/lib",
    ),
    "cuda-toolkit-13-config-common": (
        "/etc/ld.so.conf.d/987_cuda-13.conf",
        "/usr/local/cuda-13/targets/x86_64-linux/lib",
    ),
}
UNOWNED_LD_CONFS = {
    "/etc/ld.so.conf.d/gds-13-0.conf": "/usr/local/cuda-13.0/targets/x86_64-linux/lib",
    "/etc/ld.so.conf.d/nvidia.conf": "/usr/local/cuda/lib64",
}


def h200_toolkit_owners(root, cuda):
    """The H200's toolkit as its packages own it: nvcc, cudart, the linker files, alternatives, ld.so.conf."""
    lib = cuda + "/targets/x86_64-linux/lib"
    write(root, lib + "/libcudart.so.13.0.96", "ELF")
    link(root, lib + "/libcudart.so.13", "libcudart.so.13.0.96")
    lists = {
        "cuda-nvcc-13-0": [cuda, cuda + "/bin", cuda + "/bin/nvcc"],
        "cuda-cudart-13-0": [cuda, lib, lib + "/libcudart.so.13.0.96", lib + "/libcudart.so.13"],
        "cuda-cudart-dev-13-0": [cuda + "/targets/x86_64-linux/include/cuda.h"],
    }
    for name, (conf, directory) in CUDA_LD_CONFS.items():
        write(root, conf, directory + "\n")
        lists[name] = ["/etc", "/etc/ld.so.conf.d", conf]
    for name, files in lists.items():
        arch = "all" if "config-common" in name else "amd64"
        write(root, f"/var/lib/dpkg/info/{name}:{arch}.list", "/.\n" + "\n".join(files) + "\n")
    for conf, directory in UNOWNED_LD_CONFS.items():
        write(root, conf, directory + "\n")
    write(root, "/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n\n")
    write(root, "/etc/ld.so.conf.d/libc.conf", "# libc default configuration\n/usr/local/lib\n")
    write(
        root,
        "/etc/ld.so.conf.d/x86_64-linux-gnu.conf",
        "# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n"
        "/usr/lib/x86_64-linux-gnu\n",
    )
    for name in ("cuda", "cuda-13"):
        write(root, f"/var/lib/dpkg/alternatives/{name}", ALTERNATIVE.format(name=name))


def h200(root):
    """The real H200 host of tests/data/h200-ubuntu2404 as a tree under `root`."""
    root = Path(root)
    # merged /usr
    (root / "usr/lib").mkdir(parents=True, exist_ok=True)
    link(root, "/lib", "usr/lib")
    write(root, "/.dockerenv")
    # sysfs: one H200, bound to nvidia
    dev = "/sys/bus/pci/devices/0000:00:06.0"
    attrs = dict(
        line.split("=", 1)
        for line in (H200_DATA / "sys-bus-pci-0000_00_06.0-attrs.txt").read_text().splitlines()
        if "=" in line
    )
    for key in ("vendor", "device", "subsystem_vendor", "subsystem_device", "class"):
        write(root, f"{dev}/{key}", attrs[key] + "\n")
    (root / "sys/bus/pci/drivers/nvidia").mkdir(parents=True, exist_ok=True)
    link(root, dev + "/driver", "../../../bus/pci/drivers/nvidia")
    # an NVIDIA audio function and a non-NVIDIA device must be ignored
    write(root, "/sys/bus/pci/devices/0000:00:01.0/vendor", "0x8086\n")
    write(root, "/sys/bus/pci/devices/0000:00:01.0/class", "0x030000\n")
    # /proc
    write(root, "/proc/driver/nvidia/version", (H200_DATA / "proc-driver-nvidia-version.txt").read_text())
    write(root, "/proc/modules", "nvidia_uvm 2076672 0 - Live 0x0\nnvidia 11960320 1 nvidia_uvm, Live 0x0\n")
    write(root, "/proc/cmdline", "console=ttyS0 reboot=k panic=1 virtio_mmio.device=4K@0xd0000000:5\n")
    write(root, "/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor avx\n")
    write(root, "/proc/1/cgroup", "0::/\n")
    # kernel and OS as the README of the capture names them (Ubuntu 24.04.3 LTS, kernel 6.18.44)
    write(root, "/proc/sys/kernel/osrelease", "6.18.44\n")
    write(
        root,
        "/etc/os-release",
        'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
        'VERSION="24.04.3 LTS (Noble Numbat)"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\n',
    )
    # dpkg database from `dpkg-query -W` and `dpkg -L`
    packages = []
    for line in (H200_DATA / "dpkg-query-nvidia-cuda.tsv").read_text().splitlines():
        name, version, status, arch = line.split("\t")
        packages.append((name, version, status, arch))
    lists = _dpkg_lists()
    dpkg_db(root, packages, lists)
    for path in lists["libcudnn9-cuda-13"] + lists["libcudnn9-dev-cuda-13"]:
        name = os.path.basename(path)
        if name.endswith(".9.14.0"):
            write(root, path, "ELF")
        elif name.endswith(".so.9"):
            link(root, path, name + ".14.0")
        elif name.endswith(".so"):
            link(root, path, name + ".9")
    inc = "/usr/include/x86_64-linux-gnu"
    for path in lists["libcudnn9-headers-cuda-13"]:
        if path.endswith("_v9.h"):
            write(root, path, cudnn_header(9, 14, 0) if "version" in path else "/* cudnn */\n")
    for name in ("cudnn_version", "cudnn"):
        link(root, f"{inc}/{name}.h", f"/etc/alternatives/lib{name}_h")
        link(root, f"/etc/alternatives/lib{name}_h", f"{inc}/{name}_v9.h")
    # CUDA 13.0 toolkit behind update-alternatives
    cuda = "/usr/local/cuda-13.0"
    write(root, cuda + "/version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}))
    write(root, cuda + "/bin/nvcc", "#!/bin/sh\n", mode=0o755)
    write(root, cuda + "/targets/x86_64-linux/include/cuda.h", "#define CUDA_VERSION 13000\n")
    link(root, cuda + "/lib64", "targets/x86_64-linux/lib")
    link(root, cuda + "/include", "targets/x86_64-linux/include")
    link(root, "/etc/alternatives/cuda", cuda)
    link(root, "/usr/local/cuda", "/etc/alternatives/cuda")
    link(root, "/etc/alternatives/cuda-13", cuda)
    link(root, "/usr/local/cuda-13", "/etc/alternatives/cuda-13")
    h200_toolkit_owners(root, cuda)
    # driver user-space mounted by the host
    write(root, "/usr/local/nvidia/lib64/libnvidia-ml.so.580.159.04", "ELF")
    link(root, "/usr/local/nvidia/lib64/libnvidia-ml.so.1", "libnvidia-ml.so.580.159.04")
    # the loader cache from the real `ldconfig -p`
    entries = parse_ldconfig_p((H200_DATA / "ldconfig-p.txt").read_text())
    ld_cache(root, [(s, p) for s, p, _ in entries])
    # the torch virtualenv with nvidia-cudnn-cu13 9.19.0.56
    pip_wheel(root, "/opt/torch/.venv", "9.19.0.56", cuda_major=13)
    return root


def bare(root, distribution="debian", version="12", *, gpu=None, kernel="6.1.0-40-amd64", container=False):
    """A host as a fresh install leaves it: os-release, the kernel release, an empty dpkg database, no driver,
    no CUDA; ``gpu`` a PCI device id (e.g. "0x1db5") puts one NVIDIA GPU without a driver in sysfs;
    ``container`` makes it a docker container (never rebooted, no kernel module built)."""
    root = Path(root)
    if container:
        write(root, "/.dockerenv")
    (root / "usr/lib").mkdir(parents=True, exist_ok=True)
    link(root, "/lib", "usr/lib")
    (root / "usr/local").mkdir(parents=True, exist_ok=True)
    write(root, "/proc/sys/kernel/osrelease", kernel + "\n")
    write(root, "/proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse2 avx\n")
    write(root, "/proc/1/cgroup", "0::/init.scope\n")
    name = {"debian": "Debian GNU/Linux", "ubuntu": "Ubuntu"}[distribution]
    write(root, "/etc/os-release", f'NAME="{name}"\nVERSION_ID="{version}"\nID={distribution}\n')
    write(root, "/var/lib/dpkg/status", "")
    (root / "sys/bus/pci/devices").mkdir(parents=True, exist_ok=True)
    if gpu:
        dev = "/sys/bus/pci/devices/0000:01:00.0"
        for key, value in (("vendor", "0x10de"), ("device", gpu), ("class", "0x030200"),
                           ("subsystem_vendor", "0x10de"), ("subsystem_device", "0x0000")):  # fmt: skip
            write(root, f"{dev}/{key}", value + "\n")
    return root
