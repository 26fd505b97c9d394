// Launchers of the batch-norm CUDA kernels (ops/cuda/batch_norm.cu), over x
// seen as [rows = N*H*W, channels] float32. The per-channel statistics are
// one block per channel summing in double, as the CPU kernels do; the
// element-wise passes are then per-channel affine maps.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dflow::cuda {

struct BatchNormForward {
  const float* x;
  const float* scale;
  const float* offset;
  const float* mean_in;      // inference only (null in training)
  const float* variance_in;  // inference only (null in training)
  int64_t rows, channels;
  bool training;
  double epsilon;
  // Outputs per channel: batch_mean, batch_variance (unbiased in training),
  // the mean and biased variance used (reserve spaces), and y = x * a + b.
  float *batch_mean, *batch_variance, *reserve_mean, *reserve_variance, *a, *b;
};
// Fills every per-channel output of `f`.
void LaunchBatchNormStatistics(cudaStream_t stream, const BatchNormForward& f);

struct BatchNormBackward {
  const float* dy;
  const float* x;
  const float* scale;
  const float* mean;      // reserve_space_1
  const float* variance;  // reserve_space_2
  int64_t rows, channels;
  bool training;
  double epsilon;
  // Outputs per channel: scale_backprop, offset_backprop, and the
  // coefficients of dx = k * dy + u * (x - mean) + w.
  float *scale_backprop, *offset_backprop, *k, *u, *w;
};
void LaunchBatchNormGradStatistics(cudaStream_t stream, const BatchNormBackward& g);

// y = x * a[c] + b[c] for n elements of `channels` channels.
void LaunchChannelAffine(cudaStream_t stream, const float* x, const float* a, const float* b,
                         float* y, int64_t n, int64_t channels);
// dx = k[c] * dy + u[c] * (x - mean[c]) + w[c].
void LaunchBatchNormGradApply(cudaStream_t stream, const BatchNormBackward& g, float* dx);

}  // namespace dflow::cuda
