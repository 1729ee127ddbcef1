"""The built NVIDIA mirror (.lab/mirror), checked end to end. Needs `make lab`; see conftest."""

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

from lab import mirror as lab_mirror

pytestmark = pytest.mark.lab

# cudnnGetVersion() through ctypes: libcudnn.so.9 (a dispatcher) loads libcudnn_graph.so.9 from
# its own directory; no GPU or driver is needed.
GET_VERSION = """
import ctypes, sys
cudnn = ctypes.CDLL(sys.argv[1] + "/libcudnn.so.9")
cudnn.cudnnGetVersion.restype = ctypes.c_size_t
print(cudnn.cudnnGetVersion())
"""
ENTRY_KEYS = {"relative_path", "sha256", "md5", "size"}
TOP_KEYS = {"release_date", "release_label", "release_product"}


def _entries(doc):
    """(component, variant or None, entry) for every archive of a manifest."""
    for comp, value in doc.items():
        if comp in TOP_KEYS:
            continue
        platform = value["linux-x86_64"]
        if "relative_path" in platform:
            yield comp, None, platform
        else:
            for variant, entry in platform.items():
                yield comp, variant, entry


def _check_top(doc, product):
    assert set(doc) >= TOP_KEYS
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", doc["release_date"])
    assert doc["release_product"] == product
    for comp, value in doc.items():
        if comp in TOP_KEYS:
            continue
        assert {"name", "license", "license_path", "version", "linux-x86_64"} <= set(value), comp


def test_cudnn_manifest_schema(cudnn_manifests):
    assert len(cudnn_manifests) >= 2, "at least two cuDNN versions (upgrade/downgrade tests need them)"
    for path, doc in cudnn_manifests.items():
        _check_top(doc, "cudnn")
        comp = doc["cudnn"]
        assert path.name == f"redistrib_{doc['release_label']}.json"
        assert re.fullmatch(r"9\.\d+\.\d+\.\d+", comp["version"])
        assert comp["version"].startswith(doc["release_label"] + ".")
        assert comp["cuda_variant"] == ["12", "13"]
        assert set(comp["linux-x86_64"]) == {"cuda12", "cuda13"}
        for major in ("12", "13"):
            entry = comp["linux-x86_64"][f"cuda{major}"]
            assert set(entry) == ENTRY_KEYS
            assert entry["relative_path"] == (
                f"cudnn/linux-x86_64/cudnn-linux-x86_64-{comp['version']}_cuda{major}-archive.tar.xz"
            )


def test_cuda_manifest_schema(cuda_manifests):
    for path, doc in cuda_manifests.items():
        _check_top(doc, "cuda")
        assert path.name == f"redistrib_{doc['release_label']}.json"
        assert {"cuda_nvcc", "cuda_cudart", "cuda_nvrtc", "cuda_cccl"} <= set(doc)
        for comp, variant, entry in _entries(doc):
            assert variant is None
            assert set(entry) == ENTRY_KEYS
            version = doc[comp]["version"]
            assert (
                entry["relative_path"] == f"{comp}/linux-x86_64/{comp}-linux-x86_64-{version}-archive.tar.xz"
            )


def test_every_archive_matches_its_manifest(cudnn_manifests, cuda_manifests):
    checked = 0
    for path, doc in {**cudnn_manifests, **cuda_manifests}.items():
        for _, _, entry in _entries(doc):
            archive = path.parent / entry["relative_path"]
            sha, md5, size = hashlib.sha256(), hashlib.md5(), 0
            with open(archive, "rb") as fh:
                for block in iter(lambda fh=fh: fh.read(1 << 22), b""):
                    sha.update(block)
                    md5.update(block)
                    size += len(block)
            assert str(size) == entry["size"], archive
            assert sha.hexdigest() == entry["sha256"], archive
            assert md5.hexdigest() == entry["md5"], archive
            checked += 1
    assert checked >= 4 + 4


def _extract(archive, dest, wanted):
    """Stream the archive, extracting members whose path (below the top folder) matches."""
    with tarfile.open(archive, "r|xz") as tar:
        for member in tar:
            rel = member.name.partition("/")[2]
            if member.isdir() or wanted(rel):
                tar.extract(member, dest, filter="tar")


