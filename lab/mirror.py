"""The local NVIDIA artifact mirror, in NVIDIA's redist layout, built from NVIDIA's PyPI wheels.

Output (.lab/mirror/):
  cudnn/redist/redistrib_<X.Y.Z>.json
  cudnn/redist/cudnn/<platform>/cudnn-<platform>-<X.Y.Z.B>_cuda<M>-archive.tar.xz
  cuda/redist/redistrib_<X.Y.Z>.json
  cuda/redist/<comp>/<platform>/<comp>-<platform>-<ver>-archive.tar.xz
  wheels/   the original wheels, a flat pip --find-links directory

<platform> is linux-x86_64 (`build`), and linux-sbsa for Arm servers (`build_sbsa`: NVIDIA's aarch64 wheels,
the same versions; a smaller set, SBSA). A manifest lists every platform built for its release: building one
platform keeps the other's entries whose archives are there.

Archives are streamed from the wheel (zip) into `xz` without unpacking to disk, with
fixed owners and mtimes, so the same wheel gives the same bytes. An archive is rebuilt
only when its stamp (wheel names/sizes + recipe format) changed or the file is gone.
"""

import json
import os
import re
import subprocess
import sys
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from lab import STATE, LabError
from lab.xzstore import XZ_OPTS, add_bytes, add_dirs, add_link, tar_info, write_tar_xz

FORMAT = 1  # bump when the archive recipe changes: every archive is rebuilt
PLATFORM = "linux-x86_64"
SBSA = "linux-sbsa"
# NVIDIA's redist platform -> the machine of its wheels' tags, and the tags pip may download for it (the
# wheels of another machine than this one: pip download --platform, for CPython 3.11)
WHEEL_MACHINE = {PLATFORM: "x86_64", SBSA: "aarch64"}
PIP_PLATFORMS = {
    SBSA: (
        "manylinux_2_28_aarch64",
        "manylinux_2_27_aarch64",
        "manylinux2014_aarch64",
        "manylinux_2_17_aarch64",
    ),  # fmt: skip
}

DEFAULT_CUDNN = ("9.28.0.42", "9.14.0.64")
CUDNN_VARIANTS = ("12", "13")
# Two CUDA releases, so that toolkits side by side (and their audit) can be tested.
DEFAULT_CUDA_RELEASES = ("13.0.2", "13.1.0")

