"""The lab's NVIDIA CUDA RPM repositories for EL-shaped hosts: NVIDIA's RPM names, versions, epochs, module
streams and RHEL file layout, built with rpmbuild from the same redist archives (NVIDIA's PyPI wheels) as the
apt repository (lab/repo.py), published with createrepo_c and signed with the lab's key (rpmsign on every
package, a detached signature of repodata/repomd.xml, as NVIDIA's repositories are).

Output (.lab/):
  mirror/cuda/repos/<rhel9|rhel10>/x86_64/   *.rpm (hard links into rpm-build/pool), repodata/ (with
      modules.yaml on rhel9: the nvidia-driver streams), repodata/repomd.xml.asc, D42D0685.pub / CDF6BA43.pub
      (the key file name NVIDIA's repository has there; the lab's key inside)
  mirror/cuda/tampered/<case>/<rhel9|rhel10>/x86_64/   what dnf must refuse (molecule el's side_effect): the
      newest cuDNN's packages, its -devel package unsigned (``unsigned``), signed with a key no repository
      names (``foreign``) or with a byte of its payload changed after signing (``tampered``), each with
      repodata made over it and signed with the lab key; ``repomd``: the genuine packages, repomd.xml edited
      after it was signed. The lab key beside them, as in every repository.
  mirror/cuda/site/x86_64/   hpc-site-cuda-13-0: a site's own package of CUDA 13.0 (not NVIDIA's), whose tree
      gpufleet must refuse to install into (molecule el-brownfield)
  rpm-build/pool/    the signed .rpms; stamps/rpm__<package>.json: recipe digest

What is NVIDIA's and what is the lab's: the CUDA toolkit's packages are the apt repository's (lab/repo.py
cuda_debs: the same files under /usr/local/cuda-X.Y, dependencies and meta packages up to cuda-toolkit-X-Y)
under NVIDIA's RPM names (``-dev`` is ``-devel``), the config-common alternatives as %post/%preun; the cuDNN
packages hold NVIDIA's files (libraries in /usr/lib64, headers in /usr/include, the unversioned header names
as links, as the deb packages have them; medium confidence for RHEL's exact list); the driver packages are
stand-ins (no kernel module can be built here): NVIDIA's names, epoch 3, versions and the module streams
nvidia-driver:<branch>-open / -dkms with the profiles default and fm (EL 9), the unversioned metapackages
nvidia-open / cuda-drivers (EL 10), and a file under /usr/share/gpufleet-lab/ that says what they are.
Automatic dependencies are off (AutoReqProv: no): an EL-shaped host's rpm database holds no glibc to satisfy
them; the packages require each other as NVIDIA's do.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lab import STATE, LabError, debs
from lab import repo as lab_repo

FORMAT = 1  # bump when the way packages are built changes: every .rpm is rebuilt
RPM_DIRS = ("rhel9", "rhel10")
# plugins/module_utils/plan/repo.py KEYS (a unit test holds the tables together)
KEY_FILES = {"rhel9": "D42D0685.pub", "rhel10": "CDF6BA43.pub"}
LIBDIR = "/usr/lib64"
INCDIR = "/usr/include"
PACKAGER = "cudatools <cudatools@nvidia.com>"
# The driver stand-ins: two branches so that a branch change and a flavor switch can run
DRIVER_VERSIONS = lab_repo.DRIVER_VERSIONS
DRIVER_EPOCH = "3"
TOOLS = (("rpmbuild", "rpm"), ("rpmsign", "rpm"), ("createrepo_c", "createrepo-c"), ("gpg", "gnupg"))
TAMPER_CASES = ("unsigned", "foreign", "tampered", "repomd")
FOREIGN_UID = "gpufleet lab foreign key (no repository names it) <lab-foreign@gpufleet.invalid>"


@dataclass
class Rpm:
    """One binary package: its header fields and where each file comes from (lab/debs.py's rules)."""

    name: str
    version: str
    release: str
    summary: str
    arch: str = "x86_64"
    epoch: str = ""
    requires: tuple = ()
    provides: tuple = ()
    conflicts: tuple = ()
    source: str = ""
    source_sha256: str = ""
    rules: tuple = ()
    links: tuple = ()
    dirs: tuple = ()
    files: dict = field(default_factory=dict)  # path -> text
    post: str = ""  # %post, %preun and %postun scriptlets (/bin/sh)
    preun: str = ""
    postun: str = ""
    dist: str = ""  # the repository directory a package belongs to ("" = every one)
    mtime: int = 0

    @property
    def filename(self):
        return f"{self.name}-{self.version}-{self.release}.{self.arch}.rpm"

    def digest(self):
        doc = asdict(self)
        doc.pop("source")  # the path may move; its sha256 says what it holds
        doc["format"] = FORMAT
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


# ---------------------------------------------------------------- cuDNN


def cudnn_rpms(version, major):
    """libcudnn9-cuda-<M> and libcudnn9-devel-cuda-<M> at <version>-1 (plan/repo.cudnn_packages' names on dnf:
    the headers are in -devel there) and the meta package cudnn9-cuda-<M>, from the deb recipe's archive."""
    lib_deb, dev_deb, headers_deb, _meta = lab_repo.cudnn_debs(version, major)
    common = {
        "version": version,
        "release": "1",
        "source": lib_deb.source,
        "source_sha256": lib_deb.source_sha256,
        "mtime": lib_deb.mtime,
    }
    lib, dev = f"libcudnn9-cuda-{major}", f"libcudnn9-devel-cuda-{major}"
    exact = f"{version}-1"
    headers = tuple((f"{INCDIR}/{Path(p).name}", target) for p, target in headers_deb.links)
    return [
        Rpm(
            name=lib,
            summary=f"cuDNN runtime libraries for CUDA {major}",
            provides=("libcudnn9",),
            rules=tuple((p, LIBDIR, t) for p, _d, t in lib_deb.rules),
            post="/sbin/ldconfig\n",
            postun="/sbin/ldconfig\n",
            **common,
        ),
        Rpm(
            name=dev,
            summary=f"cuDNN development libraries and headers for CUDA {major}",
            requires=(f"{lib} = {exact}",),
            provides=("libcudnn9-devel",),
            rules=tuple((p, LIBDIR, t) for p, _d, t in dev_deb.rules)
            + tuple((p, INCDIR, t) for p, _d, t in headers_deb.rules),
            links=headers,
            **common,
        ),
        Rpm(
            name=f"cudnn9-cuda-{major}",
            summary=f"NVIDIA cuDNN meta-package for CUDA {major}",
            requires=(f"{lib} = {exact}", f"{dev} = {exact}"),
            version=version,
            release="1",
            mtime=lib_deb.mtime,
        ),
    ]


# ---------------------------------------------------------------- the CUDA toolkit


def rpm_name(deb_name):
    """NVIDIA's RPM name of a CUDA package from its deb name: ``-dev`` is ``-devel`` on RHEL
    (cuda-cudart-dev-13-0 -> cuda-cudart-devel-13-0, libcublas-dev-13-0 -> libcublas-devel-13-0)."""
    return re.sub(r"-dev(?=-[0-9]+-[0-9]+$|$)", "-devel", deb_name)


def rpm_requires(depends):
    """A deb Depends (or Provides) field as RPM Requires: ``name (>= v)`` -> ``rpm-name >= v``; of
    alternatives (``a | b``) the first, which the lab builds."""
    out = []
    for part in (p.split("|", 1)[0].strip() for p in (depends or "").split(",")):
        match = re.match(r"^([A-Za-z0-9.+-]+)(?:\s*\((>=|<=|=|<<|>>)\s*([^)]+)\))?$", part)
        if not part:
            continue
        if not match:
            raise LabError(f"lab rpms: cannot read the dependency {part!r}")
        name, op, ver = match.groups()
        op = {"<<": "<", ">>": ">"}.get(op, op)
        out.append(f"{rpm_name(name)} {op} {ver}" if op else rpm_name(name))
    return tuple(out)


def _scriptlets(deb):
    """post / preun from the deb's maintainer scripts (the config-common alternatives: update-alternatives,
    which RHEL has as a link to alternatives) and ldconfig."""
    post, preun = "", ""
    if "postinst" in deb.scripts:  # "configure" is the install and the upgrade: %post runs for both
        body = deb.scripts["postinst"].split('if [ "$1" = configure ]; then\n', 1)[-1].rsplit("fi\n", 1)[0]
        post += body
    if "prerm" in deb.scripts:  # a removal, not an upgrade: $1 is 0 in %preun
        body = deb.scripts["prerm"].split("then\n", 1)[-1].rsplit("fi\n", 1)[0]
        preun = f'if [ "$1" -eq 0 ]; then\n{body}fi\n'
    if deb.ldconfig:
        post += "/sbin/ldconfig\n"
    return {"post": post, "preun": preun, "postun": "/sbin/ldconfig\n" if deb.ldconfig else ""}


def cuda_rpms(release=lab_repo.CUDA_RELEASE):
    """NVIDIA's CUDA packages of a release for RHEL (cuda-toolkit-13-0 and what it requires): the apt
    repository's packages (lab/repo.cuda_debs: the same wheels, files and /usr/local/cuda-X.Y layout; NVIDIA's
    RPMs put the toolkit there too) under their RPM names, versions split into version and release."""
    out = []
    for deb in lab_repo.cuda_debs(release):
        version, _dash, rel = deb.version.rpartition("-")
        out.append(
            Rpm(
                name=rpm_name(deb.name),
                version=version,
                release=rel,
                summary=deb.fields.get("Description", deb.name).split("\n", 1)[0],
                arch="noarch" if deb.arch == "all" else "x86_64",
                requires=rpm_requires(deb.fields.get("Depends", "")),
                # package names only: the deb's library virtuals (libcudart.so.13) are RPM's automatic ones
                provides=tuple(
                    p for p in rpm_requires(deb.fields.get("Provides", "")) if ".so." not in p.split()[0]
                ),
                source=deb.source,
                source_sha256=deb.source_sha256,
                rules=deb.rules,
                links=deb.links,
                dirs=deb.dirs,
                files=dict(deb.files),
                mtime=deb.mtime,
                **_scriptlets(deb),
            )
        )
    return out


# ---------------------------------------------------------------- the driver (stand-ins)


def _stand_in(name, version, dist, **kw):
    files = lab_repo.stand_in_files(name, f"{DRIVER_EPOCH}:{version}-1.{dist}")
    return Rpm(
        name=name,
        version=version,
        release=f"1.{dist}",
        epoch=DRIVER_EPOCH,
        summary=f"gpufleet lab stand-in of NVIDIA's {name}",
        files=files,
        dist="rhel9" if dist == "el9" else "rhel10",
        mtime=lab_repo._date_epoch("2025-11-05"),
        **kw,
    )


def driver_rpms(dist):
    """NVIDIA's driver packages for EL 9 (``el9``: streams) or EL 10 (``el10``: metapackages), each branch."""
    out = []
    for version in DRIVER_VERSIONS:
        full = f"{DRIVER_EPOCH}:{version}"
        out += [
            _stand_in("nvidia-driver", version, dist, requires=(f"nvidia-kmod = {full}",)),
            _stand_in("nvidia-driver-cuda", version, dist, requires=(f"nvidia-driver = {full}",)),
            _stand_in("nvidia-persistenced", version, dist),
            _stand_in("nvidia-fabric-manager", version, dist, requires=(f"nvidia-driver = {full}",)),
            _stand_in("libnvidia-nscq", version, dist),
            _stand_in(
                "kmod-nvidia-open-dkms",
                version,
                dist,
                provides=(f"nvidia-kmod = {full}",),
                conflicts=("kmod-nvidia-latest-dkms",),
            ),
            _stand_in(
                "kmod-nvidia-latest-dkms",
                version,
                dist,
                provides=(f"nvidia-kmod = {full}",),
                conflicts=("kmod-nvidia-open-dkms",),
            ),
        ]
        if dist == "el10":
            out += [
                _stand_in(
                    "nvidia-open",
                    version,
                    dist,
                    requires=(f"nvidia-driver = {full}", f"kmod-nvidia-open-dkms = {full}"),
                ),
                _stand_in(
                    "cuda-drivers",
                    version,
                    dist,
                    requires=(f"nvidia-driver = {full}", f"kmod-nvidia-latest-dkms = {full}"),
                ),
            ]
    return out


PROFILE_DEFAULT = ("nvidia-driver", "nvidia-driver-cuda", "nvidia-persistenced")
PROFILE_FM = (*PROFILE_DEFAULT, "nvidia-fabric-manager", "libnvidia-nscq")  # fabric manager and NSCQ


def modules_yaml(platform="el9"):
    """modulemd documents of the nvidia-driver module (streams <branch>-open and <branch>-dkms, profiles
    default and fm) and its defaults, as NVIDIA's rhel9 repository carries them
    (NVIDIA/yum-packaging-dkms-nvidia: the XXX-open and XXX-dkms streams; the kmod package by flavor)."""
    docs, defaults = [], []
    for version in DRIVER_VERSIONS:
        branch = version.split(".")[0]
        for flavor, kmod in (("open", "kmod-nvidia-open-dkms"), ("dkms", "kmod-nvidia-latest-dkms")):
            stream = f"{branch}-{flavor}"
            rpms = [*PROFILE_FM, kmod]
            artifacts = "\n".join(
                f"    - {n}-{DRIVER_EPOCH}:{version}-1.{platform}.x86_64" for n in sorted(rpms)
            )
            docs.append(
                "---\ndocument: modulemd\nversion: 2\ndata:\n"
                f'  name: nvidia-driver\n  stream: "{stream}"\n  version: 20251105000000\n'
                f'  context: "gpufleet"\n  arch: x86_64\n'
                f"  summary: Nvidia driver for {stream} branch (gpufleet lab stand-in)\n"
                "  description: >-\n"
                f"    gpufleet lab stand-in of NVIDIA's nvidia-driver module, stream {stream}.\n"
                "  license:\n    module: [MIT]\n"
                f"  dependencies:\n  - requires:\n      platform: [{platform}]\n"
                "  profiles:\n"
                f"    default:\n      rpms: [{', '.join([*PROFILE_DEFAULT, kmod])}]\n"
                f"    fm:\n      rpms: [{', '.join([*PROFILE_FM, kmod])}]\n"
                f"  api:\n    rpms: [{', '.join(sorted(rpms))}]\n"
                f"  artifacts:\n    rpms:\n{artifacts}\n...\n"
            )
            defaults.append(f"    {stream}: [default]")
    docs.append(
        "---\ndocument: modulemd-defaults\nversion: 1\ndata:\n  module: nvidia-driver\n  profiles:\n"
        + "\n".join(defaults)
        + "\n...\n"
    )
    return "".join(docs)


# ---------------------------------------------------------------- a site's own package (not NVIDIA's)

SITE_DIR = "site"  # mirror/cuda/site/x86_64/: packages a site built itself (molecule el-brownfield)


def site_rpms():
    """hpc-site-cuda-13-0: an HPC site's own package of CUDA 13.0 whose tree is /usr/local/cuda-13.0 (a
    version.json and a bin/nvcc that say what they are), over which gpufleet must refuse to install
    NVIDIA's packages (plan/cuda: another package's tree), naming it."""
    version = {"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}
    return [
        Rpm(
            name="hpc-site-cuda-13-0",
            version="13.0.2",
            release="1.site",
            summary="CUDA 13.0 as an HPC site packages it itself (gpufleet lab stand-in)",
            files={
                "/usr/local/cuda-13.0/version.json": json.dumps(version, indent=2) + "\n",
                "/usr/local/cuda-13.0/bin/nvcc": "#!/bin/sh\necho 'a site package stand-in' >&2\nexit 1\n",
            },
            dirs=("/usr/local/cuda-13.0",),
            dist=SITE_DIR,
            mtime=lab_repo._date_epoch("2025-11-05"),
        )
    ]


def publish_site(names):
    """The site's packages under mirror/cuda/site/x86_64 (hard links into the pool; no repodata: a site
    installs them with rpm)."""
    target = lab_repo.repos_dir().parent / SITE_DIR / "x86_64"
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        dest = target / name
        dest.unlink(missing_ok=True)
        os.link(pool_dir() / name, dest)


def all_rpms(cudnn_versions=lab_repo.CUDNN_VERSIONS, cudnn_majors=("13",), cuda=True):
    out = (cuda_rpms() if cuda else []) + site_rpms()
    for version in cudnn_versions:
        for major in cudnn_majors:
            out += cudnn_rpms(version, major)
    return out + driver_rpms("el9") + driver_rpms("el10")


# ---------------------------------------------------------------- building


def need_tools():
    for tool, package in TOOLS:
        if not shutil.which(tool):
            raise LabError(f"{tool} is missing: install it (`apt-get install {package}`) and rerun")


def spec_text(rpm, paths, staged):
    """The spec of one package whose tree is staged in ``staged``: header, %install (hard links of the staged
    tree into the build root), scriptlets, files."""
    lines = [
        "%global debug_package %{nil}",
        "%global __os_install_post %{nil}",
        "%global _build_id_links none",
        f"Name: {rpm.name}",
        f"Version: {rpm.version}",
        f"Release: {rpm.release}",
        f"Summary: {rpm.summary}",
        "License: NVIDIA Proprietary",
        "URL: https://developer.nvidia.com/",
        f"Packager: {PACKAGER}",
        "AutoReqProv: no",
    ]
    if rpm.epoch:
        lines.append(f"Epoch: {rpm.epoch}")
    if rpm.arch == "noarch":
        lines.append("BuildArch: noarch")
    lines += [f"Requires: {r}" for r in rpm.requires]
    lines += [f"Provides: {p}" for p in rpm.provides]
    lines += [f"Conflicts: {c}" for c in rpm.conflicts]
    lines += ["", "%description", f"{rpm.summary.rstrip('.')}.", lab_repo.LAB_NOTE, ""]
    lines += ["%install", f'cp -al "{staged}/." "%{{buildroot}}/"', ""]
    for name, text in (("post", rpm.post), ("preun", rpm.preun), ("postun", rpm.postun)):
        if text:
            lines += [f"%{name}", text.rstrip("\n"), ""]
    lines.append("%files")
    lines += [f'%dir "{d}"' for d in rpm.dirs]
    lines += [f'"{p}"' for p in paths]
    return "\n".join(lines) + "\n"


def _tree(root):
    """The files and links of a staged tree, as absolute paths (the directories stay unowned)."""
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = "/" + os.path.relpath(dirpath, root)
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            paths.append(os.path.normpath(f"{rel}/{name}"))
    return sorted(paths)


def stage(rpm, root):
    """The package's tree: lab/debs.stage's rules and links, no Debian doc files."""
    as_deb = debs.Deb(
        name=rpm.name,
        version=rpm.version,
        arch=rpm.arch,
        fields={},
        source=rpm.source,
        source_sha256=rpm.source_sha256,
        rules=rpm.rules,
        links=rpm.links,
        dirs=rpm.dirs,
        files=dict(rpm.files),
        doc=False,
        mtime=rpm.mtime,
    )
    debs.stage(as_deb, root)


def build_rpm(rpm, out_dir, home, fingerprint):
    """Stage, rpmbuild and rpmsign one package into out_dir."""
    with tempfile.TemporaryDirectory(prefix=f"rpm-{rpm.name}-", dir=STATE) as tmp:
        work = Path(tmp)
        root = work / "root"
        root.mkdir()
        stage(rpm, root)
        spec = work / f"{rpm.name}.spec"
        spec.write_text(spec_text(rpm, _tree(root), root), encoding="utf-8")
        env = dict(os.environ, SOURCE_DATE_EPOCH=str(rpm.mtime))
        cmd = [
            "rpmbuild",
            "-bb",
            "--quiet",
            f"--buildroot={work}/buildroot",
            "--define",
            f"_topdir {work}",
            "--define",
            f"_rpmdir {work}/out",
            "--define",
            "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm",
            # mostly precompiled GPU code: zstd at a low level keeps the build quick (EL 8+ read zstd)
            "--define",
            "_binary_payload w3T0.zstdio",
            "--define",
            "use_source_date_epoch_as_buildtime 1",
            "--define",
            "_buildhost gpufleet-lab.invalid",
            str(spec),
        ]
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        built = work / "out" / rpm.filename
        if res.returncode != 0 or not built.exists():
            raise LabError(
                f"rpmbuild failed on {rpm.name}: {' '.join((res.stderr or res.stdout).split())[:400]}"
            )
        sign_rpm(built, home, fingerprint)
        os.replace(built, Path(out_dir) / rpm.filename)


def sign_rpm(path, home, fingerprint):
    cmd = [
        "rpmsign",
        "--addsign",
        "--define",
        f"_gpg_name {fingerprint}",
        "--define",
        f"_gpg_path {home}",
        "--define",
        "__gpg /usr/bin/gpg",
        str(path),
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise LabError(f"rpmsign failed on {path.name}: {' '.join(res.stderr.split())[:300]}")


def pool_dir():
    path = STATE / "rpm-build" / "pool"
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_one(rpm, home, fingerprint, log):
    stamp = STATE / "stamps" / f"rpm__{rpm.name}-{rpm.version}-{rpm.release}.json"
    out = pool_dir() / rpm.filename
    wanted = {"digest": rpm.digest(), "key": fingerprint}
    if out.exists() and stamp.exists() and json.loads(stamp.read_text(encoding="utf-8")) == wanted:
        return "up to date"
    start = time.monotonic()
    build_rpm(rpm, pool_dir(), home, fingerprint)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(json.dumps(wanted), encoding="utf-8")
    log(f"rpms: built {rpm.filename} in {time.monotonic() - start:.0f}s ({out.stat().st_size / 1e6:.0f} MB)")
    return "built"


# ---------------------------------------------------------------- publishing


def publish(rdir, names, fingerprint, pub, home, *, target=None, files=None):
    """One repository directory: the signed .rpms, repodata (+ modules on rhel9), repomd.xml.asc, the key.
    ``target`` another directory than the repository's (the tampered copies), ``files`` name -> path of a
    package that is not the pool's."""
    target = target or lab_repo.repos_dir() / rdir / "x86_64"
    files = files or {}
    target.mkdir(parents=True, exist_ok=True)
    for stale in target.glob("*.rpm"):
        if stale.name not in names:
            stale.unlink()
    for name in names:
        dest, src = target / name, files.get(name) or pool_dir() / name
        if not (dest.exists() and os.path.samestat(dest.stat(), src.stat())):
            dest.unlink(missing_ok=True)
            os.link(src, dest)
    shutil.rmtree(target / "repodata", ignore_errors=True)
    res = subprocess.run(
        ["createrepo_c", "--quiet", "--general-compress-type=xz", "--revision", "gpufleet-lab", str(target)],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise LabError(f"createrepo_c failed on {target}: {' '.join(res.stderr.split())[:300]}")
    if rdir == "rhel9":
        modules = target / "modules.yaml"
        modules.write_text(modules_yaml("el9"), encoding="utf-8")
        cmd = ["modifyrepo_c", "--mdtype=modules", str(modules), str(target / "repodata")]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        modules.unlink()
        if res.returncode != 0:
            raise LabError(f"modifyrepo_c failed on {target}: {' '.join(res.stderr.split())[:300]}")
    repomd = (target / "repodata" / "repomd.xml").read_bytes()
    signature = debs.gpg(
        home, "--local-user", fingerprint, "--passphrase", "", "--armor", "--detach-sign", data=repomd
    )
    (target / "repodata" / "repomd.xml.asc").write_bytes(signature)
    (target / "repodata" / "repomd.xml.key").write_bytes(pub)
    (target / KEY_FILES[rdir]).write_bytes(pub)


# ---------------------------------------------------------------- what dnf must refuse


def tampered_dir():
    return lab_repo.repos_dir().parent / "tampered"


def foreign_key(log):
    """(gnupg home, fingerprint) of a key no lab repository names; made once per lab."""
    home = lab_repo.key_dir() / "foreign"
    if not (home / "pubring.kbx").exists():
        home.mkdir(parents=True, exist_ok=True)
        os.chmod(home, 0o700)
        debs.gpg(home, "--passphrase", "", "--quick-generate-key", FOREIGN_UID, "rsa3072", "sign", "never")
        log(f"rpms: made the foreign key in {home}")
    out = debs.gpg(home, "--with-colons", "--list-secret-keys").decode()
    return home, next(line.split(":")[9] for line in out.splitlines() if line.startswith("fpr:"))


def victim(case, src, dest, foreign):
    """The package dnf must refuse: ``src`` unsigned, signed by the foreign key, or a byte of its payload
    changed after signing (its header's payload digest no longer matches)."""
    shutil.copyfile(src, dest)
    if case in ("unsigned", "foreign"):
        res = subprocess.run(["rpmsign", "--delsign", str(dest)], capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise LabError(f"rpmsign --delsign failed on {dest.name}: {' '.join(res.stderr.split())[:300]}")
    if case == "foreign":
        sign_rpm(dest, *foreign)
    if case == "tampered":
        with open(dest, "r+b") as handle:
            handle.seek(-64, os.SEEK_END)
            byte = handle.read(1)
            handle.seek(-64, os.SEEK_END)
            handle.write(bytes([byte[0] ^ 0xFF]))


def publish_tampered(rdir, wanted, key, log):
    """mirror/cuda/tampered/<case>/<rdir>/x86_64 for each of TAMPER_CASES (the module docstring says what);
    ``key``: the lab key's (fingerprint, public key, gnupg home)."""
    fingerprint, pub, home = key
    newest = max(lab_repo.CUDNN_VERSIONS, key=lambda v: tuple(int(x) for x in v.split(".")))
    cudnn = [r for r in wanted if r.version == newest and r.name.startswith("libcudnn9-")]
    names = sorted(r.filename for r in cudnn)
    bad = next(r.filename for r in cudnn if "-devel-" in r.name)  # small: each case is a copy of it
    foreign = None
    for case in TAMPER_CASES:
        target = tampered_dir() / case / rdir / "x86_64"
        stamp = target / ".gpufleet-lab"
        wanted_stamp = json.dumps({"names": names, "key": fingerprint, "pool": [
            os.stat(pool_dir() / n).st_mtime_ns for n in names
        ]})  # fmt: skip
        if stamp.exists() and stamp.read_text(encoding="utf-8") == wanted_stamp:
            continue
        files = {}
        if case != "repomd":
            foreign = foreign or foreign_key(log)
            copies = STATE / "rpm-build" / "tampered" / case / rdir
            copies.mkdir(parents=True, exist_ok=True)
            files[bad] = copies / bad
            victim(case, pool_dir() / bad, files[bad], foreign)
        publish(rdir, names, fingerprint, pub, home, target=target, files=files)
        if case == "repomd":
            repomd = target / "repodata" / "repomd.xml"
            text = repomd.read_text(encoding="utf-8")
            repomd.write_text(text.replace("<revision>", "<revision>edited-", 1), encoding="utf-8")
        stamp.write_text(wanted_stamp, encoding="utf-8")
    log(f"rpms: what dnf must refuse in {tampered_dir()}/{{{','.join(TAMPER_CASES)}}}/{rdir}/x86_64")


def build(log=print, cudnn_versions=None, dists=None, cuda=True):
    """Every package (only what is missing or changed), then the signed repositories; ``cuda``: the CUDA
    toolkit's packages too (cuda_rpms: the mirror's CUDA release)."""
    need_tools()
    start = time.monotonic()
    versions = lab_repo.check_subset(cudnn_versions, lab_repo.CUDNN_VERSIONS, "cuDNN version")
    rdirs = lab_repo.check_subset(dists, RPM_DIRS, "repository")
    wanted = all_rpms(versions, cuda=cuda)
    fingerprint, pub = lab_repo.ensure_key(log)
    home = lab_repo.key_dir() / "gnupg"
    try:
        for rpm in wanted:
            build_one(rpm, home, fingerprint, log)
        for stale in pool_dir().glob("*.rpm"):
            if stale.name not in {r.filename for r in wanted}:
                stale.unlink()
        for rdir in rdirs:
            names = sorted(r.filename for r in wanted if r.dist in ("", rdir))
            publish(rdir, names, fingerprint, pub, home)
            if len(versions) == len(lab_repo.CUDNN_VERSIONS):
                publish_tampered(rdir, wanted, (fingerprint, pub, home), log)
        publish_site(sorted(r.filename for r in wanted if r.dist == SITE_DIR))
    finally:
        lab_repo.stop_agent()
        if shutil.which("gpgconf"):  # and the foreign key's
            cmd = ["gpgconf", "--homedir", str(lab_repo.key_dir() / "foreign"), "--kill", "gpg-agent"]
            subprocess.run(cmd, capture_output=True, check=False)
    log(
        f"rpms: {len(wanted)} packages in {lab_repo.repos_dir()}/{{{','.join(rdirs)}}}/x86_64, signed with "
        f"{fingerprint} ({time.monotonic() - start:.0f}s)"
    )
    return fingerprint