def test_cudnn_archive_gives_libcudnn_with_the_manifest_version(cudnn_manifests, tmp_path):
    for path, doc in cudnn_manifests.items():
        comp = doc["cudnn"]
        entry = comp["linux-x86_64"]["cuda13"]
        top = entry["relative_path"].rsplit("/", 1)[1].removesuffix(".tar.xz")
        dest = tmp_path / doc["release_label"]
        _extract(
            path.parent / entry["relative_path"],
            dest,
            lambda rel: (
                rel in ("LICENSE", "include/cudnn_version.h")
                or rel.startswith(("lib/libcudnn.so", "lib/libcudnn_graph.so"))
            ),
        )
        lib = dest / top / "lib"
        assert (dest / top / "LICENSE").stat().st_size > 0
        assert (lib / "libcudnn.so").resolve() == (lib / f"libcudnn.so.{doc['release_label']}").resolve()
        assert (lib / "libcudnn.so.9").is_symlink()
        # one process per version: both libraries have the soname libcudnn.so.9
        res = subprocess.run(
            [sys.executable, "-c", GET_VERSION, str(lib)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert res.returncode == 0, res.stderr
        got = int(res.stdout)
        major, minor, patch = (int(x) for x in comp["version"].split(".")[:3])
        assert got == major * 10000 + minor * 100 + patch, (path.name, got)


def test_cudnn_archive_has_every_sublibrary_linked(cudnn_manifests):
    path, doc = max(cudnn_manifests.items())
    entry = doc["cudnn"]["linux-x86_64"]["cuda13"]
    with tarfile.open(path.parent / entry["relative_path"], "r|xz") as tar:
        libs = {m.name.rsplit("/", 1)[1]: m for m in tar if "/lib/" in m.name}
    label = doc["release_label"]
    real = {n for n, m in libs.items() if m.isfile() and n.endswith(f".so.{label}")}
    assert {"libcudnn.so." + label, "libcudnn_ops.so." + label, "libcudnn_graph.so." + label} <= real
    for name in real:
        stem = name.removesuffix(f".so.{label}")
        assert libs[f"{stem}.so.9"].linkname == name
        assert libs[f"{stem}.so"].linkname == f"{stem}.so.9"


def test_nvcc_compiles_a_kernel_to_an_sm90_cubin(cuda_manifests, tmp_path):
    assert shutil.which("g++"), "nvcc needs a host compiler: apt-get install g++"
    path, doc = max(cuda_manifests.items())
    root = tmp_path / "cuda"
    for comp in ("cuda_nvcc", "cuda_cudart", "cuda_cccl"):
        entry = doc[comp]["linux-x86_64"]
        unpack = tmp_path / comp
        with tarfile.open(path.parent / entry["relative_path"], "r|xz") as tar:
            tar.extractall(unpack, filter="tar")
        (top,) = unpack.iterdir()
        shutil.copytree(top, root, symlinks=True, dirs_exist_ok=True)
    source = tmp_path / "kernel.cu"
    source.write_text("__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }\n")
    cubin = tmp_path / "kernel.cubin"
    res = subprocess.run(
        [str(root / "bin" / "nvcc"), "-cubin", "-arch=sm_90", "-o", str(cubin), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    head = cubin.read_bytes()[:20]
    assert head[:4] == b"\x7fELF"
    assert int.from_bytes(head[18:20], "little") == 190  # EM_CUDA
    version = subprocess.run(
        [str(root / "bin" / "nvcc"), "--version"], capture_output=True, text=True, check=True
    ).stdout
    assert "release " + ".".join(doc["cuda_nvcc"]["version"].split(".")[:2]) in version


def test_wheels_directory_is_a_find_links_index(mirror, cudnn_manifests):
    wheels = {p.name for p in (mirror / "wheels").glob("*.whl")}
    for doc in cudnn_manifests.values():
        version = doc["cudnn"]["version"]
        for major in ("12", "13"):
            assert any(w.startswith(f"nvidia_cudnn_cu{major}-{version}-") for w in wheels), (major, version)
    json.dumps(sorted(wheels))


# A host program against the mirror's cuBLAS, cuFFT and cuRAND: headers, the dev links and the libraries'
# sonames as NVIDIA's archives have them. The version calls need no GPU and no driver.
LIBRARIES_PROGRAM = r"""
#include <cstdio>
#include <cublas_v2.h>
#include <cufft.h>
#include <curand.h>
int main() {
    int major = 0, minor = 0, patch = 0, fft = 0, rand = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    cufftGetVersion(&fft);
    curandGetVersion(&rand);
    std::printf("%d.%d.%d %d %d\n", major, minor, patch, fft, rand);
    return 0;
}
"""


def test_a_program_links_cublas_cufft_and_curand_from_the_mirror(cuda_manifests, tmp_path):
    assert shutil.which("g++"), "the test builds a host program: apt-get install g++"
    path, doc = max((p, d) for p, d in cuda_manifests.items() if "libcublas" in d)
    root = tmp_path / "cuda"
    for comp in ("cuda_cudart", "cuda_crt", "cuda_cccl", "libcublas", "libcufft", "libcurand"):
        unpack = tmp_path / comp
        with tarfile.open(path.parent / doc[comp]["linux-x86_64"]["relative_path"], "r|xz") as tar:
            tar.extractall(unpack, filter="tar")
        (top,) = unpack.iterdir()
        shutil.copytree(top, root, symlinks=True, dirs_exist_ok=True)
    source, program = tmp_path / "libs.cpp", tmp_path / "libs"
    source.write_text(LIBRARIES_PROGRAM)
    lib = root / "lib"
    build = [
        # CUDA 13 keeps CCCL (<nv/target>, which cuda_fp16.h includes) in include/cccl, which nvcc adds itself
        "g++", "-o", str(program), str(source), f"-I{root / 'include'}", f"-I{root / 'include' / 'cccl'}",
        f"-L{lib}",
        "-lcublas", "-lcufft", "-lcurand", f"-Wl,-rpath,{lib}",
    ]  # fmt: skip
    res = subprocess.run(build, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    res = subprocess.run([str(program)], capture_output=True, text=True, check=False, timeout=120)
    assert res.returncode == 0, res.stderr
    cublas, fft, rand = res.stdout.split()
    assert doc["libcublas"]["version"].startswith(cublas + ".")  # 13.1.0 of 13.1.0.3
    major, minor, patch = (int(x) for x in doc["libcufft"]["version"].split(".")[:3])
    assert int(fft) == major * 1000 + minor * 100 + patch  # CUFFT_VERSION: 12000 for 12.0.0
    major, minor, patch = (int(x) for x in doc["libcurand"]["version"].split(".")[:3])
    assert int(rand) == major * 1000 + minor * 100 + patch  # CURAND_VERSION: 10400 for 10.4.0


def test_every_component_of_the_full_release_is_in_its_manifest(cuda_manifests):
    for path, doc in cuda_manifests.items():
        wanted = lab_mirror.CUDA_RELEASES.get(doc["release_label"])
        if wanted is None:
            continue
        assert set(wanted) <= set(doc), path.name
        for comp, (title, version) in wanted.items():
            assert (doc[comp]["name"], doc[comp]["version"]) == (title, version), comp
