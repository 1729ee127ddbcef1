#!/bin/sh
# gpufleet cuda_toolkit verify: the toolkit's nvcc compiles a kernel for ARCH (a cubin, checked to be ELF
# for that arch) and links a program against the shared cudart, whose dependency must resolve. With LIBS_DIR
# (the folder the role copied files/cuda_libs.cu to) and the libraries the plan verifies (cublas, curand), nvcc
# builds that program against them, and each must resolve. With a GPU the programs run and check their results (the
# kernel's, cublasSgemm's, cuRAND's); without one they are built and linked, and the result says they did not
# run ("run": "no-gpu"). Exits non-zero with a reason on any failure.
# usage: cuda_verify.sh CUDA_DIR ARCH [LIBS_DIR LIB...]   (LIBS_DIR: the folder holding cuda_libs.cu)
set -eu
cuda=$1; arch=$2; shift 2
libs_dir=${1:-}; [ $# -gt 0 ] && shift
libs=$*
work=$(mktemp -d /tmp/gpufleet-cuda-verify.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/k.cu" <<'CU'
#include <cstdio>
#include <cuda_runtime.h>
__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) { printf("no-gpu\n"); return 0; }
  const int n = 1024; float hx[n], hy[n];
  for (int i = 0; i < n; ++i) { hx[i] = (float)i; hy[i] = 1.0f; }
  float *dx, *dy;
  if (cudaMalloc(&dx, n * sizeof(float)) != cudaSuccess || cudaMalloc(&dy, n * sizeof(float)) != cudaSuccess) return 2;
  cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dy, hy, n * sizeof(float), cudaMemcpyHostToDevice);
  axpy<<<(n + 255) / 256, 256>>>(2.0f, dx, dy, n);
  if (cudaMemcpy(hy, dy, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) return 3;
  for (int i = 0; i < n; ++i) if (hy[i] != 2.0f * i + 1.0f) { printf("wrong result at %d\n", i); return 4; }
  printf("gpu-ok\n");
  return 0;
}
CU
"$cuda/bin/nvcc" -arch="$arch" -cubin -o "$work/k.cubin" "$work/k.cu" 2>"$work/err" || { echo "nvcc -cubin for $arch failed: $(tail -3 "$work/err")"; exit 1; }
magic=$(od -An -c -N4 "$work/k.cubin" | tr -d ' ')
[ "$magic" = "177ELF" ] || { echo "k.cubin is not an ELF cubin"; exit 1; }
"$cuda/bin/nvcc" -arch="$arch" -cudart shared -o "$work/k" "$work/k.cu" 2>"$work/err" || { echo "nvcc link against cudart failed: $(tail -3 "$work/err")"; exit 1; }
cudart=$(LD_LIBRARY_PATH="$cuda/lib64" ldd "$work/k" | awk '/libcudart/ {print $3}')
if [ -z "$cudart" ] || [ ! -e "$cudart" ]; then echo "the program does not resolve libcudart"; exit 1; fi
gpu=no
if [ -e /dev/nvidia0 ] && command -v nvidia-smi >/dev/null 2>&1; then gpu=yes; fi
out=no-gpu
if [ $gpu = yes ]; then
  out=$(LD_LIBRARY_PATH="$cuda/lib64" "$work/k") || { echo "the kernel run failed: $out"; exit 1; }
  [ "$out" = gpu-ok ] || { echo "the kernel run failed: $out"; exit 1; }
fi
# the toolkit's libraries: one program that calls each, built, linked, resolved, run where a GPU is
resolved=""; libs_out=none
if [ -n "$libs" ]; then
  defines=""; links=""
  for lib in $libs; do
    case $lib in
      cublas) defines="$defines -DGPUFLEET_CUBLAS"; links="$links -lcublas" ;;
      curand) defines="$defines -DGPUFLEET_CURAND"; links="$links -lcurand" ;;
      *) echo "unknown library to verify: $lib"; exit 1 ;;
    esac
  done
  # shellcheck disable=SC2086 # the flags are words
  "$cuda/bin/nvcc" -arch="$arch" $defines -o "$work/libs" "$libs_dir/cuda_libs.cu" -L"$cuda/lib64" $links 2>"$work/err" ||
    { echo "nvcc could not build and link a program that calls $libs: $(tail -3 "$work/err")"; exit 1; }
  for lib in $libs; do
    path=$(LD_LIBRARY_PATH="$cuda/lib64" ldd "$work/libs" | awk -v l="lib$lib.so" 'index($1, l) == 1 {print $3}')
    if [ -z "$path" ] || [ ! -e "$path" ]; then echo "the program does not resolve lib$lib"; exit 1; fi
    resolved="$resolved, \"$lib\": \"$path\""
  done
  libs_out=no-gpu
  if [ $gpu = yes ]; then
    libs_out=$(LD_LIBRARY_PATH="$cuda/lib64" "$work/libs") || { echo "the program that calls $libs failed: $libs_out"; exit 1; }
    case $libs_out in "cudalibs ok"*) ;; *) echo "the program that calls $libs failed: $libs_out"; exit 1 ;; esac
  fi
fi
echo "{\"cuda\": \"$cuda\", \"arch\": \"$arch\", \"cubin\": \"ELF\", \"cudart\": \"$cudart\", \"run\": \"$out\", \"libraries\": {${resolved#, }}, \"libraries_run\": \"$libs_out\"}"
