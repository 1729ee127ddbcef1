"""Plain helpers of the GPU verify tests (fixtures are in conftest.py)."""

import base64
import os
import re
import shlex
from pathlib import Path

SRC = Path(__file__).resolve().parent / "src"
PROJECT = Path(__file__).resolve().parents[2]
# The cuda_toolkit role's program that calls cuBLAS (cublasSgemm) and cuRAND, checked on the host: the role's
# verify builds this very file.
CUDA_LIBS = PROJECT / "roles" / "cuda_toolkit" / "files" / "cuda_libs.cu"

# (include dir, lib dir) searched in this order on the target, after the cudnn role's switched trees
# (<prefix>/current-cuda<M>, listed on the target by the cudnn_paths fixture): NVIDIA's Debian/Ubuntu
# packages (multiarch headers), then a tarball copied into the toolkit.
CUDNN_PREFIX = "/opt/nvidia/cudnn"
CUDNN_PLACES = (
    ("/usr/include/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"),
    ("/usr/include", "/usr/lib/x86_64-linux-gnu"),
    ("/usr/include", "/usr/lib64"),
    ("/usr/local/cuda/include", "/usr/local/cuda/lib64"),
)


# (include dir, lib dir) of the toolkit's libraries, searched in this order after $GPUFLEET_CUBLAS_HOME and
# the tested nvcc's own toolkit (<cuda>/include + <cuda>/lib64, as the cuda_libraries fixture lists them):
# NVIDIA's packages' target directory, then the distribution's (Debian/Ubuntu libcublas-dev).
CUBLAS_PLACES = (
    ("/usr/local/cuda/targets/x86_64-linux/include", "/usr/local/cuda/targets/x86_64-linux/lib"),
    ("/usr/local/cuda/targets/sbsa-linux/include", "/usr/local/cuda/targets/sbsa-linux/lib"),
    ("/usr/include", "/usr/lib/x86_64-linux-gnu"),
)


def sh(host, script):
    """Run a POSIX shell script on the target; returns testinfra's CommandResult."""
    return host.run("/bin/sh -c %s", script)


def must(result, what):
    assert result.rc == 0, f"{what} failed (rc={result.rc}):\n{result.stdout}\n{result.stderr}"
    return result.stdout


def put(host, path, data):
    """Write `data` (str or bytes) to `path` on the target (works through every backend)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    b64 = base64.b64encode(data).decode("ascii")
    must(sh(host, f"printf %s {b64} | base64 -d > {shlex.quote(path)}"), f"writing {path}")


def sm_targets(gpus):
    """['90', ...]: the distinct compute capabilities as nvcc's sm_XY digits."""
    out = []
    for gpu in gpus:
        match = re.match(r"^(\d+)\.(\d+)$", gpu["compute_cap"])
        assert match, f"compute capability {gpu['compute_cap']!r} of {gpu['name']} is not N.M"
        digits = match.group(1) + match.group(2)
        if digits not in out:
            out.append(digits)
    return out


def gencode_flags(gpus):
    """Machine code for each GPU's own architecture and no PTX: a wrong arch cannot JIT its way through."""
    return " ".join(f"-gencode arch=compute_{d},code=sm_{d}" for d in sm_targets(gpus))


def expected_cudnn():
    """(text, int as cudnnGetVersion() reports it, digits compared) or None when not asked."""
    text = os.environ.get("GPUFLEET_EXPECT_CUDNN", "").strip()
    if not text:
        return None
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:\.\d+)?$", text)
    assert match, f"GPUFLEET_EXPECT_CUDNN={text!r} is not a version like 9.14.0.64, 9.14.0 or 9.14"
    major, minor, patch = int(match.group(1)), int(match.group(2)), match.group(3)
    scale = 10000 if major >= 9 else 1000
    base = major * scale + minor * 100
    return text, base + int(patch or 0), patch is not None


RESULT = re.compile(r"(\w+)=(\"[^\"]*\"|\[[^\]]*\]|\S+)")


def parse_result(line):
    """`saxpy ok n=1 device="NVIDIA H200" out=[1,2]` -> {"status": "ok", "n": "1", ...}."""
    words = line.split()
    data = {"status": words[1] if len(words) > 1 else ""}
    for key, value in RESULT.findall(line):
        data[key] = value.strip('"')
    return data
