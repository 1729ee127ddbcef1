# Copyright: gpufleet contributors
# Apache-2.0
"""Knowledge base: the components of NVIDIA's CUDA redist manifests, and which of them a CUDA toolkit is.

Pure data (stdlib only, Python >= 3.9); every row carries its confidence and its source. NVIDIA publishes each
CUDA release as ``redistrib_<X.Y.Z>.json`` (https://developer.download.nvidia.com/compute/cuda/redist/), one
object per component. Most of them are the toolkit's compiler, libraries and tools, which NVIDIA's
``cuda-toolkit-X-Y`` package installs from its repository; some are driver and datacenter pieces that the
same manifest carries (the driver itself, nvidia-fs, Fabric Manager, IMEX, NSCQ, NVLink firmware tools),
which are not part of a toolkit install and never go into ``/usr/local/cuda-X.Y``.

Read from redistrib_13.0.2.json (every key classified below; a verbatim copy of NVIDIA's file, read
2026-12-06) and redistrib_12.9.1.json (its CUDA 12 keys). The deb packages named in the notes are NVIDIA's
``cuda-*-13-0`` / ``lib*-13-0`` packages as installed by ``cuda-toolkit-13-0`` on the project's H200 host
(tests/data/h200-ubuntu2404/dpkg-query-nvidia-cuda.tsv).

- ``TOOLKIT``: the components of a toolkit, with their group and the CUDA majors whose manifests list them;
  what ``cuda_toolkit_redist_components: [toolkit]`` installs (plan/redist.py), each where the release's
  manifest lists it for the host's platform;
- ``COMPILER``: nvcc, its headers and runtime per CUDA major (the ``compiler`` set, the smaller one);
- ``VERIFY``: the libraries the cuda_toolkit role's verify links and runs (cuBLAS, cuRAND), which a toolkit
  set must therefore contain;
- ``NOT_TOOLKIT``: the manifest's other components, with what they are: refused in
  ``cuda_toolkit_redist_components`` (plan/inputs.py).
"""

from __future__ import annotations

HIGH, MEDIUM, LOW = "high", "medium", "low"

MANIFEST_13 = "https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json"
MANIFEST_12 = "https://developer.download.nvidia.com/compute/cuda/redist/redistrib_12.9.1.json"

# The groups of a toolkit's components (gpufleet's words for NVIDIA's cuda-compiler / cuda-libraries[-dev] /
# cuda-command-line-tools / cuda-visual-tools / cuda-documentation meta packages).
GROUPS = ("compiler", "library", "tool", "profiler", "documentation")

