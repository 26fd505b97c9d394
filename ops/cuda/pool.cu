// CUDA kernels of MaxPool, AvgPool and their gradients (NHWC, float32): one
// thread per output element (n, i, j, c), looping over its window. The
// backward passes scatter into a zeroed dx with atomicAdd, since windows
// overlap when the stride is smaller than the window.
#include "ops/cuda/grid.cuh"
#include "ops/cuda/pool_launch.h"

namespace dflow::cuda {
namespace {

// The clipped window of output element `o` and the input offset of its
// image and channel: input (h, w) is at base + (h * in_cols + w) * channels.
struct Window {
  int64_t h0, h1, w0, w1, base;
};

__device__ Window WindowOf(const PoolWindow2D& p, int64_t o) {
  int64_t c = o % p.channels;
  int64_t j = (o / p.channels) % p.out_cols;
  int64_t i = (o / (p.channels * p.out_cols)) % p.out_rows;
  int64_t n = o / (p.channels * p.out_cols * p.out_rows);
  int64_t h = i * p.stride_rows - p.pad_rows, w = j * p.stride_cols - p.pad_cols;
  Window win;
  win.h0 = h < 0 ? 0 : h;
  win.h1 = h + p.window_rows < p.in_rows ? h + p.window_rows : p.in_rows;
  win.w0 = w < 0 ? 0 : w;
  win.w1 = w + p.window_cols < p.in_cols ? w + p.window_cols : p.in_cols;
  win.base = n * p.in_rows * p.in_cols * p.channels + c;
  return win;
}

// The input offset of the window's first maximum (row-major; later taps win
// only when strictly larger), as the CPU kernel.
__device__ int64_t ArgmaxOf(const PoolWindow2D& p, const Window& win, const float* x) {
  int64_t best_at = win.base + (win.h0 * p.in_cols + win.w0) * p.channels;
  float best = x[best_at];
  for (int64_t h = win.h0; h < win.h1; ++h)
    for (int64_t w = win.w0; w < win.w1; ++w) {
      int64_t at = win.base + (h * p.in_cols + w) * p.channels;
      if (x[at] > best) {
        best = x[at];
        best_at = at;
      }
    }
  return best_at;
}

__global__ void MaxPoolKernel(PoolWindow2D p, const float* x, float* y) {
  DFLOW_GRID_STRIDE(o, p.output_count()) y[o] = x[ArgmaxOf(p, WindowOf(p, o), x)];
}

__global__ void AvgPoolKernel(PoolWindow2D p, const float* x, float* y) {
  DFLOW_GRID_STRIDE(o, p.output_count()) {
    Window win = WindowOf(p, o);
    float sum = 0;
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) sum += x[win.base + (h * p.in_cols + w) * p.channels];
    y[o] = sum / static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
  }
}

__global__ void MaxPoolGradKernel(PoolWindow2D p, const float* x, const float* grad, float* dx) {
  DFLOW_GRID_STRIDE(o, p.output_count()) atomicAdd(dx + ArgmaxOf(p, WindowOf(p, o), x), grad[o]);
}

__global__ void MaxPoolGradGradKernel(PoolWindow2D p, const float* x, const float* grad, float* y) {
  DFLOW_GRID_STRIDE(o, p.output_count()) y[o] = grad[ArgmaxOf(p, WindowOf(p, o), x)];
}

__global__ void AvgPoolGradKernel(PoolWindow2D p, const float* grad, float* dx) {
  DFLOW_GRID_STRIDE(o, p.output_count()) {
    Window win = WindowOf(p, o);
    float share = grad[o] / static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w)
        atomicAdd(dx + win.base + (h * p.in_cols + w) * p.channels, share);
  }
}

}  // namespace

void LaunchMaxPool(cudaStream_t stream, const PoolWindow2D& w, const float* x, float* y) {
  MaxPoolKernel<<<Blocks(w.output_count()), kThreads, 0, stream>>>(w, x, y);
}

void LaunchAvgPool(cudaStream_t stream, const PoolWindow2D& w, const float* x, float* y) {
  AvgPoolKernel<<<Blocks(w.output_count()), kThreads, 0, stream>>>(w, x, y);
}

void LaunchMaxPoolGrad(cudaStream_t stream, const PoolWindow2D& w, const float* x,
                       const float* grad, float* dx) {
  cudaMemsetAsync(dx, 0, sizeof(float) * w.input_count(), stream);
  MaxPoolGradKernel<<<Blocks(w.output_count()), kThreads, 0, stream>>>(w, x, grad, dx);
}

void LaunchMaxPoolGradGrad(cudaStream_t stream, const PoolWindow2D& w, const float* x,
                           const float* grad, float* y) {
  MaxPoolGradGradKernel<<<Blocks(w.output_count()), kThreads, 0, stream>>>(w, x, grad, y);
}

void LaunchAvgPoolGrad(cudaStream_t stream, const PoolWindow2D& w, const float* grad, float* dx) {
  cudaMemsetAsync(dx, 0, sizeof(float) * w.input_count(), stream);
  AvgPoolGradKernel<<<Blocks(w.output_count()), kThreads, 0, stream>>>(w, grad, dx);
}

}  // namespace dflow::cuda
