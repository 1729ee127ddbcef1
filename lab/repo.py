"""The lab's NVIDIA CUDA apt repository: NVIDIA's package names, versions, dependencies and file layout, built
with dpkg-deb from the mirror's redist archives (themselves NVIDIA's PyPI wheels), published as NVIDIA's flat
repositories and signed with the lab's own OpenPGP key.

Output (.lab/):
  mirror/cuda/repos/<debian12|debian13|ubuntu2404>/x86_64/   (the mirror root stands for NVIDIA's .../compute)
  mirror/cuda/repos/ubuntu2404/sbsa/   Arm servers (build_sbsa: from the mirror's linux-sbsa archives)
      *.deb (hard links into repo-build/pool), Packages, Packages.gz, Release, InRelease, Release.gpg,
      3bf863cc.pub or 8793F200.pub (the key file name NVIDIA's repository has there; the lab's key inside)
  repo-key/gnupg/        the key pair, made once per lab (gpg --batch)
  repo-key/fingerprint, repo-key/lab.pub.asc
  repo-build/pool/       the .debs (pool-sbsa/: the arm64 ones); stamps/repo__<package>.json: recipe digest,
                         control fields, hashes

Served by the mirror server: http://gpufleet-mirror/cuda/repos/debian12/x86_64/ is what NVIDIA serves at
https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/.
"""

import calendar
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import time

from lab import STATE, LabError, debs
from lab import mirror as lab_mirror

CUDA_RELEASE = "13.0.2"
CUDNN_VERSIONS = ("9.14.0.64", "9.28.0.42")
CUDNN_MAJORS = ("12", "13")
REPO_DIRS = ("debian12", "debian13", "ubuntu2404")
# The key file each NVIDIA repository directory publishes (plugins/module_utils/plan/repo.py KEYS; a unit test
# holds the two tables together). The lab's repositories carry the lab key under the same names.
KEY_FILES = {"debian12": "3bf863cc.pub", "debian13": "8793F200.pub", "ubuntu2404": "3bf863cc.pub"}
KEY_UID = "gpufleet lab CUDA repository (not NVIDIA; signs the lab's repository) <lab-repo@gpufleet.invalid>"
MAINTAINER = "cudatools <cudatools@nvidia.com>"
LAB_NOTE = "Built by the gpufleet lab from NVIDIA's PyPI wheels, in NVIDIA's package layout."
CUDA_HOME = "https://developer.nvidia.com/cuda-zone"
CUDNN_HOME = "https://developer.nvidia.com/cudnn"


@dataclasses.dataclass(frozen=True)
class Arch:
    """One architecture of NVIDIA's CUDA repositories: its directory (x86_64, sbsa), Debian architecture,
    redist platform, multiarch triplet and /usr/local/cuda-X.Y/targets/ tree (NVIDIA's sbsa packages: arm64,
    targets/sbsa-linux, cuDNN in /usr/lib/aarch64-linux-gnu)."""

    name: str
    deb: str
    platform: str
    triplet: str
    target: str

    @property
    def libdir(self):
        return f"/usr/lib/{self.triplet}"

    @property
    def incdir(self):
        return f"/usr/include/{self.triplet}"

    @property
    def target_lib(self):
        return f"targets/{self.target}/lib"

    @property
    def target_include(self):
        return f"targets/{self.target}/include"


X86_64 = Arch("x86_64", "amd64", "linux-x86_64", "x86_64-linux-gnu", "x86_64-linux")
SBSA = Arch("sbsa", "arm64", "linux-sbsa", "aarch64-linux-gnu", "sbsa-linux")
# The Arm server repositories the lab publishes and what they hold: the mirror's linux-sbsa archives
# (lab/mirror.py SBSA_CUDA, SBSA_CUDNN). Ubuntu 24.04's, as on GH200 nodes: NVIDIA publishes ubuntu2404/sbsa;
# for Debian no native sbsa repository was found (kb/hosts.py SBSA_REPOSITORIES), so the lab's Debian arm64
# host takes the redist path
SBSA_DIRS = ("ubuntu2404",)
# cuDNN 9 headers: NVIDIA's libcudnn9-headers-cuda-13 (9.14.0.64-1 on the H200's Ubuntu 24.04) ships
# <name>_v9.h and <name>.h -> <name>_v9.h in /usr/include/x86_64-linux-gnu; no maintainer scripts.
CUDNN_HEADERS = (
    "cudnn",
    "cudnn_adv",
    "cudnn_backend",
    "cudnn_cnn",
    "cudnn_graph",
    "cudnn_ops",
    "cudnn_version",
)


def state():
    return STATE


def repos_dir():
    return lab_mirror.mirror_dir() / "cuda" / "repos"


def key_dir():
    return state() / "repo-key"


def _date_epoch(text):
    return calendar.timegm(time.strptime(text, "%Y-%m-%d"))


def _manifest(product, release):
    path = lab_mirror.mirror_dir() / product / "redist" / f"redistrib_{release}.json"
    if not path.exists():
        raise LabError(f"{path} is missing: run `python -m lab mirror build` first")
    return json.loads(path.read_text(encoding="utf-8"))


def _source(product, entry):
    path = lab_mirror.mirror_dir() / product / "redist" / entry["relative_path"]
    if not path.exists():
        raise LabError(f"{path} is missing: run `python -m lab mirror build` to rebuild the mirror")
    return str(path), entry["sha256"]


# ---------------------------------------------------------------- CUDA 13.0


