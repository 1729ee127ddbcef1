"""Helpers for the GPU verify tests: they run on any testinfra host (molecule's containers through
the ansible backend, or a bare GPU server with `pytest --hosts=local:// tests/gpu`).

Environment (read on the machine running pytest):
  GPUFLEET_EXPECT_CUDNN   the cuDNN version that must be loaded (9.14.0.64, 9.14.0 or 9.14)
  GPUFLEET_EXPECT_GPU     a part of the GPU name that must be seen (e.g. H200); optional
  GPUFLEET_NVCC           nvcc to use on the target (default: /usr/local/cuda/bin/nvcc, PATH, newest cuda-*)
  GPUFLEET_CUDNN_HOME     cuDNN tree on the target (include/ + lib/); default: the first of the usual places
  GPUFLEET_CUBLAS_HOME    the toolkit whose cuBLAS and cuRAND to build against (include/ + lib64/ or lib/);
                          default: nvcc's own toolkit, then the usual places (tests/gpu/README.md)
"""

import os
import shlex
import sys

import pytest

# pytest imports test files with --import-mode=importlib (pyproject.toml), which puts no test folder on
# sys.path: the helpers module beside this file is made importable here, for conftest and test_gpu.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpuhelpers import CUBLAS_PLACES, CUDNN_PLACES, CUDNN_PREFIX, must, sh


@pytest.fixture(scope="module")
def workdir(host):
    """A fresh folder on the target, removed afterwards."""
    path = must(sh(host, "mktemp -d /tmp/gpufleet-gpu-test.XXXXXX"), "mktemp").strip()
    yield path
    sh(host, f"rm -rf {shlex.quote(path)}")


@pytest.fixture(scope="module")
def gpus(host):
    """[{index, name, compute_cap, driver_version, memory_mib}] from nvidia-smi on the target."""
    fields = "index,name,compute_cap,driver_version,memory.total"
    out = must(
        sh(host, f"nvidia-smi --query-gpu={fields} --format=csv,noheader,nounits"),
        "nvidia-smi --query-gpu (is the GPU passed into this host/container?)",
    )
    rows = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        assert len(parts) == 5, f"unexpected nvidia-smi line: {line!r}"
        rows.append(
            {
                "index": int(parts[0]),
                "name": parts[1],
                "compute_cap": parts[2],
                "driver_version": parts[3],
                "memory_mib": int(parts[4]),
            }
        )
    assert rows, "nvidia-smi lists no GPU"
    return rows


@pytest.fixture(scope="module")
def nvcc(host):
    wanted = os.environ.get("GPUFLEET_NVCC", "")
    script = (
        'for c in "$0" /usr/local/cuda/bin/nvcc "$(command -v nvcc 2>/dev/null)" '
        "$(ls -d /usr/local/cuda-*/bin/nvcc 2>/dev/null | sort -V -r); do "
        '[ -n "$c" ] && [ -x "$c" ] && { echo "$c"; exit 0; }; done; exit 1'
    )
    res = host.run("/bin/sh -c %s %s", script, wanted)
    assert res.rc == 0, "no nvcc on the target (looked at $GPUFLEET_NVCC, /usr/local/cuda/bin, PATH, cuda-*)"
    path = res.stdout.strip()
    version = must(sh(host, f"{shlex.quote(path)} --version"), "nvcc --version")
    assert "Cuda compilation tools" in version
    return path


@pytest.fixture(scope="module")
def cudnn_paths(host):
    """(include dir, lib dir, library file name) of the cuDNN to build against on the target."""
    home = os.environ.get("GPUFLEET_CUDNN_HOME")
    if home:
        places = ((f"{home}/include", f"{home}/lib"),)
    else:
        trees = sh(
            host, f"ls -d {CUDNN_PREFIX}/current-cuda* {CUDNN_PREFIX}/current 2>/dev/null"
        ).stdout.split()
        places = tuple((f"{t}/include", f"{t}/lib") for t in trees) + CUDNN_PLACES
    for inc, lib in places:
        if not host.file(f"{inc}/cudnn_version.h").exists:
            continue
        listing = sh(host, f"ls -1 {shlex.quote(lib)} 2>/dev/null | grep -E '^libcudnn\\.so(\\.[0-9]+)*$'")
        names = sorted(listing.stdout.split(), key=lambda n: (n.count("."), n))
        if names:
            return inc, lib, names[0]
    tried = ", ".join(f"{i} + {lib}" for i, lib in places)
    raise AssertionError(f"no cuDNN (cudnn_version.h + libcudnn.so*) on the target; tried {tried}")


@pytest.fixture(scope="module")
def cuda_libraries(host, nvcc):
    """(include dir, lib dir) where the target's cuBLAS and cuRAND are (cublas_v2.h, curand.h, libcublas.so,
    libcurand.so), found the way cudnn_paths finds cuDNN: $GPUFLEET_CUBLAS_HOME, nvcc's own toolkit, then the
    usual places."""
    home = os.environ.get("GPUFLEET_CUBLAS_HOME")
    cuda = nvcc.rsplit("/bin/", 1)[0]
    if home:
        places = ((f"{home}/include", f"{home}/lib64"), (f"{home}/include", f"{home}/lib"))
    else:
        places = ((f"{cuda}/include", f"{cuda}/lib64"), *CUBLAS_PLACES)
    for inc, lib in places:
        if not all(host.file(f"{inc}/{h}").exists for h in ("cublas_v2.h", "curand.h")):
            continue
        if all(host.file(f"{lib}/{so}").exists for so in ("libcublas.so", "libcurand.so")):
            return inc, lib
    tried = ", ".join(f"{i} + {lib}" for i, lib in places)
    raise AssertionError(
        f"no cuBLAS and cuRAND (headers + libcublas.so, libcurand.so) on the target; tried {tried}"
    )
