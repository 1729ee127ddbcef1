"""Build the NVIDIA redist mirror from what this host already has installed (no network).

For GPU machines that cannot download anything (the H200 of tests/gpu/README.md): NVIDIA's own Debian/Ubuntu
packages of a CUDA toolkit (cuda-*-13-0 under /usr/local/cuda-13.0) and of cuDNN (libcudnn9-cuda-13,
-dev, -headers) are repackaged into NVIDIA's redist layout, the same one `python -m lab mirror build`
makes from wheels (lab/mirror.py: component names, archive names, manifest schema, xz settings):

  <out>/cuda/redist/redistrib_<release>.json + <comp>/linux-x86_64/<comp>-linux-x86_64-<ver>-archive.tar.xz
  <out>/cudnn/redist/redistrib_<X.Y.Z>.json
      + cudnn/linux-x86_64/cudnn-linux-x86_64-<ver>_cuda<M>-archive.tar.xz

What belongs to each component is read from dpkg's own file lists (/var/lib/dpkg/info/<pkg>.list),
versions from /var/lib/dpkg/status. Usage:

  python3 -m lab.gpuhost.mirror_from_host [--out .lab/mirror] [--cuda 13.0] [--cudnn-major 13] [--root /]
"""

import argparse
import json
import os
import posixpath
import re
import sys
import time
from pathlib import Path

from lab import LabError
from lab import mirror as labmirror
from lab.xzstore import XZ_OPTS, add_bytes, add_dirs, add_link, tar_info, write_tar_xz

PLATFORM = labmirror.PLATFORM
TARGET_PREFIX = "targets/x86_64-linux/"
# redist component -> NVIDIA's apt packages holding it ({v} = "13-0"); the first one gives the version.
# Every component of lab/mirror.py's CUDA_RELEASES (the lab's repository is built from these archives too:
# lab/gpuhost/ubuntu_repo.sh); culibos is its own component since CUDA 13, so not in cuda_cudart.
CUDA_COMPONENTS = {
    "cuda_nvcc": ("cuda-nvcc-{v}", "cuda-crt-{v}", "libnvvm-{v}"),
    "cuda_crt": ("cuda-crt-{v}",),
    "libnvvm": ("libnvvm-{v}",),
    "cuda_cudart": ("cuda-cudart-{v}", "cuda-cudart-dev-{v}", "cuda-driver-dev-{v}"),
    "cuda_nvrtc": ("cuda-nvrtc-{v}", "cuda-nvrtc-dev-{v}"),
    "cuda_cccl": ("cuda-cccl-{v}",),
    "cuda_culibos": ("cuda-culibos-dev-{v}",),
    "cuda_cupti": ("cuda-cupti-{v}", "cuda-cupti-dev-{v}"),
    "cuda_nvml_dev": ("cuda-nvml-dev-{v}",),
    "cuda_nvtx": ("cuda-nvtx-{v}",),
    "cuda_opencl": ("cuda-opencl-{v}", "cuda-opencl-dev-{v}"),
    "cuda_profiler_api": ("cuda-profiler-api-{v}",),
    "libcublas": ("libcublas-{v}", "libcublas-dev-{v}"),
    "libcufft": ("libcufft-{v}", "libcufft-dev-{v}"),
    "libcufile": ("libcufile-{v}", "libcufile-dev-{v}"),
    "libcurand": ("libcurand-{v}", "libcurand-dev-{v}"),
    "libcusolver": ("libcusolver-{v}", "libcusolver-dev-{v}"),
    "libcusparse": ("libcusparse-{v}", "libcusparse-dev-{v}"),
    "libnpp": ("libnpp-{v}", "libnpp-dev-{v}"),
    "libnvfatbin": ("libnvfatbin-{v}", "libnvfatbin-dev-{v}"),
    "libnvjitlink": ("libnvjitlink-{v}", "libnvjitlink-dev-{v}"),
    "libnvjpeg": ("libnvjpeg-{v}", "libnvjpeg-dev-{v}"),
    "libnvptxcompiler": ("libnvptxcompiler-{v}",),
}
CUDNN_PACKAGES = ("libcudnn9-cuda-{m}", "libcudnn9-dev-cuda-{m}", "libcudnn9-headers-cuda-{m}")