def _cuda_fields(summary, depends="", extra=None):
    fields = {
        "Maintainer": MAINTAINER,
        "Section": "devel",
        "Priority": "optional",
        "Homepage": CUDA_HOME,
        "Description": f"{summary}\n{LAB_NOTE}",
    }
    if depends:
        fields["Depends"] = depends
    fields.update(extra or {})
    return fields


def config_common_debs(xy, version, mtime, arch=X86_64):
    """cuda-toolkit-config-common, -<M>-config-common, -<M>-<m>-config-common: NVIDIA's linker files
    (/etc/ld.so.conf.d/000_cuda.conf, 987_cuda-<M>.conf) and the cuda / cuda-<M> alternatives."""
    major, minor = xy.split(".")
    dashed = xy.replace(".", "-")
    prefix = f"/usr/local/cuda-{xy}"
    priority = int(major) * 10 + int(minor)  # NVIDIA's: 130 for 13.0 (tests/data/h200-ubuntu2404)
    alternatives = (
        "#!/bin/sh\nset -e\n"
        'if [ "$1" = configure ]; then\n'
        f"    update-alternatives --install /usr/local/cuda cuda {prefix} {priority}\n"
        f"    update-alternatives --install /usr/local/cuda-{major} cuda-{major} {prefix} {priority}\n"
        "fi\n"
    )
    prerm = (
        "#!/bin/sh\nset -e\n"
        'if [ "$1" = remove ] || [ "$1" = deconfigure ]; then\n'
        f"    update-alternatives --remove cuda {prefix}\n"
        f"    update-alternatives --remove cuda-{major} {prefix}\n"
        "fi\n"
    )
    common = {"version": version, "arch": "all", "mtime": mtime}
    return [
        debs.Deb(
            name="cuda-toolkit-config-common",
            fields=_cuda_fields("Common config package for CUDA Toolkit."),
            files={"/etc/ld.so.conf.d/000_cuda.conf": f"/usr/local/cuda/{arch.target_lib}\n"},
            ldconfig=True,
            **common,
        ),
        debs.Deb(
            name=f"cuda-toolkit-{major}-config-common",
            fields=_cuda_fields(f"Common config package for CUDA Toolkit {major}."),
            files={
                f"/etc/ld.so.conf.d/987_cuda-{major}.conf": f"/usr/local/cuda-{major}/{arch.target_lib}\n"
            },
            ldconfig=True,
            **common,
        ),
        debs.Deb(
            name=f"cuda-toolkit-{dashed}-config-common",
            fields=_cuda_fields(f"Common config package for CUDA Toolkit {xy}."),
            dirs=(prefix,),
            scripts={"postinst": alternatives, "prerm": prerm},
            **common,
        ),
    ]


# NVIDIA's packages of a CUDA release that the lab does not build (lab/mirror.py LEFT_OUT says why for each
# redist component), and NVIDIA's dependencies the lab's packages leave out: Debian's own packages, because
# lab hosts reach no Debian mirror (the lab network has no route out), and cuda-driver-dev, whose
# stubs/libcuda.so no wheel carries. Package name stems ("-13-0" added).
LEFT_OUT_PACKAGES = {
    "cuda-cuobjdump": "no PyPI wheel for CUDA 13.0",
    "cuda-nvdisasm": "no PyPI wheel for CUDA 13.0",
    "cuda-nvprune": "no PyPI wheel",
    "cuda-gdb": "no PyPI wheel",
    "cuda-sanitizer": "the wheel's layout is not NVIDIA's compute-sanitizer/ tree",
    "cuda-cuxxfilt": "the wheel has no bin/cu++filt",
    "cuda-sandbox-dev": "no PyPI wheel",
    "cuda-driver-dev": "no wheel carries stubs/libcuda.so",
    "cuda-documentation": "no PyPI wheel",
    "cuda-visual-tools": "Nsight Compute and Nsight Systems have no PyPI wheel",
}
LEFT_OUT_DEPENDS = ("build-essential", "libmount1", "libstdc++6", "libudev1", "libgcc1")
WHEEL_SUBSET = (
    "Its files are those NVIDIA's PyPI wheels carry (shared libraries, headers, tools): NVIDIA's\n"
    "static libraries, stubs/, pkg-config files, samples and documentation are not in the wheels."
)


def _top_links(top, rules, arch=X86_64):
    """The /usr/local/cuda-X.Y/include and lib64 links, in every package with files below them (NVIDIA's
    packages all ship the same links; dpkg shares identical symlinks between packages)."""
    dests = [dest for _prefix, dest, _test in rules]
    links = []
    if any(dest.startswith(f"{top}/{arch.target_include}") for dest in dests):
        links.append((f"{top}/include", arch.target_include))
    if any(dest.startswith(f"{top}/{arch.target_lib}") for dest in dests):
        links.append((f"{top}/lib64", arch.target_lib))
    return tuple(links)


def _cuda_component(spec, manifest, mtime, top, arch=X86_64):
    source, sha = _source("cuda", manifest[spec["comp"]][arch.platform])
    extra = {k: spec[k] for k in ("ldconfig", "files") if k in spec}
    fields = {k: spec[k] for k in ("Source", "Provides", "Replaces", "Breaks") if spec.get(k)}
    return debs.Deb(
        name=spec["name"],
        version=manifest[spec["comp"]]["version"] + "-1",
        arch=arch.deb,
        fields=_cuda_fields(spec["summary"], spec.get("depends", ""), fields),
        source=source,
        source_sha256=sha,
        rules=spec["rules"],
        links=spec.get("links", _top_links(top, spec["rules"], arch)),
        mtime=mtime,
        **extra,
    )


def _pkg(**spec):
    """One package of cuda_components(): name, comp (redist component), summary, rules, and optionally
    depends, ldconfig, files, links and the control fields Source, Provides, Replaces, Breaks."""
    return spec