# The component versions of a CUDA release, as NVIDIA's redistrib_<release>.json lists them
# (component key -> (NVIDIA's "name", "version")), and the PyPI wheel each is built from.
# Source: NVIDIA's redistrib_13.0.2.json (release_date 2025-10-09; tests/data/nvidia-redist holds its
# names and versions for x86_64), high confidence; the same versions are the cuda-*-13-0/lib*-13-0 packages
# NVIDIA's apt repository installed on a lent H100 (tests/data/h100-ubuntu2404-cuda13).
CUDA_RELEASES = {
    "13.0.2": {
        "cuda_nvcc": ("CUDA NVCC", "13.0.88"),
        "cuda_crt": ("CUDA CRT", "13.0.88"),
        "libnvvm": ("CUDA NVVM", "13.0.88"),
        "cuda_cudart": ("CUDA Runtime (cudart)", "13.0.96"),
        "cuda_nvrtc": ("CUDA NVRTC", "13.0.88"),
        "cuda_cccl": ("CXX Core Compute Libraries", "13.0.85"),
        "cuda_culibos": ("CUDA MATH Library (cuda culibos)", "13.0.85"),
        "cuda_cupti": ("CUPTI", "13.0.85"),
        "cuda_nvml_dev": ("CUDA NVML Headers", "13.0.87"),
        "cuda_nvtx": ("CUDA NVTX", "13.0.85"),
        "cuda_opencl": ("CUDA OpenCL", "13.0.85"),
        "cuda_profiler_api": ("CUDA Profiler API", "13.0.85"),
        "libcublas": ("CUDA cuBLAS", "13.1.0.3"),
        "libcufft": ("CUDA cuFFT", "12.0.0.61"),
        "libcufile": ("CUDA cuFile", "1.15.1.6"),
        "libcurand": ("CUDA cuRAND", "10.4.0.35"),
        "libcusolver": ("CUDA cuSOLVER", "12.0.4.66"),
        "libcusparse": ("CUDA cuSPARSE", "12.6.3.3"),
        "libnpp": ("CUDA NPP", "13.0.1.2"),
        "libnvfatbin": ("NVIDIA compiler library for fatbin interaction", "13.0.85"),
        "libnvjitlink": ("NVIDIA compiler library for JIT LTO functionality", "13.0.88"),
        "libnvjpeg": ("CUDA nvJPEG", "13.0.1.86"),
        "libnvptxcompiler": ("CUDA libnvptxcompiler", "13.0.88"),
    },
    # CUDA 13.1 GA: the first 13.1 wheels NVIDIA published on PyPI (nvcc/crt/nvvm/nvrtc/cudart
    # 13.1.80, cccl 13.1.78); NVIDIA's redistrib_13.1.0.json was not read, so the component versions
    # are the wheels' (medium confidence). The second toolkit of the side-by-side and audit tests: the
    # compiler subset only (lab/README.md says why).
    "13.1.0": {
        "cuda_nvcc": ("CUDA NVCC", "13.1.80"),
        "cuda_crt": ("CUDA CRT", "13.1.80"),
        "libnvvm": ("CUDA NVVM", "13.1.80"),
        "cuda_cudart": ("CUDA Runtime (cudart)", "13.1.80"),
        "cuda_nvrtc": ("CUDA NVRTC", "13.1.80"),
        "cuda_cccl": ("CXX Core Compute Libraries", "13.1.78"),
    },
}
# The components of NVIDIA's redistrib_13.0.2.json (linux-x86_64) the lab does not build, and why. A unit
# test holds this table and CUDA_RELEASES["13.0.2"] to NVIDIA's whole list.
NO_WHEEL = "no PyPI wheel of NVIDIA's for this release"
NOT_TOOLKIT = "not part of the CUDA toolkit (driver, fabric or NVLink tooling)"
LEFT_OUT = {
    "cuda_cuobjdump": NO_WHEEL + " (nvidia-cuda-cuobjdump starts at 13.2)",
    "cuda_nvdisasm": NO_WHEEL + " (nvidia-cuda-nvdisasm starts at 13.2)",
    "cuda_nvprune": NO_WHEEL,
    "cuda_gdb": NO_WHEEL,
    "cuda_nsight": NO_WHEEL,
    "nsight_compute": NO_WHEEL,
    "nsight_systems": NO_WHEEL,
    "cuda_documentation": NO_WHEEL,
    "cuda_ctadvisor": NO_WHEEL,
    "cuda_sandbox_dev": NO_WHEEL,
    "cuda_cuxxfilt": "the wheel holds nv_decode.h only, not bin/cu++filt or libcufilt.a",
    "cuda_sanitizer_api": "the wheel's layout is not NVIDIA's compute-sanitizer/ tree (no x86/, no "
    "TreeLauncher* helpers)",
    "nvidia_fs": NOT_TOOLKIT,
    "nvidia_driver": NOT_TOOLKIT,
    "fabricmanager": NOT_TOOLKIT,
    "imex": NOT_TOOLKIT,
    "libnvidia_nscq": NOT_TOOLKIT,
    "libnvsdm": NOT_TOOLKIT,
    "mft": NOT_TOOLKIT,
    "mft_autocomplete": NOT_TOOLKIT,
    "mft_oem": NOT_TOOLKIT,
    "nvlsm": NOT_TOOLKIT,
    "collectx_bringup": NOT_TOOLKIT,
}
WHEEL_OF = {
    "cuda_nvcc": "nvidia-cuda-nvcc",
    "cuda_crt": "nvidia-cuda-crt",
    "libnvvm": "nvidia-nvvm",
    "cuda_cudart": "nvidia-cuda-runtime",
    "cuda_nvrtc": "nvidia-cuda-nvrtc",
    "cuda_cccl": "nvidia-cuda-cccl",
    "cuda_culibos": "nvidia-cuda-culibos",
    "cuda_cupti": "nvidia-cuda-cupti",
    "cuda_nvml_dev": "nvidia-nvml-dev",
    "cuda_nvtx": "nvidia-nvtx",
    "cuda_opencl": "nvidia-cuda-opencl",
    "cuda_profiler_api": "nvidia-cuda-profiler-api",
    "libcublas": "nvidia-cublas",
    "libcufft": "nvidia-cufft",
    "libcufile": "nvidia-cufile",
    "libcurand": "nvidia-curand",
    "libcusolver": "nvidia-cusolver",
    "libcusparse": "nvidia-cusparse",
    "libnpp": "nvidia-npp",
    "libnvfatbin": "nvidia-nvfatbin",
    "libnvjitlink": "nvidia-nvjitlink",
    "libnvjpeg": "nvidia-nvjpeg",
    "libnvptxcompiler": "nvidia-nvptxcompiler",
}
CU13 = "nvidia/cu13/"
# (wheel component, source prefix inside the wheel, destination prefix in the archive).
# NVIDIA's toolkit layout: nvvm lives under nvvm/ (bin/cicc, lib64/libnvvm.so, libdevice, include).
NVVM_MAP = (
    ("libnvvm", CU13 + "nvvm/", "nvvm/"),
    ("libnvvm", CU13 + "lib/libnvvm", "nvvm/lib64/libnvvm"),
    ("libnvvm", CU13 + "include/nvvm.h", "nvvm/include/nvvm.h"),
)


