"""The GPU works on the target: seen, reported, computes (CUDA kernel, cuDNN convolution), right cuDNN.

Targets: molecule/gpu's containers (ansible backend) or a bare GPU server:
    GPUFLEET_EXPECT_CUDNN=9.14.0.64 pytest -p no:cacheprovider --hosts=local:// tests/gpu
"""

import json
import os
import re
import shlex
import subprocess
import sys

import pytest
from gpuhelpers import (
    CUDA_LIBS,
    PROJECT,
    SRC,
    expected_cudnn,
    gencode_flags,
    must,
    parse_result,
    put,
    sh,
    sm_targets,
)


# --------------------------------------------------------------------------- seen
def test_nvidia_smi_sees_the_gpu(host, gpus):
    listing = must(sh(host, "nvidia-smi -L"), "nvidia-smi -L").strip().splitlines()
    assert len([line for line in listing if line.startswith("GPU ")]) == len(gpus), listing
    for gpu in gpus:
        assert gpu["name"].startswith("NVIDIA"), gpu
        assert re.match(r"^\d+\.\d+(\.\d+)?$", gpu["driver_version"]), gpu
        assert gpu["memory_mib"] > 0, gpu
    wanted = os.environ.get("GPUFLEET_EXPECT_GPU")
    if wanted:
        assert any(wanted in gpu["name"] for gpu in gpus), f"no GPU named like {wanted!r}: {gpus}"


# --------------------------------------------------------------------------- reported
def _facts_through_ansible(host):
    result = host.ansible("gpufleet.nvidia.nvidia_facts", "gather_subset=gpu,driver", check=False)
    return result["ansible_facts"]["nvidia"]


