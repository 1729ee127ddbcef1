"""The built lab repository (.lab/mirror/cuda/repos), checked end to end. Needs `make lab`; see conftest."""

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
from ansible_collections.gpufleet.nvidia.plugins.module_utils.install import repo as install_repo
from ansible_collections.gpufleet.nvidia.plugins.module_utils.plan import repo as repo_plan

from lab import repo

pytestmark = pytest.mark.lab
H200 = Path(__file__).resolve().parents[2] / "data" / "h200-ubuntu2404" / "dpkg-L-libcudnn9-cuda-13.txt"


@pytest.fixture(scope="module")
def repos(mirror):
    where = mirror / "cuda" / "repos"
    if not (where / "debian12" / "x86_64" / "InRelease").exists() or not shutil.which("gpgv"):
        pytest.skip(f"no lab repository in {where} (or no gpgv): run `make lab` (python -m lab up)")
    return where


@pytest.mark.parametrize("rdir", repo.REPO_DIRS)
def test_signed_with_the_lab_key_under_nvidias_key_file_name(repos, rdir, tmp_path):
    target = repos / rdir / "x86_64"
    key = target / repo_plan.KEYS[rdir][0]
    fingerprint = (repo.key_dir() / "fingerprint").read_text().strip()
    assert install_repo.key_fingerprints(key.read_bytes())[0] == fingerprint
    keyring = tmp_path / "k.gpg"
    subprocess.run(["gpg", "--dearmor", "-o", str(keyring), str(key)], check=True, capture_output=True)
    for args in ([str(target / "InRelease")], [str(target / "Release.gpg"), str(target / "Release")]):
        res = subprocess.run(["gpgv", "--keyring", str(keyring), *args], capture_output=True, check=False)
        assert res.returncode == 0, res.stderr
    packages = (target / "Packages").read_bytes()
    assert f" {hashlib.sha256(packages).hexdigest()} " in (target / "Release").read_text()
    index = install_repo.parse_index(packages.decode())
    assert set(index["libcudnn9-cuda-13"]) == {"9.14.0.64-1", "9.28.0.42-1"}
    assert set(index["cuda-nvcc-13-0"]) == {"13.0.88-1"}
    for versions in index.values():
        for fields in versions.values():
            assert int(fields["Size"]) == (target / fields["Filename"]).stat().st_size


def test_the_cudnn_packages_hold_exactly_the_h200s_file_list(repos):
    target = repos / "ubuntu2404" / "x86_64"
    got = set()
    for name in ("libcudnn9-cuda-13", "libcudnn9-dev-cuda-13", "libcudnn9-headers-cuda-13"):
        deb = target / f"{name}_9.14.0.64-1_amd64.deb"
        out = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True, check=True).stdout
        got |= {
            line.split(None, 5)[5].split(" -> ")[0].lstrip(".").rstrip("/") or "/."
            for line in out.splitlines()
        }
    assert got == {line for line in H200.read_text().splitlines() if line.startswith("/")}


H100 = Path(__file__).resolve().parents[2] / "data" / "h100-ubuntu2404-cuda13" / "dpkg-L"


def test_the_cuda_packages_hold_nvidias_files_and_every_shared_library(repos):
    """Each CUDA 13.0 package built from the wheels holds a subset of NVIDIA's own package (the H100's
    dpkg -L) and every shared library NVIDIA's has: the names and links a program loads (libcublas.so.13...).
    The config-common packages are lab/repo.py's own recipe (tests/unit/lab/test_repo.py)."""
    target = repos / "ubuntu2404" / "x86_64"
    index = install_repo.parse_index((target / "Packages").read_text())
    checked = 0
    for name, versions in index.items():
        if "cudnn" in name or name.endswith("config-common") or not (H100 / f"{name}.list").exists():
            continue
        (fields,) = versions.values()
        out = subprocess.run(
            ["dpkg-deb", "-c", str(target / fields["Filename"])], capture_output=True, text=True, check=True
        ).stdout
        got = {
            line.split(None, 5)[5].split(" -> ")[0].lstrip(".").rstrip("/") or "/."
            for line in out.splitlines()
        }
        nvidia = {line for line in (H100 / f"{name}.list").read_text().splitlines() if line}
        assert got <= nvidia, (name, sorted(got - nvidia))
        shared = {
            p for p in nvidia if ".so" in p.rsplit("/", 1)[-1] and "/stubs/" not in p and "sanitizer" not in p
        }
        assert shared <= got, (name, sorted(shared - got))
        checked += 1
    assert checked >= 40