def _tree(comp, *dirs):
    """The wheel's nvidia/cu13/<dir>/ trees at <dir>/ of the archive (include/, lib/: NVIDIA's layout)."""
    return tuple((comp, f"{CU13}{d}/", f"{d}/") for d in dirs)


CUDA_MAPS = {
    # cuda_nvcc also carries crt and nvvm (as it did up to CUDA 12) so that bin/nvcc compiles on
    # its own; cuda_crt and libnvvm are published as well, as NVIDIA does since 13.0.
    "cuda_nvcc": (("cuda_nvcc", CU13 + "bin/", "bin/"), ("cuda_nvcc", CU13 + "include/", "include/"))
    + (("cuda_crt", CU13 + "include/crt/", "include/crt/"),)
    + NVVM_MAP,
    "cuda_crt": (("cuda_crt", CU13 + "include/crt/", "include/crt/"),),
    "libnvvm": NVVM_MAP,
    "cuda_cudart": _tree("cuda_cudart", "include", "lib"),
    "cuda_nvrtc": _tree("cuda_nvrtc", "include", "lib"),
    "cuda_cccl": _tree("cuda_cccl", "include"),
    "cuda_culibos": _tree("cuda_culibos", "lib"),
    "cuda_cupti": _tree("cuda_cupti", "include", "lib"),
    "cuda_nvml_dev": _tree("cuda_nvml_dev", "include"),
    "cuda_nvtx": _tree("cuda_nvtx", "include", "lib"),
    "cuda_opencl": _tree("cuda_opencl", "include", "lib"),
    "cuda_profiler_api": _tree("cuda_profiler_api", "include"),
    "libcublas": _tree("libcublas", "include", "lib"),
    "libcufft": _tree("libcufft", "include", "lib"),
    "libcufile": _tree("libcufile", "include", "lib"),
    "libcurand": _tree("libcurand", "include", "lib"),
    "libcusolver": _tree("libcusolver", "include", "lib"),
    "libcusparse": _tree("libcusparse", "include", "lib"),
    "libnpp": _tree("libnpp", "include", "lib"),
    "libnvfatbin": _tree("libnvfatbin", "include", "lib"),
    "libnvjitlink": _tree("libnvjitlink", "include", "lib"),
    "libnvjpeg": _tree("libnvjpeg", "include", "lib"),
    "libnvptxcompiler": _tree("libnvptxcompiler", "include", "lib"),
}
# Shared objects whose full file name is not <soname>.<component version>: the wheel's name -> NVIDIA's
# (the H100's dpkg -L, tests/data/h100-ubuntu2404-cuda13), and links NVIDIA adds between them.
SO_RENAMES = {
    # nvvm/lib64/libnvvm.so.4 -> libnvvm.so.4.0.0 (cuda_nvcc's archive carries nvvm too)
    "libnvvm": {"libnvvm.so.4": "libnvvm.so.4.0.0"},
    "cuda_nvcc": {"libnvvm.so.4": "libnvvm.so.4.0.0"},
    "cuda_cupti": {"libcupti.so.13": "libcupti.so.2025.3.1"},
    "cuda_nvtx": {"libnvtx3interop.so.1": "libnvtx3interop.so.1.1.0"},
    "cuda_opencl": {"libOpenCL.so.1": "libOpenCL.so.1.0.0"},
    "libcufile": {"libcufile.so.0": "libcufile.so.1.15.1", "libcufile_rdma.so.1": "libcufile_rdma.so.1.15.1"},
}
SO_LINKS = {
    # libOpenCL.so.1 -> libOpenCL.so.1.0 -> libOpenCL.so.1.0.0
    "cuda_opencl": (
        ("lib/libOpenCL.so.1", "libOpenCL.so.1.0"),
        ("lib/libOpenCL.so.1.0", "libOpenCL.so.1.0.0"),
    ),
}
CUDNN_MAP = (("cudnn", "nvidia/cudnn/include/", "include/"), ("cudnn", "nvidia/cudnn/lib/", "lib/"))
SONAME = re.compile(r"^(?P<stem>.+\.so)\.(?P<ver>\d+(?:\.\d+)*)$")
VERSION4 = re.compile(r"^\d+\.\d+\.\d+\.\d+$")


