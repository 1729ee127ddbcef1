// gpufleet: a program that calls the CUDA toolkit's libraries and checks their results on the host.
//   cuBLAS (-DGPUFLEET_CUBLAS, -lcublas): cublasSgemm, C = A * B on 4x4 matrices of small integers (exact in
//     float), compared with the product computed here;
//   cuRAND (-DGPUFLEET_CURAND, -lcurand): 4096 uniform floats of the default generator, seed 1234: each
//     value in (0, 1] and their mean within 0.45 .. 0.55.
// The cuda_toolkit role's verify (files/cuda_verify.sh) and tests/gpu/test_gpu.py build this same file.
// Prints one line and exits 0 with "cudalibs ok ..." (or "cudalibs no-gpu": no GPU to run on), 1 with
// "cudalibs WRONG ..." (a wrong result) or 2 with "cudalibs error: ..." (a CUDA or library error).
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#ifdef GPUFLEET_CUBLAS
#include <cublas_v2.h>
#endif
#ifdef GPUFLEET_CURAND
#include <curand.h>
#endif

#define CUDA_CHECK(call)                                                                \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      std::printf("cudalibs error: %s failed: %s\n", #call, cudaGetErrorString(err_));  \
      return 2;                                                                         \
    }                                                                                   \
  } while (0)
#define LIB_CHECK(call, ok)                                                             \
  do {                                                                                  \
    int st_ = static_cast<int>(call);                                                   \
    if (st_ != static_cast<int>(ok)) {                                                  \
      std::printf("cudalibs error: %s failed: status %d\n", #call, st_);                \
      return 2;                                                                         \
    }                                                                                   \
  } while (0)

#ifdef GPUFLEET_CUBLAS
// C = A * B (column-major, as cuBLAS reads them); returns 0 ok, 1 wrong, 2 error; `words` gets the result
static int check_cublas(char *words, size_t size) {
  enum { N = 4 };
  float a[N * N], b[N * N], c[N * N], ref[N * N];
  for (int i = 0; i < N * N; ++i) {
    a[i] = static_cast<float>(i % 5) - 2.0f;
    b[i] = static_cast<float>((i * 7) % 4) + 1.0f;
    c[i] = -1.0f;
  }
  for (int row = 0; row < N; ++row)
    for (int col = 0; col < N; ++col) {
      float acc = 0.0f;
      for (int k = 0; k < N; ++k) acc += a[row + k * N] * b[k + col * N];
      ref[row + col * N] = acc;
    }
  cublasHandle_t handle;
  LIB_CHECK(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  int version = 0;
  LIB_CHECK(cublasGetVersion(handle, &version), CUBLAS_STATUS_SUCCESS);
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  CUDA_CHECK(cudaMalloc(&da, sizeof a));
  CUDA_CHECK(cudaMalloc(&db, sizeof b));
  CUDA_CHECK(cudaMalloc(&dc, sizeof c));
  CUDA_CHECK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice));
  const float alpha = 1.0f, beta = 0.0f;
  LIB_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &alpha, da, N, db, N, &beta, dc, N),
            CUBLAS_STATUS_SUCCESS);
  CUDA_CHECK(cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < N * N; ++i)
    if (c[i] != ref[i]) ++bad;
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cublasDestroy(handle);
  std::snprintf(words, size, " cublas=%s cublas_version=%d cublas_bad=%d", bad ? "WRONG" : "ok", version,
                bad);
  return bad ? 1 : 0;
}
#endif

#ifdef GPUFLEET_CURAND
static int check_curand(char *words, size_t size) {
  enum { COUNT = 4096 };
  static float out[COUNT];
  curandGenerator_t gen;
  LIB_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT), CURAND_STATUS_SUCCESS);
  int version = 0;
  LIB_CHECK(curandGetVersion(&version), CURAND_STATUS_SUCCESS);
  LIB_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 1234ULL), CURAND_STATUS_SUCCESS);
  float *d = nullptr;
  CUDA_CHECK(cudaMalloc(&d, sizeof out));
  LIB_CHECK(curandGenerateUniform(gen, d, COUNT), CURAND_STATUS_SUCCESS);
  CUDA_CHECK(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost));
  double sum = 0.0;
  int outside = 0;
  for (int i = 0; i < COUNT; ++i) {
    if (!(out[i] > 0.0f && out[i] <= 1.0f)) ++outside;
    sum += out[i];
  }
  const double mean = sum / COUNT;
  const int bad = outside || mean < 0.45 || mean > 0.55;
  cudaFree(d);
  curandDestroyGenerator(gen);
  std::snprintf(words, size, " curand=%s curand_version=%d curand_mean=%.4f curand_outside=%d",
                bad ? "WRONG" : "ok", version, mean, outside);
  return bad ? 1 : 0;
}
#endif

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("cudalibs no-gpu\n");
    return 0;
  }
  char line[512] = "", words[160];
  int worst = 0, rc = 0;
  (void)words;
  (void)rc;
#ifdef GPUFLEET_CUBLAS
  words[0] = '\0';
  rc = check_cublas(words, sizeof words);
  if (rc == 2) return 2;
  worst = rc > worst ? rc : worst;
  std::snprintf(line + std::strlen(line), sizeof line - std::strlen(line), "%s", words);
#endif
#ifdef GPUFLEET_CURAND
  words[0] = '\0';
  rc = check_curand(words, sizeof words);
  if (rc == 2) return 2;
  worst = rc > worst ? rc : worst;
  std::snprintf(line + std::strlen(line), sizeof line - std::strlen(line), "%s", words);
#endif
  std::printf("cudalibs %s%s\n", worst ? "WRONG" : "ok", line);
  return worst;
}