def cuda_components(xy, ver, arch=X86_64):
    """Each CUDA component package the lab builds, in NVIDIA's names, layout and dependencies (the H100's
    dpkg status and file lists, tests/data/h100-ubuntu2404-cuda13): /usr/local/cuda-X.Y/{bin,nvvm},
    targets/x86_64-linux/{include,lib}, the lib64 and include links. ``ver``: redist component -> version."""
    d, major = xy.replace(".", "-"), xy.split(".")[0]
    top = f"/usr/local/cuda-{xy}"
    inc, lib = f"{top}/{arch.target_include}", f"{top}/{arch.target_lib}"
    config = f"cuda-toolkit-config-common, cuda-toolkit-{major}-config-common, cuda-toolkit-{d}-config-common"
    config_or = (
        f"cuda-toolkit-config-common | cuda-cudart-11-2, "
        f"cuda-toolkit-{major}-config-common | cuda-cudart-11-2, cuda-toolkit-{d}-config-common"
    )
    headers, sonames, devlinks, static = (
        ("include/", inc, "any"),
        ("lib/", lib, "so.N"),
        ("lib/", lib, ".so"),
        ("lib/", lib, ".a"),
    )
    out = [
        _pkg(
            name=f"cuda-cudart-{d}",
            comp="cuda_cudart",
            summary="CUDA Runtime native Libraries",
            Source="cuda-cudart",
            rules=(sonames,),
            depends=config_or,
            ldconfig=True,
            Provides=f"libcudart.so.{major} (= {ver['cuda_cudart']})",
        ),
        _pkg(
            name=f"cuda-cudart-dev-{d}",
            comp="cuda_cudart",
            summary="CUDA Runtime native dev links, headers",
            Source="cuda-cudart",
            rules=(headers, devlinks, static),
            # NVIDIA's also depends on cuda-driver-dev-X-Y (>= cudart's version): LEFT_OUT_PACKAGES
            depends=f"cuda-cudart-{d} (>= {ver['cuda_cudart']}), cuda-cccl-{d}, cuda-culibos-dev-{d}",
            Provides=f"libcudart.so.{major}-dev (= {ver['cuda_cudart']})",
        ),
        _pkg(
            name=f"cuda-nvrtc-{d}",
            comp="cuda_nvrtc",
            summary="NVRTC native runtime libraries",
            Source="cuda-nvrtc",
            rules=(sonames,),
            ldconfig=True,
            Provides=f"libnvrtc.so.{major} (= {ver['cuda_nvrtc']})",
        ),
        _pkg(
            name=f"cuda-nvrtc-dev-{d}",
            comp="cuda_nvrtc",
            summary="NVRTC native dev links, headers",
            Source="cuda-nvrtc",
            rules=(headers, devlinks, static),
            depends=f"cuda-nvrtc-{d} (>= {ver['cuda_nvrtc']})",
            Provides=f"libnvrtc.so.{major}-dev (= {ver['cuda_nvrtc']})",
        ),
        _pkg(
            name=f"cuda-cccl-{d}",
            comp="cuda_cccl",
            summary="CUDA CCCL",
            Source="cuda-cccl",
            rules=(headers, ("lib/", lib, "any")),  # lib/cmake/ (not in the wheel)
            Provides=f"cuda-cub-{d}, cuda-thrust-{d}",
        ),
        _pkg(
            name=f"cuda-crt-{d}",
            comp="cuda_crt",
            summary="CUDA crt",
            Source="cuda-crt",
            rules=(("include/crt/", f"{inc}/crt", "any"),),
            depends=f"cuda-cudart-dev-{d}",
        ),  # + build-essential
        _pkg(
            name=f"libnvvm-{d}",
            comp="libnvvm",
            summary="CUDA nvvm",
            Source="libnvvm",
            rules=(("nvvm/", f"{top}/nvvm", "any"),),
            depends=f"cuda-toolkit-config-common | cuda-toolkit-{major}-config-common | cuda-cudart-11-2, "
            f"cuda-toolkit-{d}-config-common",
        ),
        # the mirror's cuda_nvcc archive also carries crt and nvvm (lab/README.md); NVIDIA's package does not
        _pkg(
            name=f"cuda-nvcc-{d}",
            comp="cuda_nvcc",
            summary="CUDA nvcc",
            Source="cuda-nvcc",
            rules=(("bin/", f"{top}/bin", "any"), ("include/", inc, "not crt")),
            Provides=f"cuda-nvcc-{major}",
            links=((f"{top}/include", arch.target_include), (f"{top}/lib64", arch.target_lib)),
            depends=f"cuda-cudart-dev-{d}, libnvvm-{d}, cuda-crt-{d}, libnvptxcompiler-{d}",
        ),  # + build-essential
        _pkg(
            name=f"libnvptxcompiler-{d}",
            comp="libnvptxcompiler",
            summary="CUDA nvptxcompiler",
            Source="libnvptxcompiler",
            rules=(headers, ("lib/", lib, "any")),
        ),
        _pkg(
            name=f"cuda-culibos-dev-{d}",
            comp="cuda_culibos",
            summary="CUDA DEV culibos is a Math Libraries fork of the cuos library",
            Source="cuda-culibos",
            rules=(("lib/", lib, "any"),),
        ),
        _pkg(
            name=f"cuda-profiler-api-{d}",
            comp="cuda_profiler_api",
            summary="CUDA Profiler API",
            Source="cuda-profiler-api",
            rules=(headers,),
        ),
        _pkg(
            name=f"cuda-nvml-dev-{d}",
            comp="cuda_nvml_dev",
            summary="NVML native dev links, headers",
            Source="cuda-nvml-dev",
            rules=(headers, ("lib/", lib, "any")),  # lib/stubs/ (not in the wheel)
        ),
        _pkg(
            name=f"cuda-nvtx-{d}",
            comp="cuda_nvtx",
            summary="NVIDIA Tools Extension",
            Source="cuda-nvtx",
            rules=(headers, ("lib/", lib, "any")),
            ldconfig=True,
        ),
        _pkg(
            name=f"cuda-cupti-{d}",
            comp="cuda_cupti",
            summary="CUDA profiling tools runtime libs.",
            Source="cuda-cupti",
            rules=(("lib/", lib, "any"),),
            ldconfig=True,
            Provides=f"libcupti.so.{major} (= {ver['cuda_cupti']})",
        ),
        _pkg(
            name=f"cuda-cupti-dev-{d}",
            comp="cuda_cupti",
            summary="CUDA profiling tools interface.",
            Source="cuda-cupti",
            rules=(headers,),
            depends=f"cuda-cupti-{d} (>= {ver['cuda_cupti']})",
            Provides=f"libcupti.so.{major}-dev (= {ver['cuda_cupti']})",
        ),
        _pkg(
            name=f"cuda-opencl-{d}",
            comp="cuda_opencl",
            summary="CUDA OpenCL native Libraries",
            Source="cuda-opencl",
            rules=(sonames,),
            depends=config,
            ldconfig=True,
            Provides=f"libopencl.so.1 (= {ver['cuda_opencl']})",
        ),
        # NVIDIA's also depends on libmount1, libstdc++6, libudev1, libgcc1 (LEFT_OUT_DEPENDS) and its
        # postinst points the /etc/cufile.json alternative at gds/cufile.json, which no wheel carries
        _pkg(
            name=f"libcufile-{d}",
            comp="libcufile",
            summary=f"Library for GPU Direct Storage with CUDA {xy}",
            Source="libcufile",
            rules=(sonames,),
            depends=config_or,
            links=(),
            ldconfig=True,
            files={f"/etc/ld.so.conf.d/gds-{d}.conf": f"{lib}\n"},
            Provides="libcufile0",
            Replaces="gds (<< 0.8.0)",
            Breaks="gds (<< 0.8.0)",
        ),
        _pkg(
            name=f"libcufile-dev-{d}",
            comp="libcufile",
            summary="Library for GPU Direct Storage native dev links, headers",
            Source="libcufile",
            rules=(headers, devlinks, static),
            links=(),
            depends=f"libcufile-{d} (>= {ver['libcufile']})",
            Provides=f"libcufile.so.0-dev (= {ver['libcufile']})",
        ),
    ]
    # the math and compiler libraries: lib<x>-X-Y (shared objects) and lib<x>-dev-X-Y (headers, dev links)
    for comp, words, dev_words, deps in (
        ("libcublas", "CUBLAS native", "CUBLAS native", config_or),
        ("libcufft", "CUFFT native", "CUFFT native", config_or),
        ("libcurand", "CURAND native", "CURAND native", config_or),
        ("libcusolver", "CUDA solver native", "CUDA solver native", config_or),
        ("libcusparse", "CUSPARSE native", "CUSPARSE native", config_or),
        ("libnpp", "NPP native", "NPP native", config_or),
        ("libnvjpeg", "NVJPEG native", "NVJPEG native", config),
        ("libnvjitlink", "NVJIT link native", "NVJIT native", config),
        ("libnvfatbin", "nvfatbin link native", "nvfatbin native", config),
    ):
        version, stem = ver[comp], comp.removeprefix("lib")
        soname = f"lib{stem}.so.{version.split('.')[0]}"
        culibos = f"cuda-culibos-dev-{d}, " if deps == config_or else ""
        out += [
            _pkg(
                name=f"{comp}-{d}",
                comp=comp,
                summary=f"{words} runtime libraries",
                Source=comp,
                rules=(sonames,),
                depends=deps,
                ldconfig=True,
                Provides=f"{soname} (= {version})",
            ),
            _pkg(
                name=f"{comp}-dev-{d}",
                comp=comp,
                summary=f"{dev_words} dev links, headers",
                Source=comp,
                rules=(headers, devlinks, static),
                depends=f"{culibos}{comp}-{d} (>= {version})",
                Provides=f"{soname}-dev (= {version})",
            ),
        ]
    return out