def cache_dir():
    base = os.environ.get("GPUFLEET_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "gpufleet")
    return Path(base) / "wheels"


def mirror_dir():
    return STATE / "mirror"


def wheel_file_name(dist):
    return dist.replace("-", "_")


def this_platform():
    """NVIDIA's redist platform of the machine running this (x86_64: linux-x86_64, aarch64: linux-sbsa)."""
    machine = os.uname().machine
    return next((p for p, m in WHEEL_MACHINE.items() if m == machine), PLATFORM)


def find_wheel(dist, version, directory=None, platform=PLATFORM):
    directory = Path(directory or cache_dir())
    prefix = f"{wheel_file_name(dist)}-{version}-"
    machine = WHEEL_MACHINE[platform]
    if directory.is_dir():
        for path in sorted(directory.iterdir()):
            if path.name.startswith(prefix) and path.name.endswith(".whl") and machine in path.name:
                return path
    return None


def fetch_wheel(dist, version, log=print, platform=PLATFORM):
    """The cached wheel of dist==version for ``platform``; downloaded with pip (hash-checked by pip) when
    missing."""
    found = find_wheel(dist, version, platform=platform)
    if found:
        return found
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    log(f"mirror: downloading {dist}=={version} ({WHEEL_MACHINE[platform]}) into {directory}")
    start = time.monotonic()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-cache-dir"]
    for tag in PIP_PLATFORMS.get(platform, ()):
        cmd += ["--platform", tag]
    if platform in PIP_PLATFORMS:
        cmd += ["--python-version", "3.11"]
    cmd += ["--disable-pip-version-check", "-q", "-d", str(directory), f"{dist}=={version}"]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    found = find_wheel(dist, version, platform=platform)
    if res.returncode != 0 or not found:
        text = res.stderr + res.stdout
        if "No matching distribution" in text or "Could not find a version" in text:
            raise LabError(
                f"{dist}=={version} is not on the package index: choose a version listed by "
                f"`pip index versions {dist}`"
            )
        last = (text.strip().splitlines() or ["no output"])[-1][:200]
        raise LabError(f"downloading {dist}=={version} failed ({last}): check the network or pip config")
    log(f"mirror: downloaded {found.name} in {time.monotonic() - start:.0f}s")
    return found


# pip downloads at once: a fresh machine's mirror is ~1.3 GB of wheels, and the time is the network's
FETCH_WORKERS = 6


def fetch_wheels(wanted, log=print, workers=FETCH_WORKERS, platform=PLATFORM):
    """fetch_wheel for each (dist, version) of ``wanted``, the missing ones downloaded ``workers`` at a time
    (each its own pip, its own file); the paths in ``wanted``'s order. Every download is waited for; then the
    first failure in ``wanted``'s order is raised, so the message does not depend on which finished first."""
    wanted = list(dict.fromkeys(wanted))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(fetch_wheel, dist, version, log, platform) for dist, version in wanted]
    for future in futures:
        if future.exception() is not None:
            raise future.exception()
    return [future.result() for future in futures]


