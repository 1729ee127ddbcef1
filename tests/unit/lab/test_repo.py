"""The lab's NVIDIA-layout apt repository, built from a synthetic mirror: NVIDIA's names, versions, file
layout and maintainer scripts; Packages/Release hashes; InRelease and Release.gpg verified by gpgv with the
lab key; nothing rebuilt or re-signed when nothing changed; a changed recipe rebuilds."""

import gzip
import hashlib
import io
import json
import lzma
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import repo as install_repo
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan

from lab import LabError, debs, repo
from lab import mirror as lab_mirror

pytestmark = pytest.mark.skipif(
    not (shutil.which("dpkg-deb") and shutil.which("gpg") and shutil.which("gpgv")),
    reason="needs dpkg-deb, gpg and gpgv (apt-get install dpkg gnupg gpgv)",
)
H200 = Path(__file__).resolve().parents[2] / "data" / "h200-ubuntu2404" / "dpkg-L-libcudnn9-cuda-13.txt"
MTIME = 1759881600  # 2025-10-08


def _tar_xz(path, top, files, links=()):
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in {**files, "LICENSE": b"license text\n"}.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mtime, info.mode = len(data), MTIME, 0o755 if "bin/" in name else 0o644
            tar.addfile(info, io.BytesIO(data))
        for name, target in links:
            info = tarfile.TarInfo(f"{top}/{name}")
            info.type, info.linkname, info.mtime = tarfile.SYMTYPE, target, MTIME
            tar.addfile(info)
    path.write_bytes(lzma.compress(buf.getvalue()))
    return {
        "relative_path": str(path.relative_to(path.parents[2])),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }


CUDA_FILES = {
    "cuda_nvcc": ({"bin/nvcc": b"nvcc", "bin/nvcc.profile": b"TOP", "include/fatbinary_section.h": b"h",
                   "include/crt/host_config.h": b"dup", "nvvm/bin/cicc": b"dup"}, ()),
    "cuda_crt": ({"include/crt/host_config.h": b"crt"}, ()),
    "libnvvm": ({"nvvm/bin/cicc": b"cicc", "nvvm/lib64/libnvvm.so.4": b"nvvm"},
                (("nvvm/lib64/libnvvm.so", "libnvvm.so.4"),)),
    "cuda_cudart": ({"include/cuda_runtime.h": b"rt", "lib/libcudart.so.13.0.96": b"elf",
                     "lib/libcudart_static.a": b"a"},
                    (("lib/libcudart.so.13", "libcudart.so.13.0.96"),
                     ("lib/libcudart.so", "libcudart.so.13"))),
    "cuda_nvrtc": ({"include/nvrtc.h": b"h", "lib/libnvrtc.so.13.0.88": b"elf"},
                   (("lib/libnvrtc.so.13", "libnvrtc.so.13.0.88"), ("lib/libnvrtc.so", "libnvrtc.so.13"))),
    "cuda_cccl": ({"include/cccl/cuda/std/version": b"v", "include/nv/target": b"t"}, ()),
    "cuda_culibos": ({"lib/libculibos.a": b"a"}, ()),
    "cuda_cupti": ({"include/cupti.h": b"h", "lib/libcupti.so.2025.3.1": b"elf",
                    "lib/libcheckpoint.so": b"elf"},
                   (("lib/libcupti.so.13", "libcupti.so.2025.3.1"), ("lib/libcupti.so", "libcupti.so.13"))),
    "cuda_nvml_dev": ({"include/nvml.h": b"h"}, ()),
    "cuda_nvtx": ({"include/nvtx3/nvToolsExt.h": b"h", "lib/libnvtx3interop.so.1.1.0": b"elf"},
                  (("lib/libnvtx3interop.so.1", "libnvtx3interop.so.1.1.0"),
                   ("lib/libnvtx3interop.so", "libnvtx3interop.so.1"))),
    "cuda_opencl": ({"include/CL/cl.h": b"h", "lib/libOpenCL.so.1.0.0": b"elf"},
                    (("lib/libOpenCL.so.1.0", "libOpenCL.so.1.0.0"),
                     ("lib/libOpenCL.so.1", "libOpenCL.so.1.0"), ("lib/libOpenCL.so", "libOpenCL.so.1"))),
    "cuda_profiler_api": ({"include/cuda_profiler_api.h": b"h"}, ()),
    "libcufile": ({"include/cufile.h": b"h", "lib/libcufile.so.1.15.1": b"elf"},
                  (("lib/libcufile.so.0", "libcufile.so.1.15.1"), ("lib/libcufile.so", "libcufile.so.0"))),
    "libnvptxcompiler": ({"include/nvPTXCompiler.h": b"h", "lib/libnvptxcompiler_static.a": b"a"}, ()),
    **{
        comp: ({f"include/{comp}.h": b"h", f"lib/{comp}.so.{version}": b"elf"},
               ((f"lib/{comp}.so.{version.split('.')[0]}", f"{comp}.so.{version}"),
                (f"lib/{comp}.so", f"{comp}.so.{version.split('.')[0]}")))
        for comp, version in (("libcublas", "13.1.0.3"), ("libcufft", "12.0.0.61"),
                              ("libcurand", "10.4.0.35"), ("libcusolver", "12.0.4.66"),
                              ("libcusparse", "12.6.3.3"), ("libnpp", "13.0.1.2"), ("libnvjpeg", "13.0.1.86"),
                              ("libnvjitlink", "13.0.88"), ("libnvfatbin", "13.0.85"))
    },
}  # fmt: skip
# CUDA 13.0.2's packages: 36 component packages, 3 config-common, 7 meta packages; cuDNN: 2 versions x 2 CUDA
# majors x 4 packages
CUDA_PACKAGES, CUDNN_PACKAGES = 36 + 3 + 7, 2 * 2 * 4
DRIVER_PACKAGES = 2 + 3  # the stand-ins, ubuntu2404 only: 580 and 590 (+ its pin package)
SUBLIBS = (
    "",
    "_adv",
    "_cnn",
    "_engines_precompiled",
    "_engines_runtime_compiled",
    "_graph",
    "_heuristic",
    "_ops",
)
HEADERS = ("", "_adv", "_backend", "_cnn", "_graph", "_ops", "_version")