# NVIDIA's meta packages of a CUDA release and all their dependencies (stems; "-X-Y" is added): the H100's
# dpkg status for the first five (tests/data/h100-ubuntu2404-cuda13); cuda-tools and cuda-toolkit were not
# installed there and follow NVIDIA's 12.x closure (cuda-toolkit-12-8 pulls cuda-tools, cuda-visual-tools,
# cuda-documentation and cuda-nvml-dev; medium confidence). The lab's packages depend on those it builds and
# name the others in their description.
META_PACKAGES = (
    ("cuda-libraries", "CUDA Libraries {xy} meta-package",
     ("cuda-cudart", "cuda-nvrtc", "cuda-opencl", "libcublas", "libcufft", "libcufile", "libcurand",
      "libcusolver", "libcusparse", "libnpp", "libnvjitlink", "libnvfatbin", "libnvjpeg")),
    ("cuda-libraries-dev", "CUDA Libraries {xy} development meta-package",
     ("cuda-cudart-dev", "cuda-culibos-dev", "cuda-cccl", "cuda-profiler-api", "cuda-driver-dev",
      "cuda-nvrtc-dev", "cuda-sandbox-dev", "libcublas-dev", "libcufft-dev", "libcufile-dev", "libcurand-dev",
      "libcusolver-dev", "libcusparse-dev", "libnpp-dev", "libnvjitlink-dev", "libnvfatbin-dev",
      "libnvjpeg-dev")),
    ("cuda-compiler", "CUDA compiler",
     ("cuda-cuobjdump", "cuda-cuxxfilt", "cuda-nvcc", "cuda-crt", "libnvptxcompiler", "libnvvm",
      "cuda-nvprune")),
    ("cuda-minimal-build", "Minimal CUDA {xy} toolkit build packages.",
     ("cuda-compiler", "cuda-cudart-dev", "cuda-culibos-dev", "cuda-cccl", "cuda-profiler-api")),
    ("cuda-command-line-tools", "CUDA command-line tools",
     ("cuda-cupti-dev", "cuda-gdb", "cuda-nvdisasm", "cuda-nvtx", "cuda-sanitizer")),
    ("cuda-tools", "CUDA tools", ("cuda-command-line-tools", "cuda-visual-tools")),
    ("cuda-toolkit", "CUDA Toolkit {xy} meta-package",
     ("cuda-compiler", "cuda-libraries", "cuda-libraries-dev", "cuda-tools", "cuda-documentation",
      "cuda-nvml-dev")),
)  # fmt: skip