def validate_cudnn_version(version):
    if not VERSION4.match(version):
        raise LabError(f"cuDNN version {version!r}: give 4 parts like 9.14.0.64 (as on the package index)")
    return version


def validate_cuda_release(release):
    if release not in CUDA_RELEASES:
        known = ", ".join(CUDA_RELEASES)
        raise LabError(f"CUDA release {release!r} is not known to the lab: choose from {known}")
    return release


def short(version):
    """9.14.0.64 -> 9.14.0 (how NVIDIA names cuDNN manifests)."""
    return ".".join(version.split(".")[:3])


# ---------------------------------------------------------------- archives


@dataclass
class Archive:
    """One tarball: where it goes, its top folder, and what goes in it."""

    relative_path: str  # relative to the redist directory
    top: str
    sources: dict  # wheel component -> wheel path
    mapping: tuple
    so_version: str
    license_from: str  # wheel component whose License.txt becomes LICENSE
    extra: dict = field(default_factory=dict)
    renames: dict = field(default_factory=dict)  # shared object in the wheel -> NVIDIA's file name
    links: tuple = ()  # (archive path, target): links NVIDIA has besides the usual ones

    def stamp_inputs(self):
        inputs = {
            "format": FORMAT,
            "xz": XZ_OPTS,
            "top": self.top,
            "so_version": self.so_version,
            "mapping": [list(m) for m in self.mapping],
            "wheels": {k: [Path(v).name, Path(v).stat().st_size] for k, v in sorted(self.sources.items())},
        }
        # only where set: the stamps of the archives without them stay valid (nothing is rebuilt)
        if self.renames:
            inputs["renames"] = dict(sorted(self.renames.items()))
        if self.links:
            inputs["links"] = [list(link) for link in self.links]
        return inputs


def plan_members(archive):
    """[(zip path or None, archive path, kind, target/None, ZipInfo/None, wheel component)], sorted.

    kind is 'file', or 'link' (a symlink to target). Shared-object files whose version suffix
    is a prefix of so_version get NVIDIA's full name plus the usual links
    (libX.so -> libX.so.9 -> libX.so.9.14.0); archive.renames names the others (libcupti.so.13 ->
    libcupti.so.2025.3.1) and archive.links adds NVIDIA's further links.
    """
    members = {}
    zips = {comp: zipfile.ZipFile(path) for comp, path in archive.sources.items()}
    try:
        for comp, src, dst in archive.mapping:
            for info in zips[comp].infolist():
                if info.is_dir() or not info.filename.startswith(src):
                    continue
                rel = dst + info.filename[len(src) :]
                members[rel] = ("file", None, info, comp)
        for rel in list(members):
            directory, _, name = rel.rpartition("/")
            match = SONAME.match(name)
            if not match or not directory.endswith(("lib", "lib64")):
                continue
            stem, ver = match.group("stem"), match.group("ver")
            full, real = archive.so_version, archive.renames.get(name)
            if real is None and ver != full and full.startswith(ver + "."):
                real = f"{stem}.{full}"
            if real:
                members[f"{directory}/{real}"] = members.pop(rel)
                members[rel] = ("link", real, None, None)
            members.setdefault(f"{directory}/{stem}", ("link", name, None, None))
        for rel, target in archive.links:
            members[rel] = ("link", target, None, None)
    finally:
        for zf in zips.values():
            zf.close()
    return sorted(members.items())