def _facts_local(tmp_path):
    """Run the module file with this Python, the checkout importable as gpufleet.nvidia."""
    module = PROJECT / "plugins" / "modules" / "nvidia_facts.py"
    assert module.is_file(), f"{module} is missing"
    coll = tmp_path / "collections" / "ansible_collections" / "gpufleet"
    coll.mkdir(parents=True)
    (coll / "nvidia").symlink_to(PROJECT)
    args = tmp_path / "args.json"
    args.write_text(
        json.dumps({"ANSIBLE_MODULE_ARGS": {"gather_subset": ["gpu", "driver"]}}), encoding="utf-8"
    )
    paths = [str(tmp_path / "collections")] + [
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), LC_ALL="C")
    res = subprocess.run(
        [sys.executable, str(module), str(args)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert res.returncode == 0, f"nvidia_facts failed (rc={res.returncode}):\n{res.stdout}\n{res.stderr}"
    return json.loads(res.stdout)["ansible_facts"]["nvidia"]


def test_nvidia_facts_reports_the_gpu(host, gpus, tmp_path):
    backend = host.backend.NAME
    if backend == "ansible":
        facts = _facts_through_ansible(host)
    elif backend == "local":
        facts = _facts_local(tmp_path)
    else:
        pytest.skip(f"nvidia_facts runs through the ansible or local backend only, not {backend}")
    print({k: facts["driver"].get(k) for k in ("version", "branch", "kernel_module")}, facts.get("host"))
    for seen in facts["gpus"]:
        print({k: seen.get(k) for k in ("index", "name", "architecture", "compute_capability", "memory_mib")})
    assert facts["gpu_count"] == len(gpus), facts["gpus"]
    by_index = {g["index"]: g for g in facts["gpus"]}
    for gpu in gpus:
        seen = by_index.get(gpu["index"])
        assert seen, f"nvidia_facts does not list GPU {gpu['index']}: {facts['gpus']}"
        assert seen["name"] == gpu["name"]
        assert seen["compute_capability"] == gpu["compute_cap"]
        assert seen["memory_mib"] == gpu["memory_mib"]
    assert facts["driver"]["version"] == gpus[0]["driver_version"]
    assert facts["driver"]["branch"] == gpus[0]["driver_version"].split(".")[0]


# --------------------------------------------------------------------------- computes
@pytest.fixture(scope="module")
def saxpy_run(host, gpus, nvcc, workdir):
    src, exe = f"{workdir}/saxpy.cu", f"{workdir}/saxpy"
    put(host, src, (SRC / "saxpy.cu").read_text(encoding="utf-8"))
    must(sh(host, f"{shlex.quote(nvcc)} {gencode_flags(gpus)} -o {exe} {src}"), "nvcc saxpy.cu")
    res = sh(host, f"CUDA_VISIBLE_DEVICES=0 {exe}")
    return exe, res


def test_cuda_kernel_built_for_the_gpu_runs_and_is_right(host, gpus, nvcc, saxpy_run):
    exe, res = saxpy_run
    print(res.stdout)
    assert res.rc == 0, f"saxpy rc={res.rc}: {res.stdout}{res.stderr}"
    data = parse_result(res.stdout.strip().splitlines()[-1])
    assert data["status"] == "ok", res.stdout
    assert data["bad"] == "0"
    assert float(data["max_err"]) <= 1e-3
    assert data["cc"] == gpus[0]["compute_cap"], (data, gpus[0])
    assert data["device"] == gpus[0]["name"]
    # the binary holds machine code for exactly the GPUs' architectures, and no PTX
    cuobjdump = nvcc.rsplit("/", 1)[0] + "/cuobjdump"
    if host.file(cuobjdump).exists:
        elves = must(sh(host, f"{cuobjdump} --list-elf {exe}"), "cuobjdump --list-elf")
        archs = sorted(set(re.findall(r"sm_(\d+)", elves)))
        assert archs == sorted(sm_targets(gpus)), elves
        ptx = sh(host, f"{cuobjdump} --list-ptx {exe}")
        assert ".ptx" not in ptx.stdout, ptx.stdout


@pytest.fixture(scope="module")
def cuda_libraries_run(host, gpus, nvcc, cuda_libraries, workdir):
    """The cuda_toolkit role's own library program (its verify builds the same file), built for the GPUs'
    architectures against the target's cuBLAS and cuRAND, and run."""
    inc, lib = cuda_libraries
    src, exe = f"{workdir}/cuda_libs.cu", f"{workdir}/cuda_libs"
    put(host, src, CUDA_LIBS.read_text(encoding="utf-8"))
    cmd = (
        f"{shlex.quote(nvcc)} {gencode_flags(gpus)} -DGPUFLEET_CUBLAS -DGPUFLEET_CURAND -I{shlex.quote(inc)} "
        f"-L{shlex.quote(lib)} -Xlinker -rpath={shlex.quote(lib)} -o {exe} {src} -lcublas -lcurand"
    )
    must(sh(host, cmd), "nvcc cuda_libs.cu")
    res = sh(host, f"CUDA_VISIBLE_DEVICES=0 {exe}")
    ldd = sh(host, f"ldd {exe}").stdout
    print(f"cuBLAS and cuRAND from {inc} + {lib}: {res.stdout}")
    assert res.rc == 0, f"cuda_libs rc={res.rc} (from {inc} + {lib}): {res.stdout}{res.stderr}"
    return parse_result(res.stdout.strip().splitlines()[-1]), ldd, cuda_libraries


def test_cublas_and_curand_compute_the_right_results_on_the_gpu(cuda_libraries_run):
    """Issue 36: a program that links cuBLAS (cublasSgemm, checked against the product computed on the
    host) and cuRAND (4096 uniform floats in (0, 1], mean near 0.5) runs on the GPU against the toolkit's
    libraries."""
    data, ldd, paths = cuda_libraries_run
    assert data["status"] == "ok", (data, paths)
    assert (data["cublas"], data["cublas_bad"]) == ("ok", "0"), data
    assert (data["curand"], data["curand_outside"]) == ("ok", "0"), data
    assert 0.45 <= float(data["curand_mean"]) <= 0.55, data
    assert int(data["cublas_version"]) > 0 and int(data["curand_version"]) > 0, data
    for name in ("libcublas.so", "libcurand.so"):
        found = [line for line in ldd.splitlines() if line.strip().startswith(name)]
        assert found and "not found" not in found[0], ldd


@pytest.fixture(scope="module")
def cudnn_run(host, gpus, nvcc, cudnn_paths, workdir):
    inc, lib, libname = cudnn_paths
    src, exe = f"{workdir}/cudnn_conv.cu", f"{workdir}/cudnn_conv"
    put(host, src, (SRC / "cudnn_conv.cu").read_text(encoding="utf-8"))
    link = "-lcudnn" if libname == "libcudnn.so" else f"-l:{libname}"
    cmd = (
        f"{shlex.quote(nvcc)} {gencode_flags(gpus)} -I{shlex.quote(inc)} -L{shlex.quote(lib)} "
        f"-Xlinker -rpath={shlex.quote(lib)} -o {exe} {src} {link}"
    )
    must(sh(host, cmd), "nvcc cudnn_conv.cu")
    res = sh(host, f"CUDA_VISIBLE_DEVICES=0 {exe}")
    print(f"cuDNN from {inc} + {lib}/{libname}: {res.stdout}")
    assert res.rc == 0, f"cudnn_conv rc={res.rc} (cuDNN from {inc} + {lib}): {res.stdout}{res.stderr}"
    return parse_result(res.stdout.strip().splitlines()[-1]), cudnn_paths


def test_cudnn_convolution_matches_the_cpu_reference(cudnn_run):
    data, paths = cudnn_run
    assert data["status"] == "ok", (data, paths)
    out = [float(v) for v in data["out"].strip("[]").split(",")]
    ref = [float(v) for v in data["ref"].strip("[]").split(",")]
    assert len(out) == len(ref) == 64
    assert any(v != 0 for v in ref)
    assert max(abs(a - b) for a, b in zip(out, ref)) <= 1e-3


def test_cudnn_version_is_the_requested_one(cudnn_run):
    data, paths = cudnn_run
    loaded, header = int(data["version"]), int(data["header"])
    assert loaded == header, f"libcudnn reports {loaded} but its header {paths[0]} says {header}"
    expected = expected_cudnn()
    if expected is None:
        pytest.skip(f"GPUFLEET_EXPECT_CUDNN not set (cuDNN loaded: {loaded}); set it to check the version")
    text, number, with_patch = expected
    got = loaded if with_patch else loaded - loaded % 100
    assert got == number, f"cudnnGetVersion()={loaded}, expected {text} ({number}); cuDNN from {paths}"