def host_path(root, path):
    return path if root == "/" else os.path.join(root, path.lstrip("/"))


def dpkg_status(root):
    """{package: version} of installed packages."""
    path = host_path(root, "/var/lib/dpkg/status")
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LabError(f"cannot read {path} ({exc.strerror}): is this a Debian/Ubuntu host?") from exc
    out = {}
    for block in text.split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z-]+):[ \t]*(.*)$", block, re.M))
        if fields.get("Package") and "installed" in fields.get("Status", "").split():
            out[fields["Package"]] = fields.get("Version", "")
    return out


def dpkg_files(root, package):
    info = host_path(root, "/var/lib/dpkg/info")
    for name in (f"{package}.list", f"{package}:amd64.list"):
        path = os.path.join(info, name)
        if os.path.exists(path):
            return [
                line for line in Path(path).read_text(encoding="utf-8").splitlines() if line and line != "/."
            ]
    raise LabError(f"no dpkg file list for {package} under {info}")


def upstream(version):
    """13.0.88-1 -> 13.0.88; 9.14.0.64-1 -> 9.14.0.64."""
    return version.split(":")[-1].rsplit("-", 1)[0]


def resolve(root, path, hops=40):
    """Follow symlinks of an absolute path inside root; the resolved absolute path."""
    for _ in range(hops):
        full = host_path(root, path)
        if not os.path.islink(full):
            return path
        target = os.readlink(full)
        path = posixpath.normpath(
            target if target.startswith("/") else posixpath.join(posixpath.dirname(path), target)
        )
    raise LabError(f"symlink loop at {path}")


class Members:
    """What goes into one archive: {archive path: ('file', host path) | ('link', target)}."""

    def __init__(self):
        self.items = {}

    def add_file(self, rel, host):
        self.items[rel] = ("file", host)

    def add_link(self, rel, target):
        self.items[rel] = ("link", target)


def cuda_members(root, home, packages, version):
    """Files of the packages under the toolkit home, flattened like NVIDIA's redist archives."""
    members = Members()
    prefix = home.rstrip("/") + "/"
    for package in packages:
        for path in dpkg_files(root, package):
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix) :]
            rel = rel[len(TARGET_PREFIX) :] if rel.startswith(TARGET_PREFIX) else rel
            full = host_path(root, path)
            if os.path.isdir(full) and not os.path.islink(full):
                continue
            if os.path.islink(full):
                target = os.readlink(full)
                if not target.startswith("/") and "/" not in target:
                    members.add_link(rel, target)
                    continue
                full = host_path(root, resolve(root, path))
            if os.path.isfile(full):
                members.add_file(rel, full)
    if not members.items:
        raise LabError(f"packages {', '.join(packages)} hold no files under {home}")
    return members


def cudnn_members(root, packages, version):
    members = Members()
    full_so = labmirror.short(version)  # libcudnn.so.9.14.0
    major = version.split(".")[0]
    for package in packages:
        for path in dpkg_files(root, package):
            name = posixpath.basename(path)
            full = host_path(root, path)
            if os.path.isdir(full) and not os.path.islink(full):
                continue
            if name.endswith(".h") and name.startswith("cudnn"):
                canonical = re.sub(r"_v\d+\.h$", ".h", name)
                real = host_path(root, resolve(root, path))
                if os.path.isfile(
                    real
                ):  # NVIDIA's tarball has both names as files: cudnn_adv.h, cudnn_adv_v9.h
                    members.add_file(f"include/{canonical}", real)
                    members.add_file(f"include/{name}", real)
            match = re.match(r"^(libcudnn\w*\.so)(\.[\d.]+)?$", name)
            if match and os.path.isfile(host_path(root, resolve(root, path))):
                stem = match.group(1)
                if match.group(2) == f".{full_so}":
                    members.add_file(f"lib/{stem}.{full_so}", host_path(root, resolve(root, path)))
                members.add_link(f"lib/{stem}.{major}", f"{stem}.{full_so}")
                members.add_link(f"lib/{stem}", f"{stem}.{major}")
    libs = [r for r, (kind, _) in members.items.items() if kind == "file" and r.startswith("lib/")]
    if not libs or "include/cudnn_version.h" not in members.items:
        raise LabError(f"packages {', '.join(packages)} hold no libcudnn*.so.{full_so} or no cudnn_version.h")
    # links whose real file is missing would dangle: drop them
    for rel, (kind, target) in list(members.items.items()):
        if kind == "link" and f"lib/{target}" not in members.items:
            del members.items[rel]
    return members


