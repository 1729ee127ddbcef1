"""The lab's NVIDIA CUDA apt repository: NVIDIA's package names, versions, dependencies and file layout, built
with dpkg-deb from the mirror's redist archives (themselves NVIDIA's PyPI wheels), published as NVIDIA's flat
repositories and signed with the lab's own OpenPGP key.

Output (.lab/):
  mirror/cuda/repos/<debian12|debian13|ubuntu2404>/x86_64/   (the mirror root stands for NVIDIA's .../compute)
      *.deb (hard links into repo-build/pool), Packages, Packages.gz, Release, InRelease, Release.gpg,
      3bf863cc.pub or 8793F200.pub (the key file name NVIDIA's repository has there; the lab's key inside)
  repo-key/gnupg/        the key pair, made once per lab (gpg --batch)
  repo-key/fingerprint, repo-key/lab.pub.asc
  repo-build/pool/       the .debs; stamps/repo__<package>.json: recipe digest, control fields, hashes

Served by the mirror server: http://gpufleet-mirror/cuda/repos/debian12/x86_64/ is what NVIDIA serves at
https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/.
"""

import calendar
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
LIBDIR = "/usr/lib/x86_64-linux-gnu"
TARGET_LIB = "targets/x86_64-linux/lib"
INCDIR = "/usr/include/x86_64-linux-gnu"
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


def _cuda_fields(summary, depends=""):
    fields = {
        "Maintainer": MAINTAINER,
        "Section": "devel",
        "Priority": "optional",
        "Homepage": CUDA_HOME,
        "Description": f"{summary}\n{LAB_NOTE}",
    }
    if depends:
        fields["Depends"] = depends
    return fields


