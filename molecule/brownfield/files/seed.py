#!/usr/bin/env python3
"""Seed a brownfield host for molecule brownfield: what admins installed before gpufleet came.

Runs inside the instance, as root, with the lab mirror's NVIDIA redist archives (sha256 checked against the
mirror's redistrib_<release>.json). Stdlib only (Python 3.9+).

  seed.py debs MIRROR RELEASE WORK
      NVIDIA-named .debs of CUDA RELEASE (cuda-nvcc-13-0 13.0.88-1, ...) built with dpkg-deb into WORK/debs,
      laid out as NVIDIA's packages are (/usr/local/cuda-X.Y/{bin,nvvm,targets/x86_64-linux/{include,lib}},
      include and lib64 links), with the config-common packages: alternatives cuda and cuda-<M> (postinst),
      /etc/ld.so.conf.d/000_cuda.conf and 988_cuda-<M>.conf
  seed.py runfile MIRROR RELEASE WORK
      the same layout at /usr/local/cuda-X.Y as NVIDIA's runfile leaves it: version.json,
      bin/cuda-uninstaller, /var/log/cuda-installer.log
  seed.py cudnn MIRROR VERSION MAJOR WORK TOOLKIT ENV
      the cuDNN tarball for CUDA MAJOR: headers and libraries copied into TOOLKIT/include and TOOLKIT/lib64
      with `cp -P` as NVIDIA's old tarball guide said; a conda environment ENV with
      conda-meta/cudnn-<version>-<build>.json and its files
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request

PLATFORM = "linux-x86_64"
TARGET = "targets/x86_64-linux"
LAB_NOTE = "built in the gpufleet lab from NVIDIA's redist archive (molecule brownfield)"
# The CUDA components a toolkit of the seeds holds (nvcc carries nvvm in the lab's archives).
CUDA_COMPONENTS = ("cuda_nvcc", "cuda_crt", "cuda_cudart", "cuda_cccl")
CONDA_BUILD = "h4b5f1f4_0"  # a conda-forge style build string (hash + build number)


def fetch(url, dest, sha256=None):
    """Download ``url`` to ``dest``; check its sha256 when given."""
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=120) as src, open(dest, "wb") as out:
        while True:
            block = src.read(1 << 20)
            if not block:
                break
            digest.update(block)
            out.write(block)
    if sha256 and digest.hexdigest() != sha256:
        sys.exit(f"{url}: sha256 {digest.hexdigest()}, the manifest says {sha256}")
    return dest


def manifest(mirror, product, release):
    with urllib.request.urlopen(f"{mirror}/{product}/redist/redistrib_{release}.json", timeout=60) as src:
        return json.load(src)


def archive(mirror, product, entry, work):
    """The verified archive of one manifest entry ({relative_path, sha256}) in ``work``."""
    dest = os.path.join(work, os.path.basename(entry["relative_path"]))
    return fetch(f"{mirror}/{product}/redist/{entry['relative_path']}", dest, entry["sha256"])


def members(path):
    """(tar, member, path inside the archive's top directory) of the files and links of an archive."""
    with tarfile.open(path) as tar:
        for member in tar:
            rel = member.name.split("/", 1)[1] if "/" in member.name else ""
            if not rel or member.isdir():
                continue
            if rel.startswith("/") or ".." in rel.split("/"):
                sys.exit(f"{path}: unsafe member {member.name}")
            yield tar, member, rel


def put(tar, member, dest):
    """Write one archive member (a file or a symlink) to ``dest``."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    if os.path.lexists(dest):
        os.remove(dest)
    if member.issym():
        os.symlink(member.linkname, dest)
        return
    with tar.extractfile(member) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
    os.chmod(dest, member.mode & 0o755 | 0o644)


def toolkit_path(component, rel):
    """Where a redist file goes in NVIDIA's package/runfile layout (relative to /usr/local/cuda-X.Y)."""
    top, _, rest = rel.partition("/")
    if top in ("include", "lib"):
        return f"{TARGET}/{top}/{rest}"
    if top == "LICENSE":
        return None
    return rel  # bin/, nvvm/, ...


def package_of(component, rel, major_minor):
    """NVIDIA's package name for one file of a component (cudart: runtime vs -dev), or None to skip."""
    suffix = major_minor.replace(".", "-")
    if component == "cuda_nvcc" and rel.startswith("include/crt/"):
        return None  # cuda-crt-<X-Y> ships these
    if component == "cuda_cudart":
        runtime = rel.startswith("lib/libcudart.so.")
        return f"cuda-cudart-{suffix}" if runtime else f"cuda-cudart-dev-{suffix}"
    return "cuda-" + component.split("_", 1)[1] + f"-{suffix}"


def unpack_toolkit(mirror, release, work, root, by_package=True):
    """Unpack the toolkit components into ``root`` (per package: root/<package>/usr/local/cuda-X.Y)."""
    data = manifest(mirror, "cuda", release)
    major_minor = ".".join(release.split(".")[:2])
    versions = {}
    for component in CUDA_COMPONENTS:
        path = archive(mirror, "cuda", data[component][PLATFORM], work)
        for tar, member, rel in members(path):
            where = toolkit_path(component, rel)
            package = package_of(component, rel, major_minor)
            if where is None or package is None:
                continue
            base = os.path.join(root, package) if by_package else root
            prefix = f"usr/local/cuda-{major_minor}/" if by_package else ""
            put(tar, member, os.path.join(base, prefix + where))
            versions[package] = data[component]["version"]
        os.remove(path)
    return data, versions


def digest(path, algorithm="sha256"):
    found = hashlib.new(algorithm)
    with open(path, "rb") as src:
        for block in iter(lambda: src.read(1 << 20), b""):
            found.update(block)
    return found.hexdigest()


def md5sums(tree):
    lines = []
    for base, _dirs, files in os.walk(tree):
        if os.path.relpath(base, tree).split(os.sep)[0] in ("DEBIAN", "etc"):
            continue
        for name in files:
            path = os.path.join(base, name)
            if os.path.islink(path):
                continue
            lines.append(f"{digest(path, 'md5')}  {os.path.relpath(path, tree)}\n")
    return "".join(sorted(lines))


def build_deb(tree, pkg, out):
    """dpkg-deb a staged tree as NVIDIA names it: pkg = {name, version, arch, depends, scripts}; control,
    md5sums, conffiles (what is under /etc), maintainer scripts."""
    name, version, arch = pkg["name"], pkg["version"], pkg["arch"]
    os.makedirs(os.path.join(tree, "DEBIAN"), exist_ok=True)
    size = sum(os.lstat(os.path.join(b, f)).st_size for b, _d, fs in os.walk(tree) for f in fs) // 1024
    control = [
        f"Package: {name}",
        f"Version: {version}",
        f"Architecture: {arch}",
        "Maintainer: cudatools <cudatools@nvidia.com>",
        f"Installed-Size: {size}",
        *([f"Depends: {', '.join(pkg['depends'])}"] if pkg["depends"] else []),
        "Section: devel",
        "Priority: optional",
        "Homepage: http://nvidia.com/cuda",
        f"Description: CUDA {name}",
        f" {LAB_NOTE}",
    ]
    with open(os.path.join(tree, "DEBIAN", "control"), "w") as out_file:
        out_file.write("\n".join(control) + "\n")
    with open(os.path.join(tree, "DEBIAN", "md5sums"), "w") as out_file:
        out_file.write(md5sums(tree))
    etc = [os.path.join(b, f) for b, _d, fs in os.walk(os.path.join(tree, "etc")) for f in fs]
    if etc:
        with open(os.path.join(tree, "DEBIAN", "conffiles"), "w") as out_file:
            out_file.write("".join("/" + os.path.relpath(p, tree) + "\n" for p in sorted(etc)))
    for script, text in (pkg.get("scripts") or {}).items():
        path = os.path.join(tree, "DEBIAN", script)
        with open(path, "w") as out_file:
            out_file.write(text)
        os.chmod(path, 0o755)
    deb = os.path.join(out, f"{name}_{version}_{arch}.deb")
    argv = ["dpkg-deb", "--root-owner-group", "-Znone", "-b", tree, deb]
    subprocess.run(argv, check=True, capture_output=True)
    return deb


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as out:
        out.write(text)
    os.chmod(path, mode)


def config_trees(stage, major_minor):
    """The three config-common packages: alternatives (postinst/prerm), the ld.so.conf.d files, the links."""
    major, suffix = major_minor.split(".")[0], major_minor.replace(".", "-")
    prio = major_minor.replace(".", "")
    home = f"/usr/local/cuda-{major_minor}"
    tree = os.path.join(stage, f"cuda-toolkit-{suffix}-config-common")
    os.makedirs(tree + home, exist_ok=True)
    os.symlink(f"{TARGET}/include", tree + home + "/include")
    os.symlink(f"{TARGET}/lib", tree + home + "/lib64")
    postinst = (
        "#!/bin/sh\nset -e\n"
        f"update-alternatives --install /usr/local/cuda cuda {home} {prio}\n"
        f"update-alternatives --install /usr/local/cuda-{major} cuda-{major} {home} {prio}\n"
    )
    prerm = (
        "#!/bin/sh\nset -e\n"
        'if [ "$1" = remove ] || [ "$1" = deconfigure ]; then\n'
        f"  update-alternatives --remove cuda {home}\n"
        f"  update-alternatives --remove cuda-{major} {home}\nfi\n"
    )
    write(
        os.path.join(stage, f"cuda-toolkit-{major}-config-common", f"etc/ld.so.conf.d/988_cuda-{major}.conf"),
        f"/usr/local/cuda-{major}/{TARGET}/lib\n",
    )
    write(
        os.path.join(stage, "cuda-toolkit-config-common", "etc/ld.so.conf.d/000_cuda.conf"),
        f"/usr/local/cuda/{TARGET}/lib\n",
    )
    return {f"cuda-toolkit-{suffix}-config-common": {"postinst": postinst, "prerm": prerm}}


def cmd_debs(args):
    """NVIDIA-named .debs of a CUDA release in args.work/debs (install them with dpkg -i)."""
    stage, out = os.path.join(args.work, "stage"), os.path.join(args.work, "debs")
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    data, versions = unpack_toolkit(args.mirror, args.release, args.work, stage)
    major_minor = ".".join(args.release.split(".")[:2])
    suffix = major_minor.replace(".", "-")
    config_version = data["cuda_cudart"]["version"] + "-1"  # NVIDIA versions the config packages like cudart
    scripts = config_trees(stage, major_minor)
    debs = []
    for name in sorted(os.listdir(stage)):
        if name in versions:
            arch, version = "amd64", versions[name] + "-1"
            depends = [f"cuda-crt-{suffix}"] if name == f"cuda-nvcc-{suffix}" else []
            if name == f"cuda-cudart-dev-{suffix}":
                depends = [f"cuda-cudart-{suffix} (= {version})"]
        else:
            arch, version, depends = "all", config_version, []
        pkg = {"name": name, "version": version, "arch": arch, "depends": depends}
        debs.append(build_deb(os.path.join(stage, name), {**pkg, "scripts": scripts.get(name)}, out))
    shutil.rmtree(stage)
    print(json.dumps({"debs": debs}))


def version_json(data):
    """version.json as the runfile writes it: the release and each component's version."""
    out = {"cuda": {"name": "CUDA SDK", "version": data["release_label"]}}
    for component in CUDA_COMPONENTS:
        out[component] = {"name": data[component]["name"], "version": data[component]["version"]}
    return json.dumps(out, indent=3, sort_keys=True) + "\n"


UNINSTALLER = """#!/bin/sh
# Stand-in for NVIDIA's cuda-uninstaller (a binary the runfile installs into bin/), {note}.
echo "cuda-uninstaller: removing CUDA Toolkit {release} from {home} is not done in the lab" >&2
exit 1
"""


def installer_log(release, home):
    """A runfile installer log: NVIDIA's "[LEVEL]: message" lines (compiler-explorer/infra#286 quotes one)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    lines = [
        "[INFO]: Driver not installed.",
        "[INFO]: Checking compiler version...",
        "[INFO]: gcc location: /usr/bin/gcc",
        f"[INFO]: Installing: CUDA Toolkit {release}",
        f"[INFO]: Installing CUDA Toolkit {release} to {home} ({stamp} UTC)",
        f"[INFO]: Uninstaller: {home}/bin/cuda-uninstaller",
        f"[INFO]: Finished installing CUDA Toolkit {release} to {home}",
    ]
    return "\n".join(lines) + "\n"


def cmd_runfile(args):
    """A runfile-style toolkit at /usr/local/cuda-X.Y (NVIDIA's layout, version.json, uninstaller, log)."""
    major_minor = ".".join(args.release.split(".")[:2])
    home = f"/usr/local/cuda-{major_minor}"
    data, _ = unpack_toolkit(args.mirror, args.release, args.work, home, by_package=False)
    os.symlink(f"{TARGET}/include", home + "/include")
    os.symlink(f"{TARGET}/lib", home + "/lib64")
    write(home + "/version.json", version_json(data))
    write(
        home + "/bin/cuda-uninstaller",
        UNINSTALLER.format(note=LAB_NOTE, release=args.release, home=home),
        0o755,
    )
    write("/var/log/cuda-installer.log", installer_log(args.release, home))
    print(json.dumps({"runfile": home}))


def conda_meta(env, version, major, files):
    """conda-meta/cudnn-<version>-<build>.json as conda writes it for an installed package."""
    paths = []
    for rel in files:
        path = os.path.join(env, rel)
        entry = {"_path": rel, "path_type": "softlink" if os.path.islink(path) else "hardlink"}
        if not os.path.islink(path):
            entry["sha256"] = digest(path)
            entry["size_in_bytes"] = os.path.getsize(path)
        paths.append(entry)
    fn = f"cudnn-{version}-{CONDA_BUILD}.conda"
    return {
        "build": CONDA_BUILD,
        "build_number": 0,
        "channel": "https://conda.anaconda.org/conda-forge/linux-64",
        "constrains": [],
        "depends": [f"cuda-version >={major},<{int(major) + 1}.0a0", "libgcc >=13", "libstdcxx >=13"],
        "extracted_package_dir": f"/opt/conda/pkgs/cudnn-{version}-{CONDA_BUILD}",
        "files": list(files),
        "fn": fn,
        "license": "LicenseRef-cuDNN-Software-License-Agreement",
        "link": {"source": f"/opt/conda/pkgs/cudnn-{version}-{CONDA_BUILD}", "type": 1},
        "name": "cudnn",
        "package_tarball_full_path": f"/opt/conda/pkgs/{fn}",
        "paths_data": {"paths": paths, "paths_version": 1},
        "requested_spec": f"conda-forge::cudnn={version}",
        "subdir": "linux-64",
        "timestamp": 1759900000000,
        "url": f"https://conda.anaconda.org/conda-forge/linux-64/{fn}",
        "version": version,
    }


def copy_p(src_dir, names, dest_dir):
    """`cp -P`: files as files, links as links."""
    os.makedirs(dest_dir, exist_ok=True)
    for name in names:
        dest = os.path.join(dest_dir, name)
        if os.path.lexists(dest):
            os.remove(dest)
        shutil.copy2(os.path.join(src_dir, name), dest, follow_symlinks=False)
        if not os.path.islink(dest):
            os.chmod(dest, 0o644)  # the guide's `chmod a+r`


def cmd_cudnn(args):
    """The cuDNN tarball copied into a toolkit (tarball guide) and into a conda environment."""
    data = manifest(args.mirror, "cudnn", args.version)
    entry = data["cudnn"][PLATFORM][f"cuda{args.major}"]
    path = archive(args.mirror, "cudnn", entry, args.work)
    unpacked = os.path.join(args.work, "cudnn")
    shutil.rmtree(unpacked, ignore_errors=True)
    for tar, member, rel in members(path):
        put(tar, member, os.path.join(unpacked, rel))
    os.remove(path)
    headers = sorted(n for n in os.listdir(unpacked + "/include") if n.startswith("cudnn"))
    libs = sorted(n for n in os.listdir(unpacked + "/lib") if n.startswith("libcudnn"))
    copy_p(unpacked + "/include", headers, args.toolkit + "/include")
    copy_p(unpacked + "/lib", libs, args.toolkit + "/lib64")
    full = data["cudnn"]["version"]
    conda_libs = [n for n in libs if ".so.9" in n]  # a conda env has the runtime libraries, no dev links
    copy_p(unpacked + "/include", headers, args.env + "/include")
    copy_p(unpacked + "/lib", conda_libs, args.env + "/lib")
    files = [f"include/{n}" for n in headers] + [f"lib/{n}" for n in conda_libs]
    meta = conda_meta(args.env, full, args.major, files)
    write(f"{args.env}/conda-meta/cudnn-{full}-{CONDA_BUILD}.json", json.dumps(meta, indent=2) + "\n")
    write(
        f"{args.env}/conda-meta/history",
        f"==> 2026-10-01 12:00:00 <==\n# cmd: /opt/conda/bin/conda create -n ml -c conda-forge cudnn={full}\n"
        f"+conda-forge/linux-64::cudnn-{full}-{CONDA_BUILD}\n",
    )
    shutil.rmtree(unpacked)
    print(json.dumps({"tarball": args.toolkit, "conda": args.env}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("debs", "runfile"):
        cmd = sub.add_parser(name)
        cmd.add_argument("mirror")
        cmd.add_argument("release")
        cmd.add_argument("work")
    cmd = sub.add_parser("cudnn")
    for arg in ("mirror", "version", "major", "work", "toolkit", "env"):
        cmd.add_argument(arg)
    args = parser.parse_args(argv)
    os.makedirs(args.work, exist_ok=True)
    {"debs": cmd_debs, "runfile": cmd_runfile, "cudnn": cmd_cudnn}[args.cmd](args)


if __name__ == "__main__":
    main()