def _mode(info):
    mode = (info.external_attr >> 16) & 0o777
    if not mode:
        mode = 0o644
    return mode | 0o644


def _fill_tar(tar, archive, members, zips, mtime):
    dirs = set()
    for rel, (kind, target, info, comp) in members:
        add_dirs(tar, archive.top, rel, dirs, mtime)
        name = f"{archive.top}/{rel}"
        if kind == "link":
            add_link(tar, name, target, mtime)
            continue
        ti = tar_info(name, mtime, _mode(info))
        ti.size = info.file_size
        if rel.startswith(("bin/", "nvvm/bin/")):
            ti.mode |= 0o755
        with zips[comp].open(info) as src:
            tar.addfile(ti, src)
    add_bytes(tar, f"{archive.top}/LICENSE", _license_bytes(zips[archive.license_from]), mtime)


def write_archive(archive, out_path, mtime):
    """Write the .tar.xz (lab/xzstore.py); returns (size, sha256, md5)."""
    members = plan_members(archive)
    zips = {comp: zipfile.ZipFile(path) for comp, path in archive.sources.items()}
    try:
        return write_tar_xz(out_path, lambda tar: _fill_tar(tar, archive, members, zips, mtime), XZ_OPTS)
    finally:
        for zf in zips.values():
            zf.close()


def _license_bytes(zf):
    for name in zf.namelist():
        if ".dist-info/" in name and name.lower().endswith(("license.txt", "license")):
            return zf.read(name)
    return b"See NVIDIA's license for this software.\n"


def wheel_date(path):
    """The newest file date inside the wheel (YYYY-MM-DD) and its epoch: the archive mtime."""
    with zipfile.ZipFile(path) as zf:
        newest = max(info.date_time for info in zf.infolist())
    epoch = int(time.mktime((*newest, 0, 0, -1)))
    return f"{newest[0]:04d}-{newest[1]:02d}-{newest[2]:02d}", epoch


def stamp_path(relative):
    return STATE / "stamps" / (relative.replace("/", "__") + ".json")


def build_archive(redist_dir, archive, log):
    """Build (or reuse) one archive; returns its manifest entry."""
    out_path = redist_dir / archive.relative_path
    stamp = stamp_path(f"{redist_dir.name}-{redist_dir.parent.name}/{archive.relative_path}")
    inputs = archive.stamp_inputs()
    if out_path.exists() and stamp.exists():
        try:
            saved = json.loads(stamp.read_text(encoding="utf-8"))
        except ValueError:
            saved = {}
        same_size = saved.get("entry", {}).get("size") == str(out_path.stat().st_size)
        if saved.get("inputs") == inputs and same_size:
            log(f"mirror: {archive.relative_path} up to date")
            return saved["entry"]
    _, mtime = wheel_date(archive.sources[archive.license_from])
    log(f"mirror: packing {archive.relative_path} (xz {' '.join(XZ_OPTS)})")
    start = time.monotonic()
    size, sha256, md5 = write_archive(archive, out_path, mtime)
    entry = {"relative_path": archive.relative_path, "sha256": sha256, "md5": md5, "size": str(size)}
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps({"inputs": inputs, "entry": entry}, indent=1), encoding="utf-8")
    log(f"mirror: packed {archive.relative_path} in {time.monotonic() - start:.0f}s ({size / 1e6:.0f} MB)")
    return entry


def cuda_component(comp, title, version, entry, platform=PLATFORM):
    """A component of redistrib_<release>.json, as NVIDIA writes it: ``entry`` is its archive's."""
    return {
        "name": title,
        "license": "CUDA Toolkit",
        "license_path": f"{comp}/LICENSE.txt",
        "version": version,
        platform: entry,
    }


