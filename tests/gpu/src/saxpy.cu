// gpufleet GPU verify: a kernel built for the GPU's own architecture (nvcc -gencode
// arch=compute_XY,code=sm_XY: machine code only, no PTX to fall back on) runs, and its
// result is checked on the host. Prints one line: "saxpy ok ..." and exits 0, or says what
// went wrong and exits 1 (wrong result) or 2 (CUDA error).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      std::printf("saxpy error: %s failed: %s (%s)\n", #call, cudaGetErrorName(err_),    \
                  cudaGetErrorString(err_));                                            \
      return 2;                                                                         \
    }                                                                                   \
  } while (0)

__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  const int n = 1 << 20;
  const float a = 3.0f;
  int device = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDevice(&device));
  CHECK(cudaGetDeviceProperties(&prop, device));

  float *x = static_cast<float *>(std::malloc(n * sizeof(float)));
  float *y = static_cast<float *>(std::malloc(n * sizeof(float)));
  if (!x || !y) {
    std::printf("saxpy error: out of host memory\n");
    return 2;
  }
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.5f;
    y[i] = static_cast<float>(i % 77) - 20.0f;
  }
  float *dx = nullptr, *dy = nullptr;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y, n * sizeof(float), cudaMemcpyHostToDevice));
  saxpy<<<(n + 255) / 256, 256>>>(n, a, dx, dy);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  float *out = static_cast<float *>(std::malloc(n * sizeof(float)));
  if (!out) {
    std::printf("saxpy error: out of host memory\n");
    return 2;
  }
  CHECK(cudaMemcpy(out, dy, n * sizeof(float), cudaMemcpyDeviceToHost));

  double max_err = 0.0;
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    double want = static_cast<double>(a) * x[i] + y[i];
    double err = std::fabs(out[i] - want);
    if (err > max_err) max_err = err;
    if (err > 1e-3) ++bad;
  }
  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  std::printf("saxpy %s n=%d bad=%d max_err=%g device=\"%s\" cc=%d.%d driver_api=%d runtime=%d\n",
              bad ? "WRONG" : "ok", n, bad, max_err, prop.name, prop.major, prop.minor, driver, runtime);
  cudaFree(dx);
  cudaFree(dy);
  std::free(x);
  std::free(y);
  std::free(out);
  return bad ? 1 : 0;
}
