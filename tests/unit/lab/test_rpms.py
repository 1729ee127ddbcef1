"""The lab's NVIDIA-layout RPM repositories for EL-shaped hosts (lab/rpms.py): the names the roles' dnf
plans ask for, NVIDIA's key file names, the driver module streams, and the spec each package is built from."""

import hashlib
import io
import json
import lzma
import shutil
import subprocess
import tarfile

import pytest
import yaml
from ansible_collections.gpufleet.nvidia.plugins.module_utils.kb import driver_packages as kb_packages
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan

from lab import debs, rpms
from lab import mirror as lab_mirror
from lab import repo as lab_repo


def test_the_key_files_are_those_nvidias_repositories_publish():
    for rdir, name in rpms.KEY_FILES.items():
        assert repo_plan.KEYS[rdir][0] == name


def test_the_driver_stand_ins_have_nvidias_names_epoch_and_say_what_they_are():
    el9 = rpms.driver_rpms("el9")
    el10 = rpms.driver_rpms("el10")
    names9 = {r.name for r in el9}
    kmods = {"kmod-nvidia-open-dkms", "kmod-nvidia-latest-dkms"}
    assert {"nvidia-driver", "nvidia-driver-cuda", *kmods} <= names9
    assert {"nvidia-open", "cuda-drivers"} <= {r.name for r in el10} and "nvidia-open" not in names9
    for rpm in el9 + el10:
        assert rpm.epoch == "3" and rpm.release.startswith("1.el")
        text = rpm.files[f"/usr/share/gpufleet-lab/{rpm.name}"]
        assert "stand-in" in text and "no kernel module" in text
    # the services the driver role enables, under the names kb/driver_packages.py gives them
    units = {p for r in el9 for p in r.files if p.startswith("/usr/lib/systemd/system/")}
    assert units == {
        f"/usr/lib/systemd/system/{kb_packages.PERSISTENCED_SERVICE}.service",
        f"/usr/lib/systemd/system/{kb_packages.FABRICMANAGER_SERVICE}.service",
    }
    assert {r.dist for r in el9} == {"rhel9"} and {r.dist for r in el10} == {"rhel10"}


def test_the_module_streams_are_nvidias_with_default_and_fm_profiles():
    docs = list(yaml.safe_load_all(rpms.modules_yaml("el9")))
    streams = {d["data"]["stream"]: d["data"] for d in docs if d["document"] == "modulemd"}
    assert set(streams) == {"580-open", "580-dkms", "590-open", "590-dkms"}
    open580 = streams["580-open"]
    assert "kmod-nvidia-open-dkms" in open580["profiles"]["default"]["rpms"]
    assert "nvidia-fabric-manager" in open580["profiles"]["fm"]["rpms"]
    assert "kmod-nvidia-latest-dkms" in streams["580-dkms"]["profiles"]["default"]["rpms"]
    assert "nvidia-driver-3:580.105.08-1.el9.x86_64" in open580["artifacts"]["rpms"]
    (defaults,) = [d for d in docs if d["document"] == "modulemd-defaults"]
    assert defaults["data"]["profiles"]["590-dkms"] == ["default"]


def test_a_spec_installs_the_staged_tree_with_no_automatic_dependencies(tmp_path):
    (rpm,) = [r for r in rpms.driver_rpms("el9") if r.name == "nvidia-driver"][:1]
    spec = rpms.spec_text(rpm, ["/usr/share/gpufleet-lab/nvidia-driver"], tmp_path)
    assert "AutoReqProv: no" in spec and "Epoch: 3" in spec
    assert "Requires: nvidia-kmod = 3:580.105.08" in spec
    assert f'cp -al "{tmp_path}/." "%{{buildroot}}/"' in spec
    assert spec.rstrip().endswith('"/usr/share/gpufleet-lab/nvidia-driver"')


needs_tools = pytest.mark.skipif(
    not all(
        shutil.which(t) for t in ("rpmbuild", "rpmsign", "createrepo_c", "modifyrepo_c", "gpg", "rpmkeys")
    ),
    reason="needs rpm, createrepo-c and gnupg (`python -m lab rpms build` installs them)",
)
CUDNN = "9.14.0.64"