def _cudnn_archive(root, version, major):
    short = ".".join(version.split(".")[:3])
    files, links = {}, []
    for sub in SUBLIBS:
        files[f"lib/libcudnn{sub}.so.{short}"] = f"elf {version}".encode()
        links += [
            (f"lib/libcudnn{sub}.so.9", f"libcudnn{sub}.so.{short}"),
            (f"lib/libcudnn{sub}.so", f"libcudnn{sub}.so.9"),
        ]
    for h in HEADERS:
        files[f"include/cudnn{h}.h"] = files[f"include/cudnn{h}_v9.h"] = f"/* {version} */".encode()
    top = f"cudnn-linux-x86_64-{version}_cuda{major}-archive"
    return _tar_xz(root / "cudnn" / "linux-x86_64" / f"{top}.tar.xz", top, files, links)


@pytest.fixture
def lab_dir(tmp_path, monkeypatch):
    """A lab state with a synthetic mirror: CUDA 13.0.2's components, cuDNN 9.14/9.28 for CUDA 12 and 13."""
    for module in (repo, lab_mirror):
        monkeypatch.setattr(module, "STATE", tmp_path / "lab")
    redist = tmp_path / "lab" / "mirror" / "cuda" / "redist"
    doc = {"release_date": "2025-09-27", "release_label": "13.0.2", "release_product": "cuda"}
    for comp, (_, version) in lab_mirror.CUDA_RELEASES["13.0.2"].items():
        files, links = CUDA_FILES[comp]
        top = f"{comp}-linux-x86_64-{version}-archive"
        entry = _tar_xz(redist / comp / "linux-x86_64" / f"{top}.tar.xz", top, files, links)
        doc[comp] = {"version": version, "linux-x86_64": entry}
    (redist / "redistrib_13.0.2.json").write_text(json.dumps(doc))
    cudnn = tmp_path / "lab" / "mirror" / "cudnn" / "redist"
    for version in repo.CUDNN_VERSIONS:
        entries = {f"cuda{m}": _cudnn_archive(cudnn, version, m) for m in repo.CUDNN_MAJORS}
        manifest = {"release_date": "2025-10-08", "cudnn": {"version": version, "linux-x86_64": entries}}
        (cudnn / f"redistrib_{lab_mirror.short(version)}.json").write_text(json.dumps(manifest))
    return tmp_path / "lab"


