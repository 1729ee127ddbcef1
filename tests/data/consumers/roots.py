"""Fixture roots of issue 13 (what each consumer loads, what the next boot breaks), built at test time.

Each builder adds one case to a tree made by tests/data/facts/fakeroot.py (often its `h200()`):
a torch venv whose wheel pins a cuDNN and whose libtorch_cuda.so is a real (tiny) ELF with RUNPATH; the full
set of cuDNN 9 sub-libraries with sizes that differ per release (so a file copied from another release can be
told by its size); a conda env whose python has RPATH $ORIGIN/../lib; LD_LIBRARY_PATH in /etc/environment;
a loaded module that differs from the user-space libraries; a newer kernel without an nvidia module;
cuda-compat.
"""

from __future__ import annotations

import os
import shutil

from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb.cudnn import SUB_LIBRARIES
from ansible_collections.gpufleet.nvidia.plugins.module_utils.probe.fatbin import KIND_ELF, KIND_PTX

from tests.data.builders import add_section, build_elf, build_fatbin
from tests.data.facts import fakeroot
from tests.data.facts.fakeroot import conda_env, cudnn_header, dpkg_db, ld_cache, link, write

MULTIARCH = "/usr/lib/x86_64-linux-gnu"
# the H200's torch venv (tests/data/h200-ubuntu2404; tests/gpu/evidence/h200-2026-12-01-consumers)
VENV = "/opt/torch/.venv"
SP = VENV + "/lib/python3.12/site-packages"
WHEEL_LIB = SP + "/nvidia/cudnn/lib"
TORCH_RUNPATH = "$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/cublas/lib:$ORIGIN"


def lib_bytes(base, version):
    """Content of a fake cuDNN library: its size tells its release (and its name) apart."""
    minor = int(version.split(".")[1])
    return (f"{base} {version}\n".encode() * 4).ljust(1000 + minor * 37 + len(base), b".")


def system_sub_libraries(root, version, directory=MULTIARCH):
    """Every libcudnn*.so.9.x.y of a release in a directory, with the .so.9 links (a package or tarball)."""
    major = int(version.split(".")[0])
    for base in ("libcudnn", *SUB_LIBRARIES[major]):
        write(root, f"{directory}/{base}.so.{version}", lib_bytes(base, version))
        link(root, f"{directory}/{base}.so.{major}", f"{base}.so.{version}")


def cudnn_wheel(root, sp, version, cuda_major=13):
    """nvidia-cudnn-cuXX with every sub-library, its METADATA and a RECORD naming each file's size."""
    major = int(version.split(".")[0])
    short = ".".join(version.split(".")[:3])
    dist = f"nvidia_cudnn_cu{cuda_major}-{version}.dist-info"
    write(root, f"{sp}/{dist}/METADATA", f"Metadata-Version: 2.4\nName: nvidia-cudnn-cu{cuda_major}\n"
          f"Version: {version}\n\nbody\n")  # fmt: skip
    lines = []
    for base in ("libcudnn", *SUB_LIBRARIES[major]):
        data = lib_bytes(base, short)
        write(root, f"{sp}/nvidia/cudnn/lib/{base}.so.{major}", data)
        lines.append(f"nvidia/cudnn/lib/{base}.so.{major},sha256=x,{len(data)}")
    s_major, s_minor, s_patch = (int(x) for x in short.split("."))
    write(root, f"{sp}/nvidia/cudnn/include/cudnn_version.h", cudnn_header(s_major, s_minor, s_patch))
    write(root, f"{sp}/{dist}/RECORD", "\n".join(lines) + f"\n{dist}/RECORD,,\n")