def kept_platforms(path, redist, key, platform):
    """{platform: entry} of ``key`` in the manifest at ``path`` for the platforms other than ``platform``
    whose archives are still there (what building one platform keeps of the others)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    kept = {}
    for other, entry in (doc.get(key) or {}).items():
        if other == platform or other not in WHEEL_MACHINE or not isinstance(entry, dict):
            continue
        archives = [entry] if "relative_path" in entry else list(entry.values())
        if archives and all((redist / a.get("relative_path", "")).is_file() for a in archives):
            kept[other] = entry
    return kept


def write_json(path, doc):
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(doc, indent=4) + "\n", encoding="utf-8")
    os.replace(tmp, path)


# ---------------------------------------------------------------- cuDNN and CUDA


def cudnn_archive(version, major, wheel, platform=PLATFORM):
    name = f"cudnn-{platform}-{version}_cuda{major}-archive"
    return Archive(
        relative_path=f"cudnn/{platform}/{name}.tar.xz",
        top=name,
        sources={"cudnn": wheel},
        mapping=CUDNN_MAP,
        so_version=short(version),
        license_from="cudnn",
    )


def cudnn_manifest(version, entries, release_date, platform=PLATFORM, kept=None):
    """``entries`` {major: archive entry} of ``platform``; ``kept`` {other platform: {cudaM: entry}}."""
    builds = {**(kept or {}), platform: {f"cuda{major}": entry for major, entry in sorted(entries.items())}}
    variants = {key[4:] for variant in builds.values() for key in variant}
    return {
        "release_date": release_date,
        "release_label": short(version),
        "release_product": "cudnn",
        "cudnn": {
            "name": "NVIDIA CUDA Deep Neural Network library",
            "license": "cudnn",
            "license_path": "cudnn/LICENSE.txt",
            "version": version,
            "cuda_variant": sorted(variants, key=int),
            **dict(sorted(builds.items())),
        },
    }


def build_cudnn(version, variants=CUDNN_VARIANTS, log=print, platform=PLATFORM):
    validate_cudnn_version(version)
    redist = mirror_dir() / "cudnn" / "redist"
    wheels = {m: fetch_wheel(f"nvidia-cudnn-cu{m}", version, log, platform) for m in variants}
    entries = {
        m: build_archive(redist, cudnn_archive(version, m, w, platform), log) for m, w in wheels.items()
    }
    release_date, _ = wheel_date(next(iter(wheels.values())))
    _write_license(redist / "cudnn" / "LICENSE.txt", next(iter(wheels.values())))
    path = redist / f"redistrib_{short(version)}.json"
    kept = kept_platforms(path, redist, "cudnn", platform)
    write_json(path, cudnn_manifest(version, entries, release_date, platform, kept))
    return path, list(wheels.values())


def cuda_archive(comp, version, wheels, platform=PLATFORM):
    name = f"{comp}-{platform}-{version}-archive"
    mapping = CUDA_MAPS[comp]
    return Archive(
        relative_path=f"{comp}/{platform}/{name}.tar.xz",
        top=name,
        sources={src: wheels[src] for src, _, _ in mapping},
        mapping=mapping,
        so_version=version,
        license_from=comp,
        renames=SO_RENAMES.get(comp, {}),
        links=SO_LINKS.get(comp, ()),
    )


def build_cuda(release, log=print, platform=PLATFORM, components=None):
    """The release's components (``components``: a subset of them) for ``platform``; the manifest keeps the
    other platforms' entries whose archives are there."""
    validate_cuda_release(release)
    comps = {c: v for c, v in CUDA_RELEASES[release].items() if components is None or c in components}
    redist = mirror_dir() / "cuda" / "redist"
    sources = {src for comp in comps for src, _, _ in CUDA_MAPS[comp]}
    versions = {c: v for c, (_, v) in CUDA_RELEASES[release].items()}
    wheels = {src: fetch_wheel(WHEEL_OF[src], versions[src], log, platform) for src in sorted(sources)}
    path = redist / f"redistrib_{release}.json"
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        previous = {}
    doc = {"release_date": None, "release_label": release, "release_product": "cuda"}
    dates = []
    for comp, (title, version) in CUDA_RELEASES[release].items():
        kept = kept_platforms(path, redist, comp, platform)
        if comp in comps:
            entry = build_archive(redist, cuda_archive(comp, version, wheels, platform), log)
            _write_license(redist / comp / "LICENSE.txt", wheels[comp])
            dates.append(wheel_date(wheels[comp])[0])
            kept[platform] = entry
        if kept:
            doc[comp] = {k: v for k, v in cuda_component(comp, title, version, {}).items() if k != PLATFORM}
            doc[comp].update(sorted(kept.items()))
    doc["release_date"] = max([*dates, previous.get("release_date") or ""])
    write_json(path, doc)
    return path, list(wheels.values())