@pytest.fixture
def built(lab_dir):
    lines = []
    fingerprint = repo.build(log=lines.append)
    return lab_dir, fingerprint, lines


def _listing(deb):
    out = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
    return {
        line.split(None, 5)[5].split(" -> ")[0].lstrip(".").rstrip("/") or "/." for line in out.splitlines()
    }


def _field(deb, name):
    return subprocess.run(
        ["dpkg-deb", "-f", str(deb), name], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_cudnn_files_are_where_nvidias_packages_put_them(built):
    lab_dir, _, _ = built
    pool = lab_dir / "repo-build" / "pool"
    reference = {line for line in H200.read_text().splitlines() if line.startswith("/")}
    got = set()
    for name in ("libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"):
        got |= _listing(pool / f"{name}_9.14.0.64-1_amd64.deb") | {"/."}
    # exactly the H200's own list: dpkg -L of NVIDIA's three packages (files, links and directories)
    assert got == reference
    lib = pool / "libcudnn9-cuda-13_9.14.0.64-1_amd64.deb"
    for field, value in (("Depends", "zlib1g"), ("Provides", "libcudnn9"), ("Conflicts", "libcudnn9"),
                         ("Replaces", "libcudnn9"), ("Section", "multiverse/libs"), ("Source", "cudnn"),
                         ("Maintainer", "cudatools <cudatools@nvidia.com>")):  # fmt: skip
        assert _field(lib, field) == value
    dev = pool / "libcudnn9-dev-cuda-12_9.28.0.42-1_amd64.deb"
    assert (
        _field(dev, "Depends")
        == "libcudnn9-cuda-12 (= 9.28.0.42-1), libcudnn9-headers-cuda-12 (= 9.28.0.42-1)"
    )
    meta = pool / "cudnn9-cuda-13_9.28.0.42-1_amd64.deb"
    assert (
        _field(meta, "Depends") == "libcudnn9-cuda-13 (= 9.28.0.42-1), libcudnn9-dev-cuda-13 (= 9.28.0.42-1)"
    )


def test_cudnn_headers_package_has_no_maintainer_scripts_as_nvidias(built):
    # the H200's /var/lib/dpkg/info has only libcudnn9-headers-cuda-13.{list,md5sums}: no postinst, no
    # /usr/include/cudnn.h alternative (tests/gpu/evidence/h200-2026-12-01-repo)
    lab_dir, _, _ = built
    deb = lab_dir / "repo-build" / "pool" / "libcudnn9-headers-cuda-13_9.14.0.64-1_amd64.deb"
    out = subprocess.run(["dpkg-deb", "-I", str(deb)], capture_output=True, text=True, check=True).stdout
    assert "postinst" not in out and "prerm" not in out


def test_cuda_packages_have_nvidias_names_versions_and_layout(built):
    lab_dir, _, _ = built
    pool = lab_dir / "repo-build" / "pool"
    names = sorted(p.name for p in pool.glob("*.deb") if "cudnn" not in p.name and "0ubuntu1" not in p.name)
    assert len(names) == CUDA_PACKAGES
    assert {
        "cuda-cccl-13-0_13.0.85-1_amd64.deb",
        "cuda-crt-13-0_13.0.88-1_amd64.deb",
        "cuda-cudart-13-0_13.0.96-1_amd64.deb",
        "cuda-cudart-dev-13-0_13.0.96-1_amd64.deb",
        "cuda-nvcc-13-0_13.0.88-1_amd64.deb",
        "cuda-nvrtc-13-0_13.0.88-1_amd64.deb",
        "cuda-nvrtc-dev-13-0_13.0.88-1_amd64.deb",
        "cuda-toolkit-13-0-config-common_13.0.96-1_all.deb",
        "cuda-toolkit-13-0_13.0.2-1_amd64.deb",
        "cuda-toolkit-13-config-common_13.0.96-1_all.deb",
        "cuda-toolkit-config-common_13.0.96-1_all.deb",
        "libnvvm-13-0_13.0.88-1_amd64.deb",
        "libcublas-13-0_13.1.0.3-1_amd64.deb",
        "libcublas-dev-13-0_13.1.0.3-1_amd64.deb",
        "cuda-cupti-13-0_13.0.85-1_amd64.deb",
        "cuda-libraries-13-0_13.0.2-1_amd64.deb",
        "cuda-compiler-13-0_13.0.2-1_amd64.deb",
    } <= set(names)
    nvcc = _listing(pool / "cuda-nvcc-13-0_13.0.88-1_amd64.deb")
    assert {
        "/usr/local/cuda-13.0/bin/nvcc",
        "/usr/local/cuda-13.0/targets/x86_64-linux/include/fatbinary_section.h",
    } <= nvcc
    assert not [p for p in nvcc if "/crt/" in p or "/nvvm/" in p]  # cuda-crt-13-0's and libnvvm-13-0's
    cudart = _listing(pool / "cuda-cudart-13-0_13.0.96-1_amd64.deb")
    assert "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13.0.96" in cudart
    assert "/usr/local/cuda-13.0/lib64" in cudart
    assert "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so" not in cudart  # the -dev package's
    common = pool / "cuda-toolkit-config-common_13.0.96-1_all.deb"
    assert "/etc/ld.so.conf.d/000_cuda.conf" in _listing(common)
    assert "/etc/ld.so.conf.d/987_cuda-13.conf" in _listing(
        pool / "cuda-toolkit-13-config-common_13.0.96-1_all.deb"
    )
    control = subprocess.run(
        ["dpkg-deb", "-I", str(common), "conffiles"], capture_output=True, text=True, check=True
    )
    assert control.stdout == "/etc/ld.so.conf.d/000_cuda.conf\n"
    script = subprocess.run(
        ["dpkg-deb", "-I", str(pool / "cuda-toolkit-13-0-config-common_13.0.96-1_all.deb"), "postinst"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "update-alternatives --install /usr/local/cuda cuda /usr/local/cuda-13.0 130" in script
    assert "update-alternatives --install /usr/local/cuda-13 cuda-13 /usr/local/cuda-13.0 130" in script
    meta = pool / "cuda-toolkit-13-0_13.0.2-1_amd64.deb"
    assert "cuda-documentation-13-0 (no PyPI wheel)" in _field(meta, "Description")
    assert "cuda-compiler-13-0 (>= 13.0.2), cuda-libraries-13-0 (>= 13.0.2)" in _field(meta, "Depends")
    assert "cuda-nvcc-13-0" in _field(pool / "cuda-compiler-13-0_13.0.2-1_amd64.deb", "Depends")
    cublas = _listing(pool / "libcublas-13-0_13.1.0.3-1_amd64.deb")
    assert {
        "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublas.so.13.1.0.3",
        "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublas.so.13",
        "/usr/local/cuda-13.0/lib64",
    } <= cublas
    assert "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublas.so" not in cublas  # the -dev package's
    cublas_dev = _listing(pool / "libcublas-dev-13-0_13.1.0.3-1_amd64.deb")
    assert {
        "/usr/local/cuda-13.0/targets/x86_64-linux/include/libcublas.h",
        "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublas.so",
        "/usr/local/cuda-13.0/include",
    } <= cublas_dev


def test_repositories_are_flat_signed_and_in_nvidias_layout(built, tmp_path):
    lab_dir, fingerprint, _ = built
    assert (lab_dir / "repo-key" / "fingerprint").read_text().strip() == fingerprint
    for rdir in repo.REPO_DIRS:
        target = lab_dir / "mirror" / "cuda" / "repos" / rdir / "x86_64"
        key = target / repo_plan.KEYS[rdir][0]  # the key file name the roles fetch
        assert install_repo.key_fingerprints(key.read_bytes())[0] == fingerprint
        packages = (target / "Packages").read_bytes()
        assert gzip.decompress((target / "Packages.gz").read_bytes()) == packages
        release = (target / "Release").read_text()
        assert "Label: NVIDIA CUDA\n" in release
        assert f" {hashlib.sha256(packages).hexdigest()} {len(packages):>16} Packages\n" in release
        index = install_repo.parse_index(packages.decode())
        assert set(index["libcudnn9-cuda-13"]) == {"9.14.0.64-1", "9.28.0.42-1"}
        for name, versions in index.items():
            for version, fields in versions.items():
                deb = target / fields["Filename"]
                assert fields["Filename"].startswith("./")
                assert hashlib.sha256(deb.read_bytes()).hexdigest() == fields["SHA256"], (name, version)
        keyring = tmp_path / f"{rdir}.gpg"
        subprocess.run(["gpg", "--dearmor", "-o", str(keyring), str(key)], check=True, capture_output=True)
        for args in ([str(target / "InRelease")], [str(target / "Release.gpg"), str(target / "Release")]):
            cmd = ["gpgv", "--keyring", str(keyring), *args]
            res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            assert res.returncode == 0, res.stderr


def test_nothing_is_rebuilt_or_resigned_when_nothing_changed(built, monkeypatch):
    lab_dir, fingerprint, lines = built
    assert (
        sum(line.startswith("repo: built ") for line in lines)
        == CUDA_PACKAGES + CUDNN_PACKAGES + DRIVER_PACKAGES
    )
    target = lab_dir / "mirror" / "cuda" / "repos" / "debian13" / "x86_64"
    before = {p.name: p.read_bytes() for p in target.iterdir() if not p.name.endswith(".deb")}
    again = []
    assert repo.build(log=again.append) == fingerprint  # the key is made once per lab
    assert not [line for line in again if line.startswith(("repo: built ", "repo: made "))]
    assert "up to date" in again[-1]
    assert {p.name: p.read_bytes() for p in target.iterdir() if not p.name.endswith(".deb")} == before
    monkeypatch.setattr(debs, "FORMAT", debs.FORMAT + 1)  # a changed recipe: every package again
    third = []
    repo.build(log=third.append)
    assert (
        sum(line.startswith("repo: built ") for line in third)
        == CUDA_PACKAGES + CUDNN_PACKAGES + DRIVER_PACKAGES
    )


def test_a_missing_mirror_is_one_line_that_says_what_to_do(tmp_path, monkeypatch):
    for module in (repo, lab_mirror):
        monkeypatch.setattr(module, "STATE", tmp_path / "empty")
    with pytest.raises(LabError, match="run `python -m lab mirror build` first"):
        repo.build(log=lambda _line: None)


def test_the_key_file_names_are_the_ones_the_roles_fetch():
    wanted = {rdir: repo_plan.KEYS[rdir][0] for rdir in repo.REPO_DIRS}
    assert wanted == repo.KEY_FILES


def test_a_subset_builds_only_what_a_gpu_hosts_mirror_holds(lab_dir):
    # lab/gpuhost/mirror_from_host.py on the H200 gives CUDA 13.0.2 and only the host's cuDNN for CUDA 13
    for path in (lab_dir / "mirror" / "cudnn" / "redist").rglob("*cuda12-archive.tar.xz"):
        path.unlink()
    lines = []
    repo.build(log=lines.append, cudnn_versions=["9.14.0.64"], cudnn_majors=["13"], dists=["ubuntu2404"])
    repos = lab_dir / "mirror" / "cuda" / "repos"
    assert sorted(p.name for p in repos.iterdir()) == ["ubuntu2404"]
    packages = (repos / "ubuntu2404" / "x86_64" / "Packages").read_text()
    assert packages.count("Package: ") == CUDA_PACKAGES + 4
    assert "Package: libcudnn9-cuda-13\n" in packages and "-cuda-12\n" not in packages
    assert "Version: 9.28" not in packages
    assert "Package: nvidia-driver-cuda\n" not in packages  # a GPU host has a real driver: no stand-in


def test_a_subset_outside_the_recipe_is_refused_naming_it(lab_dir):
    with pytest.raises(LabError, match=r"CUDA major 11 not in the lab's recipe \(12, 13\)"):
        repo.build(log=lambda _line: None, cudnn_majors=["11"])


def test_the_driver_stand_ins_are_in_ubuntu2404_only_with_the_plans_names(built):
    """Issue 38 (Ubuntu-shaped hosts): what plan/driver/packages.py installs in a container from NVIDIA's
    repository (nvidia-driver-cuda, nvidia-persistenced; from R590 nvidia-driver-pinning-<branch> first), at
    the branches 580 and 590, each saying it is a stand-in; the pin package pins the branch."""
    lab_dir, _, _ = built
    repos = lab_dir / "mirror" / "cuda" / "repos"
    ubuntu = (repos / "ubuntu2404" / "x86_64" / "Packages").read_text()
    for name, version in (
        ("nvidia-driver-cuda", "580.105.08-0ubuntu1"),
        ("nvidia-driver-cuda", "590.48.01-0ubuntu1"),
        ("nvidia-persistenced", "590.48.01-0ubuntu1"),
        ("nvidia-driver-pinning-590", "590.48.01-0ubuntu1"),
    ):
        assert re.search(
            f"^Package: {name}\nSource: nvidia-graphics-drivers\nVersion: {version}\n", ubuntu, re.M
        ), name
    assert "nvidia-driver-pinning-580" not in ubuntu
    for rdir in ("debian12", "debian13"):
        assert "nvidia-driver-cuda" not in (repos / rdir / "x86_64" / "Packages").read_text()
    pin = _listing(lab_dir / "repo-build" / "pool" / "nvidia-driver-pinning-590_590.48.01-0ubuntu1_amd64.deb")
    assert "/etc/apt/preferences.d/nvidia-driver-pinning-590" in pin
    unit = _listing(lab_dir / "repo-build" / "pool" / "nvidia-persistenced_580.105.08-0ubuntu1_amd64.deb")
    assert "/usr/lib/systemd/system/nvidia-persistenced.service" in unit


# ---------------------------------------------------------------- sbsa (issue 39: Arm servers)


@pytest.fixture
def sbsa_lab(lab_dir):
    """The synthetic mirror with linux-sbsa archives of what lab/mirror.py SBSA_CUDA and SBSA_CUDNN name."""
    redist = lab_dir / "mirror" / "cuda" / "redist"
    manifest = redist / "redistrib_13.0.2.json"
    doc = json.loads(manifest.read_text())
    for comp in lab_mirror.SBSA_CUDA["13.0.2"]:
        files, links = CUDA_FILES[comp]
        top = f"{comp}-linux-sbsa-{doc[comp]['version']}-archive"
        doc[comp]["linux-sbsa"] = _tar_xz(redist / comp / "linux-sbsa" / f"{top}.tar.xz", top, files, links)
    manifest.write_text(json.dumps(doc))
    cudnn = lab_dir / "mirror" / "cudnn" / "redist"
    for version, majors in lab_mirror.SBSA_CUDNN:
        path = cudnn / f"redistrib_{lab_mirror.short(version)}.json"
        doc = json.loads(path.read_text())
        x86 = doc["cudnn"]["linux-x86_64"]
        doc["cudnn"]["linux-sbsa"] = {f"cuda{m}": x86[f"cuda{m}"] for m in majors}  # the same bytes will do
        path.write_text(json.dumps(doc))
    return lab_dir


def test_sbsa_repository_has_nvidias_arm_names_layout_and_signature(sbsa_lab, tmp_path):
    """NVIDIA's .../repos/<distro>/sbsa/: arm64 packages of the same names and versions, the toolkit under
    targets/sbsa-linux, cuDNN in /usr/lib/aarch64-linux-gnu; signed with the lab key like x86_64's."""
    lines = []
    fingerprint = repo.build_sbsa(log=lines.append)
    target = sbsa_lab / "mirror" / "cuda" / "repos" / "ubuntu2404" / "sbsa"
    index = install_repo.parse_index((target / "Packages").read_text())
    arches = {fields["Architecture"] for versions in index.values() for fields in versions.values()}
    assert arches == {"arm64", "all"}
    assert set(index["libcudnn9-cuda-13"]) == {"9.14.0.64-1"} and "libcudnn9-cuda-12" not in index
    assert {"cuda-toolkit-13-0", "cuda-nvcc-13-0", "libcublas-dev-13-0", "libcurand-13-0"} <= set(index)
    assert "libcufft-13-0" not in index  # not among the lab's linux-sbsa archives
    # the driver's stand-ins (NVIDIA's sbsa repositories carry the driver's packages too)
    assert set(index["nvidia-driver-cuda"]) == {"580.105.08-0ubuntu1", "590.48.01-0ubuntu1"}
    assert "nvidia-driver-pinning-590" in index
    pool = sbsa_lab / "repo-build" / "pool-sbsa"
    cublas = _listing(pool / "libcublas-13-0_13.1.0.3-1_arm64.deb")
    assert "/usr/local/cuda-13.0/targets/sbsa-linux/lib/libcublas.so.13" in cublas
    assert not [p for p in cublas if "x86_64" in p]
    nvcc = _listing(pool / "cuda-nvcc-13-0_13.0.88-1_arm64.deb")
    assert "/usr/local/cuda-13.0/targets/sbsa-linux/include/fatbinary_section.h" in nvcc
    cudnn = _listing(pool / "libcudnn9-cuda-13_9.14.0.64-1_arm64.deb")
    assert "/usr/lib/aarch64-linux-gnu/libcudnn.so.9" in cudnn
    headers = _listing(pool / "libcudnn9-headers-cuda-13_9.14.0.64-1_arm64.deb")
    assert "/usr/include/aarch64-linux-gnu/cudnn.h" in headers
    common = _listing(pool / "cuda-toolkit-config-common_13.0.96-1_all.deb")
    assert "/etc/ld.so.conf.d/000_cuda.conf" in common
    conf = subprocess.run(
        ["dpkg-deb", "--fsys-tarfile", str(pool / "cuda-toolkit-config-common_13.0.96-1_all.deb")],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(conf)) as tar:
        text = tar.extractfile("./etc/ld.so.conf.d/000_cuda.conf").read().decode()
    assert text == "/usr/local/cuda/targets/sbsa-linux/lib\n"
    meta = pool / "cuda-toolkit-13-0_13.0.2-1_arm64.deb"
    assert "cuda-compiler-13-0 (>= 13.0.2)" in _field(meta, "Depends")
    assert "libcufft-13-0 (not among the lab's linux-sbsa archives" in _field(
        pool / "cuda-libraries-13-0_13.0.2-1_arm64.deb", "Description"
    )
    # every dependency among the lab's packages is in the repository (apt resolves cuda-toolkit-13-0)
    for versions in index.values():
        for fields in versions.values():
            for dep in filter(None, fields.get("Depends", "").split(", ")):
                name = dep.split(" ")[0].split("|")[0]
                assert name in index or name == "zlib1g", (fields["Package"], dep)
    key = target / repo_plan.KEYS["ubuntu2404"][0]
    assert install_repo.key_fingerprints(key.read_bytes())[0] == fingerprint
    keyring = tmp_path / "sbsa.gpg"
    subprocess.run(["gpg", "--dearmor", "-o", str(keyring), str(key)], check=True, capture_output=True)
    cmd = ["gpgv", "--keyring", str(keyring), str(target / "InRelease")]
    res = subprocess.run(cmd, capture_output=True, check=False)
    assert res.returncode == 0, res.stderr
    assert "/{ubuntu2404}/sbsa, signed ubuntu2404" in lines[-1]


def test_sbsa_and_x86_64_repositories_leave_each_other_alone(sbsa_lab):
    """Two pools: building one architecture neither removes nor re-signs the other's packages, though
    config-common has the same file name in both (arch all, other contents)."""
    fingerprint = repo.build(log=lambda _line: None)
    repos = sbsa_lab / "mirror" / "cuda" / "repos"
    x86 = {p.name: p.read_bytes() for p in (repos / "ubuntu2404" / "x86_64").iterdir()}
    assert repo.build_sbsa(log=lambda _line: None) == fingerprint
    assert {p.name: p.read_bytes() for p in (repos / "ubuntu2404" / "x86_64").iterdir()} == x86
    sbsa = {p.name: p.read_bytes() for p in (repos / "ubuntu2404" / "sbsa").iterdir()}
    again = []
    repo.build(log=again.append)
    assert "up to date" in again[-1]
    assert {p.name: p.read_bytes() for p in (repos / "ubuntu2404" / "sbsa").iterdir()} == sbsa
    again = []
    repo.build_sbsa(log=again.append)
    assert "up to date" in again[-1] and not [line for line in again if line.startswith("repo: built ")]
    assert sorted(p.name for p in repos.iterdir()) == sorted(repo.REPO_DIRS)
    assert sorted(p.name for p in (repos / "ubuntu2404").iterdir()) == ["sbsa", "x86_64"]
    assert [p.name for p in (repos / "debian12").iterdir()] == ["x86_64"]


def test_sbsa_without_the_mirrors_sbsa_archives_says_what_to_run(lab_dir):
    with pytest.raises(LabError, match=r"no linux-sbsa cuda_.*run `python -m lab mirror sbsa`"):
        repo.build_sbsa(log=lambda _line: None)