def config_common_debs(xy, version, mtime):
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
            files={"/etc/ld.so.conf.d/000_cuda.conf": f"/usr/local/cuda/{TARGET_LIB}\n"},
            ldconfig=True,
            **common,
        ),
        debs.Deb(
            name=f"cuda-toolkit-{major}-config-common",
            fields=_cuda_fields(f"Common config package for CUDA Toolkit {major}."),
            files={f"/etc/ld.so.conf.d/987_cuda-{major}.conf": f"/usr/local/cuda-{major}/{TARGET_LIB}\n"},
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


def _cuda_component(spec, manifest, mtime):
    name, comp, summary, rules, extra = spec
    source, sha = _source("cuda", manifest[comp]["linux-x86_64"])
    extra = dict(extra)
    return debs.Deb(
        name=name,
        version=manifest[comp]["version"] + "-1",
        arch="amd64",
        fields=_cuda_fields(summary, extra.pop("depends", "")),
        source=source,
        source_sha256=sha,
        rules=rules,
        mtime=mtime,
        **extra,
    )


def cuda_components(xy, ver):
    """(package, redist component, summary, rules, extras) of each CUDA component package, NVIDIA's layout:
    /usr/local/cuda-X.Y/{bin,nvvm}, targets/x86_64-linux/{include,lib}, the lib64 and include links."""
    d = xy.replace(".", "-")
    top = f"/usr/local/cuda-{xy}"
    inc, lib = f"{top}/targets/x86_64-linux/include", f"{top}/targets/x86_64-linux/lib"
    config = f"cuda-toolkit-{d}-config-common, cuda-toolkit-{xy.split('.')[0]}-config-common, "
    config += "cuda-toolkit-config-common"
    runtime = {"depends": config, "ldconfig": True}
    return (
        (f"cuda-cudart-{d}", "cuda_cudart", "CUDA Runtime native Libraries", (("lib/", lib, "so.N"),),
         {**runtime, "links": ((f"{top}/lib64", "targets/x86_64-linux/lib"),)}),
        (f"cuda-cudart-dev-{d}", "cuda_cudart", "CUDA Runtime native dev links, headers",
         (("include/", inc, "any"), ("lib/", lib, ".so"), ("lib/", lib, ".a")),
         {"links": ((f"{top}/include", "targets/x86_64-linux/include"),),
          "depends": f"cuda-cudart-{d} (>= {ver['cuda_cudart']}), cuda-cccl-{d} (>= {ver['cuda_cccl']})"}),
        (f"cuda-nvrtc-{d}", "cuda_nvrtc", "NVRTC native runtime libraries", (("lib/", lib, "so.N"),),
         runtime),
        (f"cuda-nvrtc-dev-{d}", "cuda_nvrtc", "NVRTC native dev links, headers",
         (("include/", inc, "any"), ("lib/", lib, ".so")),
         {"depends": f"cuda-nvrtc-{d} (>= {ver['cuda_nvrtc']})"}),
        (f"cuda-cccl-{d}", "cuda_cccl", "CUDA CCCL", (("include/", inc, "any"),), {}),
        (f"cuda-crt-{d}", "cuda_crt", "CUDA crt", (("include/crt/", f"{inc}/crt", "any"),), {}),
        (f"libnvvm-{d}", "libnvvm", "CUDA nvvm", (("nvvm/", f"{top}/nvvm", "any"),), {}),
        # the mirror's cuda_nvcc archive also carries crt and nvvm (lab/README.md); NVIDIA's package does not
        (f"cuda-nvcc-{d}", "cuda_nvcc", "CUDA nvcc",
         (("bin/", f"{top}/bin", "any"), ("include/", inc, "not crt")),
         {"depends": f"cuda-crt-{d} (>= {ver['cuda_crt']}), libnvvm-{d} (>= {ver['libnvvm']})"}),
    )  # fmt: skip


TOOLKIT_SUMMARY = (
    "CUDA Toolkit {xy} meta-package\n"
    "The gpufleet lab's subset of NVIDIA's cuda-toolkit: the compiler (nvcc, crt, nvvm),\n"
    "the runtime (cudart), NVRTC and CCCL; NVIDIA's package also pulls cuBLAS, cuFFT, Nsight, ..."
)


def cuda_debs(release=CUDA_RELEASE):
    """NVIDIA's CUDA component packages of a release (those the mirror has), the config-common packages and
    the cuda-toolkit-X-Y metapackage."""
    manifest = _manifest("cuda", release)
    xy = ".".join(release.split(".")[:2])
    mtime = _date_epoch(manifest["release_date"])
    ver = {comp: manifest[comp]["version"] for comp in lab_mirror.CUDA_RELEASES[release]}
    components = [_cuda_component(spec, manifest, mtime) for spec in cuda_components(xy, ver)]
    configs = config_common_debs(xy, ver["cuda_cudart"] + "-1", mtime)
    meta = debs.Deb(
        name=f"cuda-toolkit-{xy.replace('.', '-')}",
        version=f"{release}-1",
        arch="amd64",
        fields=_cuda_fields(
            TOOLKIT_SUMMARY.format(xy=xy),
            ", ".join(f"{d.name} (>= {d.version})" for d in components + configs),
        ),
        mtime=mtime,
    )
    return [*components, *configs, meta]


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


def cudnn_debs(version, major):
    """libcudnn9-cuda-<M>, -dev-, -headers- and cudnn9-cuda-<M> at <version>-1, in NVIDIA's layout
    (tests/data/h200-ubuntu2404/dpkg-L-libcudnn9-cuda-13.txt)."""
    manifest = _manifest("cudnn", lab_mirror.short(version))
    if manifest["cudnn"]["version"] != version:
        have = manifest["cudnn"]["version"]
        raise LabError(f"the mirror has cuDNN {have}, not {version}: rebuild the mirror")
    source, sha = _source("cudnn", manifest["cudnn"]["linux-x86_64"][f"cuda{major}"])
    deb_version = f"{version}-1"
    mtime = _date_epoch(manifest["release_date"])
    common = {"version": deb_version, "arch": "amd64", "source": source, "source_sha256": sha, "mtime": mtime}
    lib = f"libcudnn9-cuda-{major}"
    header_links = tuple((f"{INCDIR}/{h}.h", f"{h}_v9.h") for h in CUDNN_HEADERS)
    return [
        debs.Deb(
            name=lib,
            fields=_cudnn_fields(
                "cuDNN runtime libraries", major, {"Depends": "zlib1g", **_virtual("libcudnn9")}
            ),
            rules=(("lib/", LIBDIR, "so.N"),),
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
            rules=(("lib/", LIBDIR, ".so"),),
            **common,
        ),
        debs.Deb(
            name=f"libcudnn9-headers-cuda-{major}",
            fields=_cudnn_fields("cuDNN header files", major, _virtual("libcudnn9-headers")),
            rules=(("include/", INCDIR, "_v9.h"),),
            links=header_links,
            **common,
        ),
        debs.Deb(
            name=f"cudnn9-cuda-{major}",
            version=deb_version,
            arch="amd64",
            fields=_cudnn_fields(
                "NVIDIA cuDNN meta-package",
                major,
                {"Depends": f"{lib} (= {deb_version}), libcudnn9-dev-cuda-{major} (= {deb_version})"},
            ),
            mtime=mtime,
        ),
    ]


def all_debs(cudnn_versions=CUDNN_VERSIONS, cudnn_majors=CUDNN_MAJORS):
    out = cuda_debs()
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


def pool_dir():
    return state() / "repo-build" / "pool"


def _stamp(deb):
    return state() / "stamps" / f"repo__{deb.name}_{deb.version}.json"


def build_one(deb, log):
    """The .deb in the pool (built when missing or its recipe changed); returns its Packages stanza."""
    out = pool_dir() / deb.filename
    stamp = _stamp(deb)
    digest = deb.digest()
    if out.exists() and stamp.exists():
        try:
            saved = json.loads(stamp.read_text(encoding="utf-8"))
        except ValueError:
            saved = {}
        if saved.get("digest") == digest and saved.get("hashes", {}).get("Size") == str(out.stat().st_size):
            return saved["stanza"]
    start = time.monotonic()
    pool_dir().mkdir(parents=True, exist_ok=True)
    fields = debs.build_deb(deb, pool_dir(), state() / "repo-build")
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


def _link_debs(target, names):
    for stale in target.glob("*.deb"):
        if stale.name not in names:
            stale.unlink()
    for name in names:
        dest, src = target / name, pool_dir() / name
        if dest.exists() and os.path.samestat(dest.stat(), src.stat()):
            continue
        if dest.exists():
            dest.unlink()
        try:
            os.link(src, dest)
        except OSError:
            shutil.copyfile(src, dest)


def publish(rdir, stanzas, fingerprint, pub, date):
    """One repository directory: the .debs, Packages(.gz), Release, its signatures and the key file."""
    target = repos_dir() / rdir / "x86_64"
    target.mkdir(parents=True, exist_ok=True)
    _link_debs(target, sorted(stanzas))
    packages = "\n".join(stanzas[name] for name in sorted(stanzas)).encode()
    indexes = {"Packages": packages, "Packages.gz": debs.gzip_bytes(packages)}
    words = f"gpufleet lab: NVIDIA CUDA packages for {rdir} (not NVIDIA's)"
    release = debs.release_text(indexes, date, words)
    for name, data in indexes.items():
        _write_if_changed(target / name, data)
    _write_if_changed(target / KEY_FILES[rdir], pub)
    changed = _write_if_changed(target / "Release", release.encode())
    stamp = state() / "stamps" / f"repo-sign__{rdir}.json"
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
    wanted = all_debs(versions, majors)
    stanzas = {deb.filename: build_one(deb, log) for deb in wanted}
    for stale in pool_dir().glob("*.deb"):
        if stale.name not in stanzas:
            stale.unlink()
    fingerprint, pub = ensure_key(log)
    date = max(deb.mtime for deb in wanted)
    try:
        signed = [rdir for rdir in rdirs if publish(rdir, stanzas, fingerprint, pub, date)]
    finally:
        stop_agent()
    state_words = f"signed {', '.join(signed)}" if signed else "up to date"
    log(
        f"repo: {len(stanzas)} packages in {repos_dir()}/{{{','.join(rdirs)}}}/x86_64, {state_words}, "
        f"key {fingerprint} ({time.monotonic() - start:.0f}s)"
    )
    return fingerprint


def summary():
    """(number of packages, fingerprint or None) for `lab status`."""
    packages = repos_dir() / REPO_DIRS[0] / "x86_64" / "Packages"
    count = packages.read_text(encoding="utf-8").count("Package: ") if packages.exists() else 0
    fpr_file = key_dir() / "fingerprint"
    return count, (fpr_file.read_text(encoding="utf-8").strip() if fpr_file.exists() else None)