def _write_license(path, wheel):
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as zf:
        data = _license_bytes(zf)
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def publish_wheels(wheels):
    """Hardlink (or copy) the wheels into wheels/, a flat pip --find-links directory."""
    target = mirror_dir() / "wheels"
    target.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        dest = target / wheel.name
        if dest.exists() and dest.stat().st_size == wheel.stat().st_size:
            continue
        if dest.exists():
            dest.unlink()
        try:
            os.link(wheel, dest)
        except OSError:
            import shutil

            shutil.copyfile(wheel, dest)


# What the lab builds for Arm servers (linux-sbsa, from NVIDIA's aarch64 wheels: the same versions as
# x86_64): one cuDNN for CUDA 13, and CUDA 13.0.2's compiler with cuBLAS and cuRAND (the cuda_toolkit role's
# verify links both), which the arm64 scenario installs, with what NVIDIA's packages of those depend on
# (cuda-cudart-dev and libcublas-dev on cuda-culibos-dev, cuda-nvcc on libnvptxcompiler: lab/repo.py
# build_sbsa); the rest of the toolkit stays x86_64-only in the lab (under emulation every library costs
# minutes, and the scenario proves the platform, not each library).
SBSA_CUDNN = (("9.14.0.64", ("13",)),)
SBSA_CUDA = {"13.0.2": ("cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cudart", "cuda_cccl", "cuda_nvrtc",
                        "libcublas", "libcurand", "cuda_culibos", "libnvptxcompiler")}  # fmt: skip


def build_sbsa(log=print):
    """The linux-sbsa archives (SBSA_CUDNN, SBSA_CUDA) into the mirror's manifests; returns the manifests."""
    start = time.monotonic()
    wanted = [(f"nvidia-cudnn-cu{m}", v) for v, majors in SBSA_CUDNN for m in majors]
    for release, comps in SBSA_CUDA.items():
        versions = {c: v for c, (_, v) in CUDA_RELEASES[release].items()}
        wanted += [(WHEEL_OF[src], versions[src]) for c in comps for src, _, _ in CUDA_MAPS[c]]
    fetch_wheels(wanted, log, platform=SBSA)
    manifests = [build_cuda(release, log, SBSA, comps)[0] for release, comps in SBSA_CUDA.items()]
    manifests += [build_cudnn(v, majors, log, SBSA)[0] for v, majors in SBSA_CUDNN]
    log(f"mirror: {SBSA} archives ready in {mirror_dir()} ({time.monotonic() - start:.0f}s)")
    return manifests


def build(
    cudnn_versions=DEFAULT_CUDNN, cuda_releases=DEFAULT_CUDA_RELEASES, variants=CUDNN_VARIANTS, log=print
):
    for version in cudnn_versions:
        validate_cudnn_version(version)
    for release in cuda_releases:
        validate_cuda_release(release)
    start = time.monotonic()
    # every wheel first, several at a time: a version that is not on the index fails before any packing
    wanted = [(f"nvidia-cudnn-cu{major}", version) for version in cudnn_versions for major in variants]
    wanted += [(WHEEL_OF[c], v) for release in cuda_releases for c, (_, v) in CUDA_RELEASES[release].items()]
    fetch_wheels(wanted, log)
    manifests, wheels = [], []
    for release in cuda_releases:
        path, used = build_cuda(release, log)
        manifests.append(path)
        wheels += used
    for version in cudnn_versions:
        path, used = build_cudnn(version, variants, log)
        manifests.append(path)
        wheels += used
    publish_wheels(wheels)
    log(f"mirror: {len(manifests)} manifests ready in {mirror_dir()} ({time.monotonic() - start:.0f}s)")
    return manifests
