"""gpufleet cuDNN verify: load cuDNN, check cudnnGetVersion(), and where a GPU is present run a small
convolution and compare it with a CPU reference. Exits 1 with a one-line reason on any mismatch.

usage: python3 cudnn_check.py VERSION LIBRARY [EXPECTED_DIR]
  VERSION       requested cuDNN version (9.14.0 or 9.14.0.64)
  LIBRARY       a soname resolved through the ld cache (libcudnn.so.9) or a path
  EXPECTED_DIR  the directory the loaded library must come from (realpath prefix), optional

No shebang: the role runs it with ansible.builtin.script and executable python3.
"""

import ctypes
import json
import os
import shutil
import sys


def fail(msg):
    print(json.dumps({"ok": False, "msg": msg}))
    sys.exit(1)


def expected_number(version):
    parts = [int(p) for p in version.split(".")[:3]]
    major, minor, patch = (parts + [0, 0, 0])[:3]
    return major * 10000 + minor * 100 + patch if major >= 9 else major * 1000 + minor * 100 + patch


def loaded_path(fragment):
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if fragment in os.path.basename(path):
                return path
    return ""


def gpu_present():
    return os.path.exists("/dev/nvidia0") and shutil.which("nvidia-smi") is not None


def check(rc, what):
    if rc != 0:
        fail(f"{what} failed with status {rc}")


def convolution(cudnn):
    """1x1x5x5 input, 1x1x3x3 filter, padding 1, cross-correlation; driver API for memory (no cudart)."""
    cuda = ctypes.CDLL("libcuda.so.1")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check(cuda.cuInit(0), "cuInit")
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    n, c, h, w, k, r, s = 1, 1, 5, 5, 1, 3, 3
    x = [float((i * 7) % 11 - 5) for i in range(h * w)]
    f = [0.5, -1.0, 2.0, 1.5, 0.25, -0.75, 1.0, -2.0, 0.5]
    ref = []
    for oy in range(h):
        for ox in range(w):
            acc = 0.0
            for fy in range(r):
                for fx in range(s):
                    iy, ix = oy + fy - 1, ox + fx - 1
                    if 0 <= iy < h and 0 <= ix < w:
                        acc += x[iy * w + ix] * f[fy * s + fx]
            ref.append(acc)
    farr = ctypes.c_float * (h * w)
    host_x, host_f, host_y = farr(*x), (ctypes.c_float * 9)(*f), farr()

    def alloc(nbytes):
        ptr = ctypes.c_uint64()
        check(cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(nbytes)), "cuMemAlloc")
        return ptr

    dx, df, dy = alloc(4 * h * w), alloc(4 * 9), alloc(4 * h * w)
    check(cuda.cuMemcpyHtoD_v2(dx, host_x, ctypes.c_size_t(4 * h * w)), "cuMemcpyHtoD")
    check(cuda.cuMemcpyHtoD_v2(df, host_f, ctypes.c_size_t(4 * 9)), "cuMemcpyHtoD")
    handle, xd, yd, fd, cd = (ctypes.c_void_p() for _index in range(5))
    check(cudnn.cudnnCreate(ctypes.byref(handle)), "cudnnCreate")
    check(cudnn.cudnnCreateTensorDescriptor(ctypes.byref(xd)), "cudnnCreateTensorDescriptor")
    check(cudnn.cudnnCreateTensorDescriptor(ctypes.byref(yd)), "cudnnCreateTensorDescriptor")
    check(cudnn.cudnnCreateFilterDescriptor(ctypes.byref(fd)), "cudnnCreateFilterDescriptor")
    check(cudnn.cudnnCreateConvolutionDescriptor(ctypes.byref(cd)), "cudnnCreateConvolutionDescriptor")
    nchw, flt = 0, 0  # CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT
    check(cudnn.cudnnSetTensor4dDescriptor(xd, nchw, flt, n, c, h, w), "cudnnSetTensor4dDescriptor")
    check(cudnn.cudnnSetTensor4dDescriptor(yd, nchw, flt, n, k, h, w), "cudnnSetTensor4dDescriptor")
    check(cudnn.cudnnSetFilter4dDescriptor(fd, flt, nchw, k, c, r, s), "cudnnSetFilter4dDescriptor")
    check(
        cudnn.cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1, 1, flt), "cudnnSetConvolution2dDescriptor"
    )
    algo = 0  # CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM (needs no workspace)
    alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)
    check(
        cudnn.cudnnConvolutionForward(
            handle,
            ctypes.byref(alpha),
            xd,
            ctypes.c_void_p(dx.value),
            fd,
            ctypes.c_void_p(df.value),
            cd,
            algo,
            None,
            ctypes.c_size_t(0),
            ctypes.byref(beta),
            yd,
            ctypes.c_void_p(dy.value),
        ),
        "cudnnConvolutionForward",
    )
    check(cuda.cuCtxSynchronize(), "cuCtxSynchronize")
    check(cuda.cuMemcpyDtoH_v2(host_y, dy, ctypes.c_size_t(4 * h * w)), "cuMemcpyDtoH")
    cudnn.cudnnDestroy(handle)
    for i, (got, want) in enumerate(zip(list(host_y), ref)):
        if abs(got - want) > 1e-4:
            fail(f"convolution result {i} is {got!r}, the CPU reference {want!r}")
    return {"outputs": len(ref), "max_abs": max(abs(v) for v in ref)}


def main():
    if len(sys.argv) < 3:
        fail(__doc__.strip().splitlines()[-4])
    version, library = sys.argv[1], sys.argv[2]
    expected_dir = sys.argv[3] if len(sys.argv) > 3 else ""
    try:
        cudnn = ctypes.CDLL(library)
    except OSError as exc:
        fail(f"cannot load {library}: {exc}")
    cudnn.cudnnGetVersion.restype = ctypes.c_size_t
    cudnn.cudnnGetCudartVersion.restype = ctypes.c_size_t
    got, want = int(cudnn.cudnnGetVersion()), expected_number(version)
    path = loaded_path("libcudnn.so")
    result = {
        "ok": True,
        "library": library,
        "path": path,
        "version": got,
        "cudart": int(cudnn.cudnnGetCudartVersion()),
    }
    if got != want:
        fail(f"{library} ({path}) reports cudnnGetVersion {got}, expected {want} for cuDNN {version}")
    if expected_dir and not os.path.realpath(path).startswith(os.path.realpath(expected_dir) + os.sep):
        fail(f"{library} resolved to {path}, not below {expected_dir}")
    if gpu_present():
        result["convolution"] = convolution(cudnn)
    else:
        result["convolution"] = "skipped: no GPU (/dev/nvidia0 and nvidia-smi)"
    print(json.dumps(result))


if __name__ == "__main__":
    main()