def meta_debs(xy, release, built, mtime, arch=X86_64):
    """NVIDIA's meta packages over ``built`` (the component packages and config-common), each depending on
    what the lab builds of NVIDIA's list and naming what it leaves out (LEFT_OUT_PACKAGES; on sbsa, what the
    mirror's linux-sbsa archives do not hold)."""
    d = xy.replace(".", "-")
    have = {deb.name: deb.version for deb in built}
    out = []
    for stem, summary, wanted in META_PACKAGES:
        depends, missing = [], []
        for dep in wanted:
            name = f"{dep}-{d}"
            if name in have:
                depends.append(f"{name} (>= {have[name].rsplit('-', 1)[0]})")
            else:
                missing.append(name)
        if stem == "cuda-toolkit":
            depends += [f"{deb.name}" for deb in built if deb.name.endswith("config-common")]
        words = summary.format(xy=xy)
        if missing:
            left = ", ".join(f"{m} ({_left_out_reason(m.removesuffix('-' + d), arch)})" for m in missing)
            words += f"\nNVIDIA's also depends on {left}: not in the gpufleet lab."
        deb = debs.Deb(
            name=f"{stem}-{d}",
            version=f"{release}-1",
            arch=arch.deb,
            fields=_cuda_fields(f"{words}\n{WHEEL_SUBSET}", ", ".join(depends)),
            doc="changelog",  # NVIDIA's meta packages hold their changelog alone
            mtime=mtime,
        )
        out.append(deb)
        have[deb.name] = deb.version
    return out


def _left_out_reason(stem, arch):
    if stem in LEFT_OUT_PACKAGES:
        return LEFT_OUT_PACKAGES[stem]
    return f"not among the lab's {arch.platform} archives (lab/mirror.py SBSA_CUDA)"


def _wanted_components(release, arch):
    """The redist components of ``release`` the lab packages for ``arch``."""
    if arch == X86_64:
        return tuple(lab_mirror.CUDA_RELEASES[release])
    if release not in lab_mirror.SBSA_CUDA:
        raise LabError(
            f"the lab builds no {arch.platform} archives of CUDA {release} (lab/mirror.py SBSA_CUDA)"
        )
    return lab_mirror.SBSA_CUDA[release]


def cuda_debs(release=CUDA_RELEASE, arch=X86_64):
    """NVIDIA's CUDA component packages of a release, the config-common packages and the meta packages
    (cuda-libraries, -libraries-dev, -compiler, -minimal-build, -command-line-tools, -tools, cuda-toolkit),
    for ``arch``: on sbsa the components the mirror's linux-sbsa archives hold, the meta packages naming the
    others."""
    manifest = _manifest("cuda", release)
    wanted = _wanted_components(release, arch)
    missing = sorted(c for c in wanted if arch.platform not in manifest.get(c, {}))
    if missing:
        command = "mirror build" if arch == X86_64 else "mirror sbsa"
        raise LabError(
            f"the mirror's redistrib_{release}.json has no {arch.platform} {', '.join(missing)}: "
            f"run `python -m lab {command}` to rebuild the mirror"
        )
    xy = ".".join(release.split(".")[:2])
    mtime = _date_epoch(manifest["release_date"])
    # every component's version (the manifest's, whichever platforms it holds): the packages name each other's
    ver = {comp: manifest[comp]["version"] for comp in lab_mirror.CUDA_RELEASES[release] if comp in manifest}
    top = f"/usr/local/cuda-{xy}"
    specs = [spec for spec in cuda_components(xy, ver, arch) if spec["comp"] in wanted]
    components = [_cuda_component(spec, manifest, mtime, top, arch) for spec in specs]
    configs = config_common_debs(xy, ver["cuda_cudart"] + "-1", mtime, arch)
    return [*components, *configs, *meta_debs(xy, release, components + configs, mtime, arch)]


# ---------------------------------------------------------------- cuDNN 9


def _cudnn_fields(summary, major, extra=None):
    fields = {
        "Source": "cudnn",
        "Maintainer": MAINTAINER,
        "Section": "multiverse/libs",
        "Priority": "optional",
        "Homepage": CUDNN_HOME,
        "Description": f"{summary} for CUDA {major}\n{LAB_NOTE}",
    }
    fields.update(extra or {})
    return fields


def _virtual(name):
    return {"Conflicts": name, "Provides": name, "Replaces": name}


