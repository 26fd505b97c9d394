// Launchers of the pooling CUDA kernels (ops/cuda/pool.cu), NHWC float32;
// the OpKernels around them are in ops/cuda/pool.cc. Each enqueues on
// `stream` and returns; the caller checks the launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dflow::cuda {

// One pooling window's geometry (ops/pool.h's PoolGeometry, flattened for
// the device). Output (i, j) reads input rows [i * stride_rows - pad_rows,
// + window_rows) clipped to the image, and the same for columns.
struct PoolWindow2D {
  int64_t batch, channels;
  int64_t in_rows, in_cols, out_rows, out_cols;
  int64_t window_rows, window_cols, stride_rows, stride_cols, pad_rows, pad_cols;
  constexpr int64_t output_count() const { return batch * out_rows * out_cols * channels; }
  constexpr int64_t input_count() const { return batch * in_rows * in_cols * channels; }
};

void LaunchMaxPool(cudaStream_t stream, const PoolWindow2D& w, const float* x, float* y);
void LaunchAvgPool(cudaStream_t stream, const PoolWindow2D& w, const float* x, float* y);
// dx (zeroed here) += grad at each window's first maximum of x.
void LaunchMaxPoolGrad(cudaStream_t stream, const PoolWindow2D& w, const float* x,
                       const float* grad, float* dx);
// y[o] = grad[first maximum of x in window o]; grad has x's shape.
void LaunchMaxPoolGradGrad(cudaStream_t stream, const PoolWindow2D& w, const float* x,
                           const float* grad, float* y);
// dx (zeroed here) += grad / (window elements inside the image), over each window.
void LaunchAvgPoolGrad(cudaStream_t stream, const PoolWindow2D& w, const float* grad, float* dx);

}  // namespace dflow::cuda
