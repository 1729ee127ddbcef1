"""Helpers the molecule scenarios' testinfra tests share (molecule/*/tests; molecule/conftest.py puts this
folder on sys.path: the tests run in pytest's importlib mode, which adds none).

Plain functions of testinfra's `host`: no fixtures, no assertions about a scenario's own expectations beyond
what every caller checks the same way.
"""

import json
import shlex
from pathlib import Path

# The cuda_toolkit role's program that calls cuBLAS and cuRAND (its verify builds the same file).
CUDA_LIBS = Path(__file__).resolve().parents[1] / "roles" / "cuda_toolkit" / "files" / "cuda_libs.cu"

# Runs on the host: load a libcudnn (a soname or a path) and report cudnnGetVersion() and the file mapped.
CUDNN_LOADED = """
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.cudnnGetVersion.restype = ctypes.c_size_t
path = [l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn.so' in l][0]
print(json.dumps({'version': lib.cudnnGetVersion(), 'path': path}))
"""

# A CUDA kernel nvcc must compile for sm_90 (no GPU needed to build it).
KERNEL = r"""
__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }
int main() { return 0; }
"""


def py(host, script, *args):
    """Run a Python script on the host with python3 -c and its arguments; its stdout."""
    return host.check_output(" ".join(["python3", "-c", shlex.quote(script), *map(shlex.quote, args)]))


def cudnn_loaded(host, lib="libcudnn.so.9"):
    """What a program gets for `lib`: {'version': cudnnGetVersion(), 'path': the library mapped}."""
    return json.loads(py(host, CUDNN_LOADED, lib))


def nvidia_facts(host, subset, check=False):
    """gpufleet.nvidia.nvidia_facts on the host (through ansible): its ansible_facts.nvidia."""
    result = host.ansible("gpufleet.nvidia.nvidia_facts", f"gather_subset={subset}", check=check)
    assert "failed" not in result, result
    return result["ansible_facts"]["nvidia"]


def dpkg_status(host, names):
    """{package: [version, status]} of the named packages, from dpkg-query."""
    fmt = "${Package}\\t${Version}\\t${Status}\\n"
    out = host.check_output(f"dpkg-query -W -f '{fmt}' {' '.join(names)}")
    return {line.split("\t")[0]: line.split("\t")[1:] for line in out.splitlines()}


def nvcc_builds_sm90(host, nvcc, workdir):
    """`nvcc` builds KERNEL into an sm_90 cubin and into a program linked to the shared cudart; the program's
    ldd output (which libcudart it finds is the caller's to check)."""
    host.check_output(f"mkdir -p {workdir} && printf '%s' {shlex.quote(KERNEL)} > {workdir}/k.cu")
    host.check_output(f"{nvcc} -arch=sm_90 -cubin -o {workdir}/k.cubin {workdir}/k.cu")
    assert host.check_output(f"od -An -c -N4 {workdir}/k.cubin").replace(" ", "") == "177ELF"
    # the ELF e_flags of a cubin carry the SM number (90 = 0x5a): in the low byte (older ABI) or the next one
    flags = int(host.check_output(f"od -An -tu4 -j48 -N4 {workdir}/k.cubin").strip())
    assert 90 in (flags & 0xFF, (flags >> 8) & 0xFF), hex(flags)
    host.check_output(f"{nvcc} -arch=sm_90 -cudart shared -o {workdir}/k {workdir}/k.cu")
    return host.check_output(f"ldd {workdir}/k")


def cuda_libraries_build(host, nvcc, workdir):
    """`nvcc` builds the cuda_toolkit role's library program (CUDA_LIBS: cublasSgemm and cuRAND's uniform
    generator) against the toolkit's libcublas and libcurand (no GPU needed to build it); the program's ldd
    output (which libraries it finds is the caller's to check)."""
    source = CUDA_LIBS.read_text(encoding="utf-8")
    host.check_output(f"mkdir -p {workdir} && printf '%s' {shlex.quote(source)} > {workdir}/cuda_libs.cu")
    lib = nvcc.rsplit("/bin/", 1)[0] + "/lib64"
    host.check_output(
        f"{nvcc} -DGPUFLEET_CUBLAS -DGPUFLEET_CURAND -o {workdir}/libs {workdir}/cuda_libs.cu "
        f"-L{lib} -lcublas -lcurand"
    )
    return host.check_output(f"ldd {workdir}/libs")