def cudnn_debs(version, major, arch=X86_64):
    """libcudnn9-cuda-<M>, -dev-, -headers- and cudnn9-cuda-<M> at <version>-1, in NVIDIA's layout
    (tests/data/h200-ubuntu2404/dpkg-L-libcudnn9-cuda-13.txt)."""
    manifest = _manifest("cudnn", lab_mirror.short(version))
    if manifest["cudnn"]["version"] != version:
        have = manifest["cudnn"]["version"]
        raise LabError(f"the mirror has cuDNN {have}, not {version}: rebuild the mirror")
    entry = manifest["cudnn"].get(arch.platform, {}).get(f"cuda{major}")
    if entry is None:
        raise LabError(
            f"the mirror has no {arch.platform} cuDNN {version} for CUDA {major}: rebuild the mirror"
        )
    source, sha = _source("cudnn", entry)
    deb_version = f"{version}-1"
    mtime = _date_epoch(manifest["release_date"])
    common = {
        "version": deb_version,
        "arch": arch.deb,
        "source": source,
        "source_sha256": sha,
        "mtime": mtime,
    }
    lib = f"libcudnn9-cuda-{major}"
    header_links = tuple((f"{arch.incdir}/{h}.h", f"{h}_v9.h") for h in CUDNN_HEADERS)
    return [
        debs.Deb(
            name=lib,
            fields=_cudnn_fields(
                "cuDNN runtime libraries", major, {"Depends": "zlib1g", **_virtual("libcudnn9")}
            ),
            rules=(("lib/", arch.libdir, "so.N"),),
            ldconfig=True,
            **common,
        ),
        debs.Deb(
            name=f"libcudnn9-dev-cuda-{major}",
            fields=_cudnn_fields(
                "cuDNN development libraries",
                major,
                {
                    "Depends": f"{lib} (= {deb_version}), libcudnn9-headers-cuda-{major} (= {deb_version})",
                    **_virtual("libcudnn9-dev"),
                },
            ),
            rules=(("lib/", arch.libdir, ".so"),),
            **common,
        ),
        debs.Deb(
            name=f"libcudnn9-headers-cuda-{major}",
            fields=_cudnn_fields("cuDNN header files", major, _virtual("libcudnn9-headers")),
            rules=(("include/", arch.incdir, "_v9.h"),),
            links=header_links,
            **common,
        ),
        debs.Deb(
            name=f"cudnn9-cuda-{major}",
            version=deb_version,
            arch=arch.deb,
            fields=_cudnn_fields(
                "NVIDIA cuDNN meta-package",
                major,
                {"Depends": f"{lib} (= {deb_version}), libcudnn9-dev-cuda-{major} (= {deb_version})"},
            ),
            mtime=mtime,
        ),
    ]


# ---------------------------------------------------------------- the driver (stand-ins, ubuntu2404)

# Two branches so that a branch change can run (lab/rpms.py builds the same for EL)
DRIVER_VERSIONS = ("580.105.08", "590.48.01")  # 590.48.01: kb/driver.py (NFB, high)
DRIVER_DIRS = ("ubuntu2404",)  # the repositories with the driver stand-ins (Ubuntu-shaped hosts)
STAND_IN_DIR = "/usr/share/gpufleet-lab"
# The systemd units NVIDIA's packages ship (kb/driver_packages.py's service names), their commands stand-ins
UNIT_DIR = "/usr/lib/systemd/system"
STAND_IN_UNIT = """[Unit]
Description={description} (gpufleet lab stand-in: it runs nothing)

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true

[Install]
WantedBy=multi-user.target
"""
UNITS = {
    "nvidia-persistenced": ("nvidia-persistenced.service", "NVIDIA Persistence Daemon"),
    "nvidia-fabric-manager": ("nvidia-fabricmanager.service", "NVIDIA fabric manager service"),
}
# NVIDIA's pin package of a branch from R590 (kb/driver_packages.py PIN_PACKAGE, medium for its content): an
# apt preferences file that keeps NVIDIA's driver packages at the branch
PIN_TEXT = """# gpufleet lab stand-in of NVIDIA's {name}: NVIDIA's driver packages stay at branch {branch}
Package: src:nvidia-graphics-drivers nvidia-driver-cuda nvidia-persistenced nvidia-open cuda-drivers
Pin: version {branch}.*
Pin-Priority: 1000
"""


def stand_in_files(name, version):
    """The files of the lab's stand-in of NVIDIA's driver package ``name`` at ``version`` (as the package
    manager writes it), .deb or RPM alike: a file under STAND_IN_DIR that says what it is, and NVIDIA's
    systemd unit (a stand-in that runs nothing) where NVIDIA's package ships one."""
    text = (
        f"{name} {version}: a gpufleet lab stand-in of NVIDIA's package of this name "
        "(no driver, no kernel module: none can be built or loaded here).\n"
    )
    files = {f"{STAND_IN_DIR}/{name}": text}
    if name in UNITS:
        unit, description = UNITS[name]
        files[f"{UNIT_DIR}/{unit}"] = STAND_IN_UNIT.format(description=description)
    return files