def _cudnn_mirror(lab):
    """A mirror with one synthetic cuDNN 9.14 archive for CUDA 13 (libraries, links, headers)."""
    top = f"cudnn-linux-x86_64-{CUDNN}_cuda13-archive"
    path = lab / "mirror" / "cudnn" / "redist" / "cudnn" / "linux-x86_64" / f"{top}.tar.xz"
    path.parent.mkdir(parents=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        members = {"lib/libcudnn.so.9.14.0": b"elf", "include/cudnn_v9.h": b"/* h */", "LICENSE": b"l\n"}
        for name, data in members.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (
            ("lib/libcudnn.so.9", "libcudnn.so.9.14.0"),
            ("lib/libcudnn.so", "libcudnn.so.9"),
        ):
            info = tarfile.TarInfo(f"{top}/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    path.write_bytes(lzma.compress(buf.getvalue()))
    entry = {
        "relative_path": str(path.relative_to(path.parents[2])),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }
    manifest = {"release_date": "2025-10-08", "cudnn": {"version": CUDNN, "linux-x86_64": {"cuda13": entry}}}
    (path.parents[2] / "redistrib_9.14.0.json").write_text(json.dumps(manifest))


@needs_tools
def test_a_built_repository_is_signed_and_holds_nvidias_rpms(tmp_path, monkeypatch):
    """rpms.build on a synthetic mirror: every package signed with the lab key, repomd.xml's detached
    signature verifies, rhel9 carries the driver streams, cuDNN in /usr/lib64 and /usr/include."""
    lab = tmp_path / "lab"
    for module in (rpms, lab_repo, lab_mirror):
        monkeypatch.setattr(module, "STATE", lab)
    _cudnn_mirror(lab)
    fingerprint = rpms.build(log=lambda _line: None, cudnn_versions=[CUDNN], cuda=False)
    rhel9 = lab / "mirror" / "cuda" / "repos" / "rhel9" / "x86_64"
    lib = rhel9 / f"libcudnn9-cuda-13-{CUDNN}-1.x86_64.rpm"
    listing = subprocess.run(["rpm", "-qpl", str(lib)], capture_output=True, text=True, check=True).stdout
    assert listing.split() == ["/usr/lib64/libcudnn.so.9", "/usr/lib64/libcudnn.so.9.14.0"]
    dev = rhel9 / f"libcudnn9-devel-cuda-13-{CUDNN}-1.x86_64.rpm"
    listing = subprocess.run(["rpm", "-qpl", str(dev)], capture_output=True, text=True, check=True).stdout
    assert "/usr/include/cudnn_v9.h" in listing.split() and "/usr/lib64/libcudnn.so" in listing.split()
    db = tmp_path / "rpmdb"
    db.mkdir()
    subprocess.run(["rpmkeys", "--dbpath", str(db), "--import", str(rhel9 / "D42D0685.pub")], check=True)
    for rpm in sorted(rhel9.glob("*.rpm")):
        res = subprocess.run(
            ["rpmkeys", "--dbpath", str(db), "--checksig", str(rpm)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert res.returncode == 0 and "signatures OK" in res.stdout, res.stdout
    home = lab_repo.key_dir() / "gnupg"
    for rdir in ("rhel9", "rhel10"):
        repodata = lab / "mirror" / "cuda" / "repos" / rdir / "x86_64" / "repodata"
        verify = [
            "gpg",
            "--homedir",
            str(home),
            "--batch",
            "--verify",
            str(repodata / "repomd.xml.asc"),
            str(repodata / "repomd.xml"),
        ]
        assert subprocess.run(verify, capture_output=True, check=False).returncode == 0
        assert ("modules" in (repodata / "repomd.xml").read_text()) is (rdir == "rhel9")
    assert (rhel9.parent.parent / "rhel10" / "x86_64" / "CDF6BA43.pub").exists()
    assert fingerprint == (lab_repo.key_dir() / "fingerprint").read_text().strip()
    lab_repo.stop_agent()


@needs_tools
def test_tampered_copies(tmp_path, monkeypatch):  # a short name: gpg-agent's socket path under tmp_path
    """Issue 38's refusals (molecule el): in each copy the -devel package fails rpm's check with the lab key
    (no signature, another key's, a payload whose digest does not match) while repodata is signed; in
    ``repomd`` the packages are the genuine ones and repomd.xml no longer matches its signature."""
    lab = tmp_path / "lab"
    for module in (rpms, lab_repo, lab_mirror):
        monkeypatch.setattr(module, "STATE", lab)
    monkeypatch.setattr(lab_repo, "CUDNN_VERSIONS", (CUDNN,))
    _cudnn_mirror(lab)
    rpms.build(log=lambda _line: None, cudnn_versions=[CUDNN], dists=["rhel9"], cuda=False)
    db = tmp_path / "rpmdb"
    db.mkdir()
    repo = lab / "mirror" / "cuda" / "repos" / "rhel9" / "x86_64"
    subprocess.run(["rpmkeys", "--dbpath", str(db), "--import", str(repo / "D42D0685.pub")], check=True)
    home = lab_repo.key_dir() / "gnupg"
    answers = {}
    for case in rpms.TAMPER_CASES:
        top = lab / "mirror" / "cuda" / "tampered" / case / "rhel9" / "x86_64"
        assert sorted(p.name for p in top.glob("*.rpm")) == [
            f"libcudnn9-cuda-13-{CUDNN}-1.x86_64.rpm",
            f"libcudnn9-devel-cuda-13-{CUDNN}-1.x86_64.rpm",
        ]
        assert (top / "D42D0685.pub").read_bytes() == (repo / "D42D0685.pub").read_bytes()
        checks = {}
        for rpm in top.glob("*.rpm"):
            cmd = ["rpmkeys", "--dbpath", str(db), "--checksig", str(rpm)]
            res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            checks["devel" if "-devel-" in rpm.name else "lib"] = (res.returncode, res.stdout)
        assert checks["lib"][0] == 0 and "signatures OK" in checks["lib"][1]
        answers[case] = checks["devel"]
        repodata = top / "repodata"
        verify = ["gpg", "--homedir", str(home), "--batch", "--verify"]
        verify += [str(repodata / "repomd.xml.asc"), str(repodata / "repomd.xml")]
        signed = subprocess.run(verify, capture_output=True, check=False).returncode == 0
        assert signed is (case != "repomd"), case
    assert answers["repomd"][0] == 0
    for case in ("unsigned", "foreign", "tampered"):
        assert answers[case][0] != 0 or "signatures OK" not in answers[case][1], (case, answers[case])
    assert "NOT OK" in answers["tampered"][1] and "NOT OK" in answers["foreign"][1]
    lab_repo.stop_agent()


def test_nvidias_rpm_names_of_the_cuda_packages():
    assert rpms.rpm_name("cuda-cudart-dev-13-0") == "cuda-cudart-devel-13-0"
    assert rpms.rpm_name("libcublas-dev-13-0") == "libcublas-devel-13-0"
    assert rpms.rpm_name("cuda-libraries-dev-13-0") == "cuda-libraries-devel-13-0"
    assert rpms.rpm_name("cuda-toolkit-13-0") == "cuda-toolkit-13-0"
    assert rpms.rpm_name("cuda-toolkit-13-0-config-common") == "cuda-toolkit-13-0-config-common"
    assert rpms.rpm_name("cuda-sandbox-dev-13-0") == "cuda-sandbox-devel-13-0"
    assert rpms.rpm_requires(
        "cuda-cudart-13-0 (>= 13.0.96), cuda-toolkit-config-common | cuda-cudart-11-2"
    ) == (
        "cuda-cudart-13-0 >= 13.0.96",
        "cuda-toolkit-config-common",
    )
    assert rpms.rpm_requires("libcublas-dev-13-0 (>= 13.1.0.3), x (<< 2)") == (
        "libcublas-devel-13-0 >= 13.1.0.3",
        "x < 2",
    )


def test_the_toolkit_rpms_are_the_apt_repositorys_packages_under_nvidias_rpm_names(monkeypatch):
    """lab/rpms.cuda_rpms from lab/repo.cuda_debs: names, versions split, Requires, the alternatives of
    config-common as %post / %preun (a removal only), ldconfig, the /usr/local/cuda-X.Y directory owned."""
    config = lab_repo.config_common_debs("13.0", "13.0.96-1", 0)
    dev = debs.Deb(
        name="cuda-cudart-dev-13-0",
        version="13.0.96-1",
        arch="amd64",
        fields={
            "Description": "CUDA Runtime native dev links, headers\nmore",
            "Depends": "cuda-cudart-13-0 (>= 13.0.96)",
            "Provides": "libcudart.so.13-dev (= 13.0.96)",
        },  # fmt: skip
        rules=(("include", "/usr/local/cuda-13.0/targets/x86_64-linux/include", None),),
    )
    monkeypatch.setattr(lab_repo, "cuda_debs", lambda _release=None: [dev, *config])
    got = {r.name: r for r in rpms.cuda_rpms()}
    rpm = got["cuda-cudart-devel-13-0"]
    assert (rpm.version, rpm.release, rpm.arch) == ("13.0.96", "1", "x86_64")
    assert rpm.requires == ("cuda-cudart-13-0 >= 13.0.96",) and rpm.provides == ()
    assert rpm.summary == "CUDA Runtime native dev links, headers"
    xy = got["cuda-toolkit-13-0-config-common"]
    assert xy.arch == "noarch" and xy.dirs == ("/usr/local/cuda-13.0",)
    assert "update-alternatives --install /usr/local/cuda cuda /usr/local/cuda-13.0 130" in xy.post
    assert (
        xy.preun.startswith('if [ "$1" -eq 0 ]; then\n') and "--remove cuda /usr/local/cuda-13.0" in xy.preun
    )
    assert "configure" not in xy.post
    common = got["cuda-toolkit-config-common"]
    assert common.files == {"/etc/ld.so.conf.d/000_cuda.conf": "/usr/local/cuda/targets/x86_64-linux/lib\n"}
    assert common.post == common.postun == "/sbin/ldconfig\n"
    spec = rpms.spec_text(xy, [], "/stage")
    assert '%dir "/usr/local/cuda-13.0"' in spec and "%preun" in spec
    assert "BuildArch: noarch" in spec  # else rpmbuild makes an x86_64 package of another file name


@needs_tools
def test_the_site_package_owns_a_cuda_tree_and_is_in_no_nvidia_repository(tmp_path, monkeypatch):
    """molecule el-brownfield's foreign toolkit: hpc-site-cuda-13-0 owns /usr/local/cuda-13.0 (version.json,
    bin/nvcc), served under mirror/cuda/site/x86_64, never in rhel9/rhel10."""
    lab = tmp_path / "lab"
    for module in (rpms, lab_repo, lab_mirror):
        monkeypatch.setattr(module, "STATE", lab)
    _cudnn_mirror(lab)
    rpms.build(log=lambda _line: None, cudnn_versions=[CUDNN], dists=["rhel9"], cuda=False)
    (site,) = (lab / "mirror" / "cuda" / "site" / "x86_64").glob("*.rpm")
    assert site.name == "hpc-site-cuda-13-0-13.0.2-1.site.x86_64.rpm"
    listing = subprocess.run(["rpm", "-qpl", str(site)], capture_output=True, text=True, check=True).stdout
    assert listing.split() == [
        "/usr/local/cuda-13.0",
        "/usr/local/cuda-13.0/bin/nvcc",
        "/usr/local/cuda-13.0/version.json",
    ]
    assert not list((lab / "mirror" / "cuda" / "repos").rglob("hpc-site-*"))
    lab_repo.stop_agent()
