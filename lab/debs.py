"""Debian packages and a flat apt repository, the way NVIDIA publishes them: .debs built with dpkg-deb from a
staged tree, `Packages`/`Packages.gz`, a `Release` with the hashes apt checks, signed with gpg (`InRelease`,
`Release.gpg`). Stdlib + the dpkg-deb and gpg binaries.

A package is a `Deb`: control fields, the members it takes from one source tarball (rules), links, files with
fixed contents (conffiles) and maintainer scripts. Its stamp is the sha256 of all of that plus the tarball's
sha256, so a .deb is rebuilt only when its recipe or its input changed.
"""

import email.utils
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lab import LabError

FORMAT = 1  # bump when the way packages are built changes: every .deb is rebuilt
# The order dpkg-deb and NVIDIA's packages write control fields in.
FIELD_ORDER = (
    "Package",
    "Source",
    "Version",
    "Architecture",
    "Maintainer",
    "Installed-Size",
    "Depends",
    "Conflicts",
    "Breaks",
    "Replaces",
    "Provides",
    "Section",
    "Priority",
    "Homepage",
    "Description",
)
NO_LICENSE = b"See NVIDIA's license for this software.\n"
SOVERSIONED = re.compile(r"\.so\.\d")
# rule tests: which members of the tarball a rule takes (by their path under the top folder)
TESTS = {
    "any": lambda rel: True,
    "so.N": lambda rel: bool(SOVERSIONED.search(rel.rsplit("/", 1)[-1])),
    ".so": lambda rel: rel.endswith(".so"),
    ".a": lambda rel: rel.endswith(".a"),
    "_v9.h": lambda rel: rel.endswith("_v9.h"),
    "not crt": lambda rel: not rel.startswith("include/crt/"),
}


@dataclass
class Deb:
    """One binary package: control fields and where each file comes from."""

    name: str
    version: str
    arch: str
    fields: dict  # control fields besides Package/Version/Architecture/Installed-Size
    source: str = ""  # the tarball the files come from ("" = none)
    source_sha256: str = ""
    # (member prefix under the tarball's top folder, destination directory, test name in TESTS)
    rules: tuple = ()
    links: tuple = ()  # (path, target)
    dirs: tuple = ()  # directories the package owns even when empty
    files: dict = field(default_factory=dict)  # path -> text (conffiles under /etc)
    scripts: dict = field(default_factory=dict)  # postinst/prerm/... -> text
    ldconfig: bool = False  # activate the ldconfig trigger (shared libraries or /etc/ld.so.conf.d)
    # /usr/share/doc/<name>/copyright and changelog.Debian.gz; "changelog": the changelog alone (NVIDIA's meta
    # packages)
    doc: object = True
    mtime: int = 0

    @property
    def filename(self):
        return f"{self.name}_{self.version}_{self.arch}.deb"

    def recipe(self):
        doc = asdict(self)
        doc.pop("source")  # the path may move; its sha256 says what it holds
        doc["format"] = FORMAT
        return doc

    def digest(self):
        return hashlib.sha256(json.dumps(self.recipe(), sort_keys=True).encode()).hexdigest()


def need_tools():
    for tool, package in (("dpkg-deb", "dpkg"), ("gpg", "gnupg")):
        if not shutil.which(tool):
            raise LabError(f"{tool} is missing: install it (`apt-get install {package}`) and rerun")


# ---------------------------------------------------------------- staging


def _members(deb, tar):
    """[(member, destination path)] of the tarball, by the first rule that takes each member."""
    out = []
    for member in tar:
        _top, _, rel = member.name.partition("/")
        if not rel or member.isdir():
            continue
        for prefix, dest, test in deb.rules:
            if rel.startswith(prefix) and TESTS[test](rel):
                out.append((member, dest.rstrip("/") + "/" + rel[len(prefix) :]))
                break
    return out


def _license(tar):
    for member in tar.getmembers():
        if member.name.count("/") == 1 and member.name.endswith("/LICENSE") and member.isfile():
            return tar.extractfile(member).read()
    return NO_LICENSE