def driver_debs(arch=X86_64):
    """NVIDIA's driver packages for Ubuntu (the names plan/driver/packages.py installs in a container:
    nvidia-driver-cuda, nvidia-persistenced; nvidia-driver-pinning-<branch> from R590) as stand-ins: each
    holds a file under /usr/share/gpufleet-lab/ that says what it is (no driver: none can be built or loaded
    here), nvidia-persistenced NVIDIA's unit name, the pin package an apt preferences file."""
    out = []
    for version in DRIVER_VERSIONS:
        branch = version.split(".")[0]
        common = {
            "version": f"{version}-0ubuntu1",
            "arch": arch.deb,
            "doc": False,
            "mtime": _date_epoch("2025-11-05"),
        }
        names = ["nvidia-driver-cuda", "nvidia-persistenced"]
        if int(branch) >= 590:
            names.append(f"nvidia-driver-pinning-{branch}")
        for name in names:
            files = stand_in_files(name, common["version"])
            if name.startswith("nvidia-driver-pinning-"):
                files[f"/etc/apt/preferences.d/{name}"] = PIN_TEXT.format(name=name, branch=branch)
            out.append(
                debs.Deb(
                    name=name,
                    fields={
                        "Maintainer": MAINTAINER,
                        "Section": "non-free/libs",
                        "Priority": "optional",
                        "Source": "nvidia-graphics-drivers",
                        "Description": f"gpufleet lab stand-in of NVIDIA's {name}\n"
                        "Built by the gpufleet lab: no driver, only a file that says so.",
                    },
                    files=files,
                    **common,
                )
            )
    return out


def all_debs(cudnn_versions=CUDNN_VERSIONS, cudnn_majors=CUDNN_MAJORS, drivers=True):
    out = cuda_debs() + (driver_debs() if drivers else [])
    for version in cudnn_versions:
        for major in cudnn_majors:
            out += cudnn_debs(version, major)
    return out


def check_subset(values, allowed, what):
    """The part of the lab's recipe a host can build (a GPU host whose mirror holds only its own cuDNN)."""
    values = tuple(values or allowed)
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise LabError(
            f"repo build: {what} {', '.join(unknown)} not in the lab's recipe ({', '.join(allowed)})"
        )
    return values


# ---------------------------------------------------------------- build


def pool_dir(arch=X86_64):
    """Each architecture's packages in a pool of their own: NVIDIA's sbsa repositories have arch-all packages
    of the same name and version as x86_64's with other contents (config-common: targets/sbsa-linux)."""
    return state() / "repo-build" / ("pool" if arch == X86_64 else f"pool-{arch.name}")


def _stamp(deb, arch=X86_64):
    prefix = "repo" if arch == X86_64 else f"repo-{arch.name}"
    return state() / "stamps" / f"{prefix}__{deb.name}_{deb.version}.json"


def build_one(deb, log, arch=X86_64):
    """The .deb in the pool (built when missing or its recipe changed); returns its Packages stanza."""
    out = pool_dir(arch) / deb.filename
    stamp = _stamp(deb, arch)
    digest = deb.digest()
    if out.exists() and stamp.exists():
        try:
            saved = json.loads(stamp.read_text(encoding="utf-8"))
        except ValueError:
            saved = {}
        if saved.get("digest") == digest and saved.get("hashes", {}).get("Size") == str(out.stat().st_size):
            return saved["stanza"]
    start = time.monotonic()
    pool_dir(arch).mkdir(parents=True, exist_ok=True)
    fields = debs.build_deb(deb, pool_dir(arch), state() / "repo-build")
    hashes = debs.file_hashes(out)
    stanza = debs.packages_stanza(fields, deb.filename, hashes)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    doc = {"digest": digest, "hashes": hashes, "stanza": stanza}
    stamp.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    size = int(hashes["Size"]) / 1e6
    log(f"repo: built {deb.filename} in {time.monotonic() - start:.0f}s ({size:.0f} MB)")
    return stanza


# ---------------------------------------------------------------- key


def ensure_key(log=print):
    """(fingerprint, armored public key) of the lab's repository key; made once per lab."""
    home = key_dir() / "gnupg"
    fpr_file, pub_file = key_dir() / "fingerprint", key_dir() / "lab.pub.asc"
    if fpr_file.exists() and pub_file.exists() and (home / "pubring.kbx").exists():
        return fpr_file.read_text(encoding="utf-8").strip(), pub_file.read_bytes()
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    start = time.monotonic()
    debs.gpg(home, "--passphrase", "", "--quick-generate-key", KEY_UID, "rsa4096", "sign", "never")
    fpr = _secret_fingerprint(home)
    pub = debs.gpg(home, "--armor", "--export", fpr)
    pub_file.write_bytes(pub)
    fpr_file.write_text(fpr + "\n", encoding="utf-8")
    log(f"repo: made the lab's repository key {fpr} in {time.monotonic() - start:.0f}s ({home})")
    return fpr, pub