# fmt: off
# (component, group, CUDA majors whose manifests list it, confidence)
TOOLKIT = (
    # high: cuda-nvcc-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_nvcc", "compiler", (12, 13), HIGH),
    # high: cuda-crt-13-0 (inside cuda_nvcc on 12), https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_crt", "compiler", (13,), HIGH),
    # high: libnvvm-13-0 (inside cuda_nvcc on 12), https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libnvvm", "compiler", (13,), HIGH),
    # high: cuda-cudart[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_cudart", "compiler", (12, 13), HIGH),
    # high: cuda-cccl-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_cccl", "compiler", (12, 13), HIGH),
    # high: cuda-nvrtc[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_nvrtc", "compiler", (12, 13), HIGH),
    # high: libcublas[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libcublas", "library", (12, 13), HIGH),
    # high: libcufft[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libcufft", "library", (12, 13), HIGH),
    # high: libcurand[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libcurand", "library", (12, 13), HIGH),
    # high: libcusolver[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libcusolver", "library", (12, 13), HIGH),
    # high: libcusparse[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libcusparse", "library", (12, 13), HIGH),
    # high: libnpp[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libnpp", "library", (12, 13), HIGH),
    # high: libnvjpeg[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libnvjpeg", "library", (12, 13), HIGH),
    # high: libnvjitlink[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libnvjitlink", "library", (12, 13), HIGH),
    # high: libnvfatbin[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libnvfatbin", "library", (12, 13), HIGH),
    # libnvptxcompiler-13-0 (on 12 a static library inside cuda_nvcc)
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libnvptxcompiler", "library", (13,), HIGH),
    # libcufile[-dev]-13-0: GPUDirect Storage's library (its kernel module, nvidia_fs, is a driver piece)
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("libcufile", "library", (12, 13), HIGH),
    # linux-aarch64 (Jetson) only, which is never a gpufleet platform
    # medium: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_12.9.1.json
    ("libcudla", "library", (12,), MEDIUM),
    # high: cuda-culibos-dev-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_culibos", "library", (13,), HIGH),
    # high: cuda-cupti[-dev]-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_cupti", "library", (12, 13), HIGH),
    # high: cuda-nvtx-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_nvtx", "library", (12, 13), HIGH),
    # high: cuda-profiler-api-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_profiler_api", "library", (12, 13), HIGH),
    # high: cuda-opencl-13-0 (linux-x86_64 only), https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_opencl", "library", (12, 13), HIGH),
    # high: cuda-nvml-dev-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_nvml_dev", "library", (12, 13), HIGH),
    # medium: cuda-sandbox-dev-13-0; in 12.9.1 not read, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_sandbox_dev", "library", (12, 13), MEDIUM),
    # high: cuda-sanitizer-13-0 (compute-sanitizer), https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_sanitizer_api", "tool", (12, 13), HIGH),
    # high: cuda-cuobjdump-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_cuobjdump", "tool", (12, 13), HIGH),
    # high: cuda-nvdisasm-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_nvdisasm", "tool", (12, 13), HIGH),
    # high: cuda-cuxxfilt-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_cuxxfilt", "tool", (12, 13), HIGH),
    # high: cuda-nvprune-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_nvprune", "tool", (12, 13), HIGH),
    # high: cuda-gdb-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_gdb", "tool", (12, 13), HIGH),
    # medium: ctadvisor (compile-time advisor), no deb seen, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_ctadvisor", "tool", (13,), MEDIUM),
    # high: linux-x86_64 only, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_12.9.1.json
    ("cuda_demo_suite", "tool", (12,), HIGH),
    # high: cuda-nsight-compute-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("nsight_compute", "profiler", (12, 13), HIGH),
    # medium: cuda-visual-tools' nsight-systems, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("nsight_systems", "profiler", (12, 13), MEDIUM),
    # high: Nsight Eclipse plugin, linux-x86_64 only, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_nsight", "profiler", (12, 13), HIGH),
    # high: cuda-documentation-13-0, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    ("cuda_documentation", "documentation", (12, 13), HIGH),
)

# nvcc, its headers and runtime per CUDA major: the `compiler` set (CUDA 13 ships crt, the host headers nvcc
# needs, and libnvvm, cicc, as components of their own; CUDA 12 keeps both inside cuda_nvcc).
COMPILER = {
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_12.9.1.json
    12: ("cuda_nvcc", "cuda_cudart", "cuda_cccl", "cuda_nvrtc"),
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    13: ("cuda_nvcc", "cuda_crt", "libnvvm", "cuda_cudart", "cuda_cccl", "cuda_nvrtc"),
}

# The libraries the cuda_toolkit role's verify builds against and runs (its name -> the component that
# ships it): a toolkit set holds them, and the verify proves them.
VERIFY = {
    # high: lib/libcublas.so, include/cublas_v2.h, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "cublas": "libcublas",
    # high: lib/libcurand.so, include/curand.h, https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "curand": "libcurand",
}

# The manifest's components that are not part of a toolkit install: component -> what it is.
NOT_TOOLKIT = {
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "nvidia_driver": "the NVIDIA driver (the nvidia_driver role installs it)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "nvidia_fs": "the nvidia-fs kernel module of GPUDirect Storage (a driver piece)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "fabricmanager": "NVIDIA Fabric Manager for NVSwitch systems (a driver piece)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "imex": "NVIDIA IMEX, the driver's import/export daemon (a driver piece)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "libnvidia_nscq": "the NVSwitch configuration and query library (a driver piece)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "libnvsdm": "the NVSwitch device monitoring library (a driver piece)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "driver_assistant": "NVIDIA's driver installation assistant",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_12.9.1.json
    "cuda_compat": "the CUDA forward-compatibility driver libraries for Jetson (L4T)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "collectx_bringup": "UFM telemetry CollectX (datacenter fabric tooling)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "mft": "NVLink 5 firmware tools (datacenter fabric tooling)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "mft_autocomplete": "NVLink 5 firmware tools' shell completion (datacenter fabric tooling)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "mft_oem": "NVLink 5 firmware tools for OEMs (datacenter fabric tooling)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "nvlsm": "the NVLink subnet manager (datacenter fabric tooling)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "nsight_vse": "Nsight Visual Studio Edition (Windows only)",
    # high: https://developer.download.nvidia.com/compute/cuda/redist/redistrib_13.0.2.json
    "visual_studio_integration": "the Visual Studio integration (Windows only)",
}
# fmt: on