def _unpack(deb, root):
    """The tarball's members the rules take, written into root: ({path: md5}, size in KiB, license text)."""
    sums, size = {}, 0
    if not deb.source:
        return sums, size, NO_LICENSE
    with tarfile.open(deb.source, "r:*") as tar:
        for member, dest in _members(deb, tar):
            target = root / dest.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if member.issym():
                os.symlink(member.linkname, target)
                size += 1
                continue
            with tar.extractfile(member) as src, open(target, "wb") as out:
                sums[dest], n = _copy(src, out)
            os.chmod(target, 0o755 if member.mode & 0o111 else 0o644)
            size += -(-n // 1024)
        return sums, size, _license(tar)


def stage(deb, root):
    """Write the package tree into root; returns {path: md5} of its regular files and the installed size."""
    sums, size, license_text = _unpack(deb, root)
    for path, target in deb.links:
        link = root / path.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link)
        size += 1
    for path in deb.dirs:
        (root / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
    extra = dict(deb.files)
    if deb.doc is True:
        extra[f"/usr/share/doc/{deb.name}/copyright"] = license_text
    if deb.doc:
        extra[f"/usr/share/doc/{deb.name}/changelog.Debian.gz"] = _changelog(deb)
    for path, data in extra.items():
        raw = data.encode() if isinstance(data, str) else data
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw)
        os.chmod(target, 0o644)
        sums[path] = hashlib.md5(raw).hexdigest()
        size += -(-len(raw) // 1024)
    return sums, size


def _copy(src, out):
    md5, n = hashlib.md5(), 0
    for block in iter(lambda: src.read(1 << 20), b""):
        out.write(block)
        md5.update(block)
        n += len(block)
    return md5.hexdigest(), n


def _changelog(deb):
    text = (
        f"{deb.name.split('-')[0]} ({deb.version}) stable; urgency=low\n\n"
        "  * Rebuilt by the gpufleet lab from NVIDIA's PyPI wheel, in NVIDIA's package layout.\n\n"
        f" -- {deb.fields.get('Maintainer', 'cudatools <cudatools@nvidia.com>')}  "
        f"{email.utils.formatdate(deb.mtime, usegmt=True)}\n"
    )
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as gz:
        gz.write(text.encode())
    return buf.getvalue()


def control_text(fields):
    lines = []
    for key in sorted(fields, key=lambda k: (FIELD_ORDER.index(k) if k in FIELD_ORDER else 99, k)):
        value = str(fields[key]).rstrip("\n")
        first, *rest = value.split("\n")
        lines.append(f"{key}: {first}")
        lines += [f" {line}" if line.strip() else " ." for line in rest]
    return "\n".join(lines) + "\n"


def write_control(deb, root, sums, size):
    meta = root / "DEBIAN"
    meta.mkdir(parents=True, exist_ok=True)
    fields = {"Package": deb.name, "Version": deb.version, "Architecture": deb.arch, **deb.fields}
    fields["Installed-Size"] = str(max(size, 1))
    (meta / "control").write_text(control_text(fields), encoding="utf-8")
    (meta / "md5sums").write_text(
        "".join(f"{md5}  {path.lstrip('/')}\n" for path, md5 in sorted(sums.items())), encoding="utf-8"
    )
    conffiles = sorted(p for p in deb.files if p.startswith("/etc/"))
    if conffiles:
        (meta / "conffiles").write_text("".join(p + "\n" for p in conffiles), encoding="utf-8")
    if deb.ldconfig:
        (meta / "triggers").write_text("activate-noawait ldconfig\n", encoding="utf-8")
    for name, text in deb.scripts.items():
        (meta / name).write_text(text, encoding="utf-8")
        os.chmod(meta / name, 0o755)
    return fields


def _clamp_mtimes(root, mtime):
    for dirpath, dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames + dirnames:
            os.utime(os.path.join(dirpath, name), (mtime, mtime), follow_symlinks=False)
    os.utime(root, (mtime, mtime))


def build_deb(deb, out_dir, work_dir):
    """Stage and dpkg-deb one package into out_dir; returns its control fields."""
    root = Path(work_dir) / f"stage-{deb.name}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    try:
        sums, size = stage(deb, root)
        fields = write_control(deb, root, sums, size)
        _clamp_mtimes(root, deb.mtime)
        out = Path(out_dir) / deb.filename
        tmp = out.with_name(out.name + ".part")
        env = dict(os.environ, SOURCE_DATE_EPOCH=str(deb.mtime))
        # -Znone: mostly precompiled GPU code, which xz shrinks by ~20 % at a few MB/s (see the changelog)
        cmd = ["dpkg-deb", "--root-owner-group", "-Znone", "--build", str(root), str(tmp)]
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if res.returncode != 0:
            raise LabError(f"dpkg-deb failed on {deb.name}: {' '.join(res.stderr.split())[:300]}")
        os.replace(tmp, out)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return fields


# ---------------------------------------------------------------- index, release, signature


def file_hashes(path):
    hashes = {"MD5sum": hashlib.md5(), "SHA1": hashlib.sha1(), "SHA256": hashlib.sha256()}
    size = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            size += len(block)
            for h in hashes.values():
                h.update(block)
    return {"Size": str(size), **{k: h.hexdigest() for k, h in hashes.items()}}


def packages_stanza(fields, filename, hashes):
    """One Packages entry: the control fields, then where the file is (flat: ./name.deb) and its hashes."""
    entry = {k: v for k, v in fields.items() if k != "Description"}
    entry.update({"Filename": f"./{filename}", **hashes, "Description": fields["Description"]})
    order = (*FIELD_ORDER[:-1], "Filename", "Size", "MD5sum", "SHA1", "SHA256", "Description")
    lines = []
    for key in sorted(entry, key=lambda k: order.index(k) if k in order else 90):
        first, *rest = str(entry[key]).rstrip("\n").split("\n")
        lines.append(f"{key}: {first}")
        lines += [f" {line}" if line.strip() else " ." for line in rest]
    return "\n".join(lines) + "\n"


def gzip_bytes(data):
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as gz:
        gz.write(data)
    return buf.getvalue()


def release_text(files, date, description):
    """A flat repository's Release, as NVIDIA's: Origin/Label/Architecture/Date, then the index hashes."""
    head = [
        "Origin: NVIDIA",
        "Label: NVIDIA CUDA",
        "Architecture: x86_64",
        f"Date: {email.utils.formatdate(date, usegmt=True)}",
        f"Description: {description}",
    ]
    body = []
    for algo, fn in (("MD5Sum", hashlib.md5), ("SHA1", hashlib.sha1), ("SHA256", hashlib.sha256)):
        body.append(f"{algo}:")
        for name, data in sorted(files.items()):
            body.append(f" {fn(data).hexdigest()} {len(data):>16} {name}")
    return "\n".join(head + body) + "\n"


def gpg(home, *args, data=None):
    cmd = ["gpg", "--homedir", str(home), "--batch", "--no-tty", "--pinentry-mode", "loopback", *args]
    res = subprocess.run(cmd, input=data, capture_output=True, check=False)
    if res.returncode != 0:
        err = " ".join(res.stderr.decode(errors="replace").split())[:300]
        raise LabError(f"gpg {' '.join(args[:2])} failed: {err} (the lab key lives in {home})")
    return res.stdout


def sign(home, fingerprint, release):
    """(InRelease, Release.gpg) for the Release text, SHA512 signatures by the key."""
    common = ("--local-user", fingerprint, "--digest-algo", "SHA512", "--passphrase", "")
    inrelease = gpg(home, *common, "--clearsign", data=release.encode())
    detached = gpg(home, *common, "--armor", "--detach-sign", data=release.encode())
    return inrelease, detached