def _secret_fingerprint(home):
    out = debs.gpg(home, "--with-colons", "--list-secret-keys").decode()
    fprs = [line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:")]
    if not fprs:
        raise LabError(f"no secret key in {home}: remove {key_dir()} and rerun `python -m lab repo build`")
    return fprs[0]


def stop_agent():
    """Stop the gpg-agent gpg started for the lab's key home (only that one)."""
    if shutil.which("gpgconf"):
        cmd = ["gpgconf", "--homedir", str(key_dir() / "gnupg"), "--kill", "gpg-agent"]
        subprocess.run(cmd, capture_output=True, check=False)


# ---------------------------------------------------------------- publish


def _write_if_changed(path, data):
    if path.exists() and path.read_bytes() == data:
        return False
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return True


def _link_debs(target, names, pool):
    for stale in target.glob("*.deb"):
        if stale.name not in names:
            stale.unlink()
    for name in names:
        dest, src = target / name, pool / name
        if dest.exists() and os.path.samestat(dest.stat(), src.stat()):
            continue
        if dest.exists():
            dest.unlink()
        try:
            os.link(src, dest)
        except OSError:
            shutil.copyfile(src, dest)


def publish(rdir, stanzas, fingerprint, pub, date, *, arch=X86_64):
    """One repository directory: the .debs, Packages(.gz), Release, its signatures and the key file."""
    target = repos_dir() / rdir / arch.name
    target.mkdir(parents=True, exist_ok=True)
    _link_debs(target, sorted(stanzas), pool_dir(arch))
    packages = "\n".join(stanzas[name] for name in sorted(stanzas)).encode()
    indexes = {"Packages": packages, "Packages.gz": debs.gzip_bytes(packages)}
    words = f"gpufleet lab: NVIDIA CUDA packages for {rdir}/{arch.name} (not NVIDIA's)"
    release = debs.release_text(indexes, date, words)
    for name, data in indexes.items():
        _write_if_changed(target / name, data)
    _write_if_changed(target / KEY_FILES[rdir], pub)
    changed = _write_if_changed(target / "Release", release.encode())
    stamp = (
        state()
        / "stamps"
        / (f"repo-sign__{rdir}.json" if arch == X86_64 else f"repo-sign__{rdir}-{arch.name}.json")
    )
    wanted = {"release": hashlib.sha256(release.encode()).hexdigest(), "key": fingerprint}
    signed = stamp.exists() and json.loads(stamp.read_text(encoding="utf-8")) == wanted
    if changed or not signed or not (target / "InRelease").exists() or not (target / "Release.gpg").exists():
        inrelease, detached = debs.sign(key_dir() / "gnupg", fingerprint, release)
        _write_if_changed(target / "InRelease", inrelease)
        _write_if_changed(target / "Release.gpg", detached)
        stamp.write_text(json.dumps(wanted), encoding="utf-8")
        return True
    return False


def build(log=print, cudnn_versions=None, cudnn_majors=None, dists=None):
    """Every package (only what is missing or changed), then the signed repositories. The subsets (default:
    all) serve a host whose mirror holds only part of the recipe (lab/gpuhost/mirror_from_host.py)."""
    debs.need_tools()
    start = time.monotonic()
    versions = check_subset(cudnn_versions, CUDNN_VERSIONS, "cuDNN version")
    majors = check_subset(cudnn_majors, CUDNN_MAJORS, "CUDA major")
    rdirs = check_subset(dists, REPO_DIRS, "repository")
    # the driver stand-ins on a lab machine only: a GPU host's subset build (lab/gpuhost) has a real driver
    drivers = cudnn_versions is None and cudnn_majors is None
    wanted = all_debs(versions, majors, drivers=drivers)
    drivers = {deb.filename for deb in driver_debs()} if drivers else set()

    def of(rdir):  # the driver stand-ins only where DRIVER_DIRS says
        return lambda stanzas: {k: v for k, v in stanzas.items() if k not in drivers or rdir in DRIVER_DIRS}

    return _build_and_publish(wanted, {rdir: of(rdir) for rdir in rdirs}, X86_64, log, start)


def sbsa_debs():
    """The Arm server packages: CUDA's and cuDNN's of the mirror's linux-sbsa archives (lab/mirror.py
    SBSA_CUDA, SBSA_CUDNN) in NVIDIA's sbsa names and layout (arm64, targets/sbsa-linux,
    /usr/lib/aarch64-linux-gnu), and the driver's stand-ins (arm64: NVIDIA's sbsa repositories carry the
    driver too)."""
    out = [deb for release in lab_mirror.SBSA_CUDA for deb in cuda_debs(release, SBSA)] + driver_debs(SBSA)
    for version, majors in lab_mirror.SBSA_CUDNN:
        for major in majors:
            out += cudnn_debs(version, major, SBSA)
    return out


def build_sbsa(log=print):
    """The sbsa repositories (SBSA_DIRS), signed with the lab's key: what an Arm server's apt reads at
    NVIDIA's .../repos/<distro>/sbsa/. Needs the mirror's linux-sbsa archives (`python -m lab mirror
    sbsa`)."""
    debs.need_tools()
    start = time.monotonic()
    return _build_and_publish(sbsa_debs(), dict.fromkeys(SBSA_DIRS, _every), SBSA, log, start)


def _every(stanzas):
    return stanzas


def _build_and_publish(wanted, rdirs, arch, log, start):
    """Build ``wanted`` into the architecture's pool (what changed only; stale packages leave it), then
    publish each repository directory of ``rdirs`` (name -> the stanzas it takes) signed."""
    stanzas = {deb.filename: build_one(deb, log, arch) for deb in wanted}
    for stale in pool_dir(arch).glob("*.deb"):
        if stale.name not in stanzas:
            stale.unlink()
    fingerprint, pub = ensure_key(log)
    date = max(deb.mtime for deb in wanted)
    try:
        signed = [
            rdir
            for rdir, take in rdirs.items()
            if publish(rdir, take(stanzas), fingerprint, pub, date, arch=arch)
        ]
    finally:
        stop_agent()
    state_words = f"signed {', '.join(signed)}" if signed else "up to date"
    log(
        f"repo: {len(stanzas)} packages in {repos_dir()}/{{{','.join(rdirs)}}}/{arch.name}, {state_words}, "
        f"key {fingerprint} ({time.monotonic() - start:.0f}s)"
    )
    return fingerprint


def summary():
    """(number of packages, fingerprint or None) for `lab status`."""
    packages = repos_dir() / REPO_DIRS[0] / "x86_64" / "Packages"
    count = packages.read_text(encoding="utf-8").count("Package: ") if packages.exists() else 0
    fpr_file = key_dir() / "fingerprint"
    return count, (fpr_file.read_text(encoding="utf-8").strip() if fpr_file.exists() else None)