def _fill_tar(tar, members, top, license_bytes, mtime):
    seen = set()
    for rel in sorted(members.items):
        kind, value = members.items[rel]
        add_dirs(tar, top, rel, seen, mtime)
        if kind == "link":
            add_link(tar, f"{top}/{rel}", value, mtime)
            continue
        st = os.stat(value)
        ti = tar_info(f"{top}/{rel}", mtime, (st.st_mode & 0o777) | 0o644)
        ti.size = st.st_size
        with open(value, "rb") as src:
            tar.addfile(ti, src)
    add_bytes(tar, f"{top}/LICENSE", license_bytes, mtime)


def write_archive(members, top, license_bytes, out_path, mtime):
    """The .tar.xz, written as lab/mirror.py writes its own (lab/xzstore.py)."""
    size, sha256, md5 = write_tar_xz(
        out_path, lambda tar: _fill_tar(tar, members, top, license_bytes, mtime), XZ_OPTS
    )
    return {"relative_path": None, "sha256": sha256, "md5": md5, "size": str(size)}


def license_of(root, package):
    path = host_path(root, f"/usr/share/doc/{package}/copyright")
    try:
        return Path(path).read_bytes()
    except OSError:
        return f"See NVIDIA's license for {package}.\n".encode()


def cuda_release(root, home, tag, status):
    """X.Y.Z of the installed toolkit: version.json, else NVIDIA's meta packages, else the lab's table."""
    try:
        info = json.loads(Path(host_path(root, f"{home}/version.json")).read_text(encoding="utf-8"))
        return info["cuda"]["version"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    for meta in (
        "cuda-toolkit",
        "cuda-compiler",
        "cuda-minimal-build",
        "cuda-libraries",
        "cuda-command-line-tools",
    ):
        version = status.get(f"{meta}-{tag}")
        if version and re.match(r"^\d+\.\d+\.\d+$", upstream(version)):
            return upstream(version)
    for release, comps in labmirror.CUDA_RELEASES.items():
        wanted = {comp: ver for comp, (_title, ver) in comps.items()}
        seen = {comp: upstream(status.get(CUDA_COMPONENTS[comp][0].format(v=tag), "")) for comp in wanted}
        if seen == wanted:
            return release
    return home.rsplit("-", 1)[-1]


def build_cuda(root, out, cuda, status, log):
    major, minor = cuda.split(".")[:2]
    home = f"/usr/local/cuda-{major}.{minor}"
    tag = f"{major}-{minor}"
    release = cuda_release(root, home, tag, status)
    if release == cuda:
        log(f"mirror: release of CUDA {cuda} not found (version.json, meta packages); naming it {cuda}")
    redist = out / "cuda" / "redist"
    doc = {"release_date": time.strftime("%Y-%m-%d"), "release_label": release, "release_product": "cuda"}
    mtime = int(time.time())
    for comp, pkgs in CUDA_COMPONENTS.items():
        packages = [p.format(v=tag) for p in pkgs]
        present = [p for p in packages if p in status]
        if packages[0] not in status:
            raise LabError(f"package {packages[0]} is not installed: cannot build {comp} for CUDA {cuda}")
        version = upstream(status[packages[0]])
        name = f"{comp}-{PLATFORM}-{version}-archive"
        rel = f"{comp}/{PLATFORM}/{name}.tar.xz"
        start = time.monotonic()
        entry = write_archive(
            cuda_members(root, home, present, version),
            name,
            license_of(root, packages[0]),
            redist / rel,
            mtime,
        )
        entry["relative_path"] = rel
        (redist / comp).mkdir(parents=True, exist_ok=True)
        (redist / comp / "LICENSE.txt").write_bytes(license_of(root, packages[0]))
        title = labmirror.CUDA_RELEASES.get(release, {}).get(comp, (comp, version))[0]
        doc[comp] = labmirror.cuda_component(comp, title, version, entry)
        log(
            f"mirror: {rel} from {', '.join(present)} "
            f"({int(entry['size']) / 1e6:.0f} MB, {time.monotonic() - start:.0f}s)"
        )
    path = redist / f"redistrib_{release}.json"
    labmirror.write_json(path, doc)
    return path


def build_cudnn(root, out, cuda_major, status, log):
    packages = [p.format(m=cuda_major) for p in CUDNN_PACKAGES]
    missing = [p for p in packages if p not in status]
    if missing:
        raise LabError(f"cuDNN packages not installed: {', '.join(missing)}")
    version = upstream(status[packages[0]])
    if not labmirror.VERSION4.match(version):
        raise LabError(f"{packages[0]} version {status[packages[0]]!r} is not like 9.14.0.64-1")
    redist = out / "cudnn" / "redist"
    name = f"cudnn-{PLATFORM}-{version}_cuda{cuda_major}-archive"
    rel = f"cudnn/{PLATFORM}/{name}.tar.xz"
    start = time.monotonic()
    entry = write_archive(
        cudnn_members(root, packages, version),
        name,
        license_of(root, packages[0]),
        redist / rel,
        int(time.time()),
    )
    entry["relative_path"] = rel
    (redist / "cudnn").mkdir(parents=True, exist_ok=True)
    (redist / "cudnn" / "LICENSE.txt").write_bytes(license_of(root, packages[0]))
    log(f"mirror: {rel} ({int(entry['size']) / 1e6:.0f} MB, {time.monotonic() - start:.0f}s)")
    path = redist / f"redistrib_{labmirror.short(version)}.json"
    labmirror.write_json(
        path, labmirror.cudnn_manifest(version, {str(cuda_major): entry}, time.strftime("%Y-%m-%d"))
    )
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m lab.gpuhost.mirror_from_host", description=__doc__.split("\n", 1)[0]
    )
    parser.add_argument("--root", default="/", help="installed system to read (default /)")
    parser.add_argument(
        "--out", default=str(labmirror.mirror_dir()), help="mirror folder (default .lab/mirror)"
    )
    parser.add_argument(
        "--cuda", default="13.0", help="toolkit X.Y installed as /usr/local/cuda-X.Y (default 13.0)"
    )
    parser.add_argument(
        "--cudnn-major", default=None, help="CUDA major of the cuDNN packages (default: --cuda's)"
    )
    parser.add_argument("--skip-cuda", action="store_true")
    parser.add_argument("--skip-cudnn", action="store_true")
    args = parser.parse_args(argv)
    if not re.match(r"^\d+\.\d+$", args.cuda):
        print(f"mirror_from_host: --cuda {args.cuda!r} must be X.Y, e.g. 13.0", file=sys.stderr)
        return 2
    out = Path(args.out)
    try:
        status = dpkg_status(args.root)
        made = []
        if not args.skip_cuda:
            made.append(build_cuda(args.root, out, args.cuda, status, print))
        if not args.skip_cudnn:
            made.append(
                build_cudnn(args.root, out, args.cudnn_major or args.cuda.split(".")[0], status, print)
            )
    except LabError as exc:
        print(f"mirror_from_host: error: {exc}", file=sys.stderr)
        return 2
    for path in made:
        print(f"mirror_from_host: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
