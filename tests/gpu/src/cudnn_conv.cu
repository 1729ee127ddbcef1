// gpufleet GPU verify: a small cuDNN convolution (NCHW float, 1x1x8x8 input, 1x1x3x3 filter,
// padding 1, cross-correlation) runs on the GPU and matches a CPU reference computed here.
// Prints one line: "cudnn ok version=... header=... cudart=... max_err=... out=[...]" and exits
// 0, or says what went wrong and exits 1 (wrong result) or 2 (cuDNN/CUDA error).
#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <cudnn.h>

#define CUDA_CHECK(call)                                                                \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      std::printf("cudnn error: %s failed: %s\n", #call, cudaGetErrorString(err_));     \
      return 2;                                                                         \
    }                                                                                   \
  } while (0)
#define DNN_CHECK(call)                                                                 \
  do {                                                                                  \
    cudnnStatus_t st_ = (call);                                                         \
    if (st_ != CUDNN_STATUS_SUCCESS) {                                                  \
      std::printf("cudnn error: %s failed: %s\n", #call, cudnnGetErrorString(st_));     \
      return 2;                                                                         \
    }                                                                                   \
  } while (0)

enum { N = 1, C = 1, H = 8, W = 8, K = 1, R = 3, S = 3, PAD = 1 };

int main() {
  float in[N * C * H * W], filt[K * C * R * S], out[N * K * H * W], ref[N * K * H * W];
  for (int i = 0; i < H * W; ++i) in[i] = static_cast<float>((i * 5) % 7) - 3.0f;
  for (int i = 0; i < R * S; ++i) filt[i] = static_cast<float>(i) - 4.0f;
  // CPU reference: cross-correlation with zero padding
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) {
      float acc = 0.0f;
      for (int r = 0; r < R; ++r)
        for (int s = 0; s < S; ++s) {
          int iy = y + r - PAD, ix = x + s - PAD;
          if (iy >= 0 && iy < H && ix >= 0 && ix < W) acc += in[iy * W + ix] * filt[r * S + s];
        }
      ref[y * W + x] = acc;
    }

  cudnnHandle_t handle;
  DNN_CHECK(cudnnCreate(&handle));
  cudnnTensorDescriptor_t xdesc, ydesc;
  cudnnFilterDescriptor_t wdesc;
  cudnnConvolutionDescriptor_t conv;
  DNN_CHECK(cudnnCreateTensorDescriptor(&xdesc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&ydesc));
  DNN_CHECK(cudnnCreateFilterDescriptor(&wdesc));
  DNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
  DNN_CHECK(cudnnSetTensor4dDescriptor(xdesc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, N, C, H, W));
  DNN_CHECK(cudnnSetFilter4dDescriptor(wdesc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, K, C, R, S));
  DNN_CHECK(cudnnSetConvolution2dDescriptor(conv, PAD, PAD, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  int on, oc, oh, ow;
  DNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv, xdesc, wdesc, &on, &oc, &oh, &ow));
  if (on != N || oc != K || oh != H || ow != W) {
    std::printf("cudnn WRONG output dims %dx%dx%dx%d\n", on, oc, oh, ow);
    return 1;
  }
  DNN_CHECK(cudnnSetTensor4dDescriptor(ydesc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow));

  const cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t ws_size = 0;
  DNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, xdesc, wdesc, conv, ydesc, algo, &ws_size));
  float *dx = nullptr, *dw = nullptr, *dy = nullptr;
  void *ws = nullptr;
  CUDA_CHECK(cudaMalloc(&dx, sizeof(in)));
  CUDA_CHECK(cudaMalloc(&dw, sizeof(filt)));
  CUDA_CHECK(cudaMalloc(&dy, sizeof(out)));
  if (ws_size) CUDA_CHECK(cudaMalloc(&ws, ws_size));
  CUDA_CHECK(cudaMemcpy(dx, in, sizeof(in), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dw, filt, sizeof(filt), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dy, 0xff, sizeof(out)));  // NaNs: a no-op convolution cannot pass
  const float alpha = 1.0f, beta = 0.0f;
  DNN_CHECK(cudnnConvolutionForward(handle, &alpha, xdesc, dx, wdesc, dw, conv, algo, ws, ws_size, &beta,
                                    ydesc, dy));
  CUDA_CHECK(cudaDeviceSynchronize());
  CUDA_CHECK(cudaMemcpy(out, dy, sizeof(out), cudaMemcpyDeviceToHost));

  double max_err = 0.0;
  int bad = 0;
  for (int i = 0; i < H * W; ++i) {
    double err = std::fabs(static_cast<double>(out[i]) - ref[i]);
    if (!(err <= 1e-3)) ++bad;  // NaN counts as bad
    if (err > max_err || err != err) max_err = err;
  }
  std::printf("cudnn %s version=%zu header=%d cudart=%zu bad=%d max_err=%g out=[", bad ? "WRONG" : "ok",
              cudnnGetVersion(), CUDNN_VERSION, cudnnGetCudartVersion(), bad, max_err);
  for (int i = 0; i < H * W; ++i) std::printf(i ? ",%g" : "%g", out[i]);
  std::printf("] ref=[");
  for (int i = 0; i < H * W; ++i) std::printf(i ? ",%g" : "%g", ref[i]);
  std::printf("]\n");
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dy);
  if (ws) cudaFree(ws);
  cudnnDestroyTensorDescriptor(xdesc);
  cudnnDestroyTensorDescriptor(ydesc);
  cudnnDestroyFilterDescriptor(wdesc);
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroy(handle);
  return bad ? 1 : 0;
}