def torch_venv(root, env, *, pin="9.19.0.56", wheel="9.19.0.56", cuda="13.0", python="python3.12",
               cudnn_major=9, runpath=TORCH_RUNPATH, kernels=None):  # fmt: skip
    """A venv with torch 2.11.0 pinning nvidia-cudnn-cu13==<pin> and that wheel installed at <wheel>;
    ``kernels`` (fatbin blobs, see kernel_blobs) gives its libtorch_cuda.so a .nv_fatbin section."""
    sp = f"{env}/lib/{python}/site-packages"
    write(root, f"{env}/pyvenv.cfg", f"home = /usr/bin\nversion = {python[6:]}.3\n")
    write(root, f"/usr/bin/{python}", build_elf(["libc.so.6"]))
    link(root, f"{env}/bin/python", f"/usr/bin/{python}")
    cuda_major = int(cuda.split(".")[0])
    metadata = (
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\nRequires-Dist: filelock\n"
        f'Requires-Dist: nvidia-cudnn-cu{cuda_major}=={pin}; platform_system == "Linux"\n'
        'Requires-Dist: opt-einsum>=3.3; extra == "opt-einsum"\n\nbody\n'
    )
    write(root, f"{sp}/torch-2.11.0.dist-info/METADATA", metadata)
    write(root, f"{sp}/torch/version.py", f"__version__ = '2.11.0+cu{cuda.replace('.', '')}'\n"
          f"debug = False\ncuda: Optional[str] = '{cuda}'\nhip: Optional[str] = None\n")  # fmt: skip
    needed = ["libc10_cuda.so", f"libcudnn.so.{cudnn_major}", "libcudart.so.13"]
    library = build_elf(needed, "libtorch_cuda.so", runpath=runpath)
    if kernels is not None:
        library = add_section(library, build_fatbin(kernels))
    write(root, f"{sp}/torch/lib/libtorch_cuda.so", library)
    if wheel:
        cudnn_wheel(root, sp, wheel, cuda_major)
    return sp


def kernel_blobs(sm=(75, 80, 86, 90, 100, 120), ptx=(120,), blobs=2):
    """Fatbin blobs as torch 2.11 cu130 wheels build them (TORCH_CUDA_ARCH_LIST 7.5 ... 12.0+PTX): each blob
    one cubin per ``sm`` and one PTX per ``ptx``, with small payloads."""
    one = [(KIND_ELF, arch, 64 + arch) for arch in sm] + [(KIND_PTX, arch, 40 + arch) for arch in ptx]
    return [one] * blobs


def mixed_copy(root, sp, system_version="9.14.0", base="libcudnn_ops"):
    """Copy the system's sub-library over the wheel's (as `cp libcudnn_ops.so.9 nvidia/cudnn/lib` does)."""
    write(root, f"{sp}/nvidia/cudnn/lib/{base}.so.9", lib_bytes(base, system_version))


def conda_env_with_python(root, env, version="9.1.0", cuda_major=12):
    """A conda env with cuDNN (conda-meta) and a python whose RPATH is $ORIGIN/../lib (as conda builds it)."""
    conda_env(root, env, version, cuda_major=cuda_major)
    system_sub_libraries(root, version, directory=f"{env}/lib")
    write(root, f"{env}/bin/python3.11", build_elf(["libpython3.11.so.1.0"], rpath="$ORIGIN/../lib"))
    link(root, f"{env}/bin/python", "python3.11")
    write(
        root, f"{env}/lib/python3.11/site-packages/README.txt", "an empty site-packages, as conda makes it\n"
    )


def ld_library_path_tarball(root, prefix="/usr/local/cuda-12.8", version="9.1.0"):
    """A tarball cuDNN in <prefix>/lib64 and LD_LIBRARY_PATH pointing at it in /etc/environment."""
    system_sub_libraries(root, version, directory=f"{prefix}/lib64")
    write(root, f"{prefix}/include/cudnn_version.h", cudnn_header(*(int(x) for x in version.split("."))))
    write(root, "/etc/environment", f'PATH="/usr/local/sbin:/usr/bin"\nLD_LIBRARY_PATH="{prefix}/lib64"\n')


def driver_userspace(root, version, *, loaded=None):
    """User-space driver libraries of <version> (libnvidia-ml, libcuda) and a loaded module of <loaded>."""
    for name in ("libnvidia-ml.so", "libcuda.so"):
        write(root, f"{MULTIARCH}/{name}.{version}", "ELF")
        link(root, f"{MULTIARCH}/{name}.1", f"{name}.{version}")
    if loaded:
        write(root, "/sys/module/nvidia/version", loaded + "\n")


def gsp_firmware(root, version):
    for name in ("gsp_ga10x.bin", "gsp_tu10x.bin"):
        write(root, f"/usr/lib/firmware/nvidia/{version}/{name}", "FW")


def kernels(root, releases, *, module_for=(), headers_for=(), running=None):
    """Installed kernels (/boot/vmlinuz-*, /usr/lib/modules/*); a DKMS nvidia.ko and headers for some."""
    for release in releases:
        write(root, f"/boot/vmlinuz-{release}", "kernel")
        write(root, f"/usr/lib/modules/{release}/modules.dep", "kernel/fs/ext4/ext4.ko:\n")
    for release in module_for:
        write(root, f"/usr/lib/modules/{release}/updates/dkms/nvidia.ko", "ko")
        with open(os.path.join(root, f"usr/lib/modules/{release}/modules.dep"), "a") as handle:
            handle.write("updates/dkms/nvidia.ko:\n")
    for release in headers_for:
        write(root, f"/usr/src/linux-headers-{release}/Makefile", "all:\n")
        link(root, f"/usr/lib/modules/{release}/build", f"/usr/src/linux-headers-{release}")
    if running:
        write(root, "/proc/sys/kernel/osrelease", running + "\n")


def cuda_compat(root, toolkit="/usr/local/cuda-13.0", version="580.95.05"):
    """NVIDIA's cuda-compat package files: <toolkit>/compat/libcuda.so.<version> and its links."""
    write(root, f"{toolkit}/compat/libcuda.so.{version}", "ELF")
    link(root, f"{toolkit}/compat/libcuda.so.1", f"libcuda.so.{version}")
    link(root, f"{toolkit}/compat/libcuda.so", "libcuda.so.1")


def bare_metal(root, *, package="580.126.09", loaded="580.95.05", running="6.8.0-49-generic", newer=None):
    """An Ubuntu 24.04 host with NVIDIA's driver 580 open packages (DKMS), upgraded to <package> but still
    running the module <loaded>; DKMS built for <running>; <newer>, when given, installed without a module."""
    link(root, "/lib", "usr/lib")
    write(root, "/etc/os-release", 'NAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n')
    revision = f"{package}-0ubuntu1"
    dpkg_db(
        root,
        [
            ("nvidia-driver-580-open", revision, "install ok installed", "amd64"),
            ("nvidia-dkms-580-open", revision, "install ok installed", "amd64"),
            ("libnvidia-compute-580", revision, "install ok installed", "amd64"),
        ],
        {"nvidia-dkms-580-open": [f"/usr/src/nvidia-{package}", f"/usr/src/nvidia-{package}/dkms.conf"]},
    )
    driver_userspace(root, package, loaded=loaded)
    write(root, "/proc/modules", "nvidia_uvm 2076672 0 - Live 0x0\nnvidia 11960320 1 nvidia_uvm, Live 0x0\n")
    ld_cache(root, [(f"{n}.1", f"{MULTIARCH}/{n}.1") for n in ("libnvidia-ml.so", "libcuda.so")])
    write(root, f"/usr/src/nvidia-{package}/dkms.conf", 'PACKAGE_NAME="nvidia"\n')
    write(root, f"/var/lib/dkms/nvidia/{package}/{running}/x86_64/module/nvidia.ko", "ko")
    link(root, f"/var/lib/dkms/nvidia/{package}/source", f"/usr/src/nvidia-{package}")
    gsp_firmware(root, package)
    installed = [running, newer] if newer else [running]
    kernels(root, installed, module_for=[running], headers_for=[running], running=running)


def h200_torch(root, **kwargs):
    """The H200 tree with every 9.14.0 sub-library and a torch venv (pin and wheel 9.19.0.56 by default)."""
    fakeroot.h200(root)
    shutil.rmtree(root / SP.lstrip("/") / "nvidia_cudnn_cu13-9.19.0.56.dist-info")
    system_sub_libraries(root, "9.14.0")
    torch_venv(root, VENV, **kwargs)
    return root
