// CUDA kernels of FusedBatchNorm and FusedBatchNormGrad (float32, double
// sums). Statistics: one block per channel, its threads striding over the
// rows, partial sums combined in shared memory; the math is the CPU
// kernels' (ops/cpu/batch_norm.cc, batch_norm_grad.cc):
//   mean = sum(x) / M,  var = sum((x - mean)^2) / M  (two passes),
//   a = scale / sqrt(var + eps),  b = offset - mean * a,  y = x * a + b;
//   backward, with inv_std = 1 / sqrt(var + eps), k = scale * inv_std:
//   u = -k inv_std^2 sum(dy (x - mean)) / M,  w = -k sum(dy) / M (training).
#include <cmath>

#include "ops/cuda/batch_norm_launch.h"
#include "ops/cuda/grid.cuh"

namespace dflow::cuda {
namespace {

// The sum over the block of each thread's `value`; every thread gets it.
__device__ double BlockSum(double value) {
  __shared__ double partial[kThreads];
  partial[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  double total = partial[0];
  __syncthreads();  // partial is reused by the next call
  return total;
}

__global__ void StatisticsKernel(BatchNormForward f) {
  const int64_t c = blockIdx.x, channels = f.channels;
  double mean, var;
  if (f.training) {
    const double inv_m = f.rows > 0 ? 1.0 / static_cast<double>(f.rows) : nan("");
    double sum = 0;
    for (int64_t r = threadIdx.x; r < f.rows; r += kThreads) sum += f.x[r * channels + c];
    mean = BlockSum(sum) * inv_m;
    double squares = 0;
    for (int64_t r = threadIdx.x; r < f.rows; r += kThreads) {
      double d = f.x[r * channels + c] - mean;
      squares += d * d;
    }
    var = BlockSum(squares) * inv_m;
  } else {
    mean = f.mean_in[c];
    var = f.variance_in[c];
  }
  if (threadIdx.x != 0) return;
  double unbias = f.training && f.rows > 1 ? static_cast<double>(f.rows) / (f.rows - 1) : 1.0;
  double a = static_cast<double>(f.scale[c]) / sqrt(var + f.epsilon);
  f.batch_mean[c] = static_cast<float>(mean);
  f.batch_variance[c] = static_cast<float>(var * unbias);
  f.reserve_mean[c] = static_cast<float>(mean);
  f.reserve_variance[c] = static_cast<float>(var);
  f.a[c] = static_cast<float>(a);
  f.b[c] = static_cast<float>(static_cast<double>(f.offset[c]) - mean * a);
}

__global__ void GradStatisticsKernel(BatchNormBackward g) {
  const int64_t c = blockIdx.x, channels = g.channels;
  const double mean = g.mean[c];
  double sum_dy = 0, sum_dy_xc = 0;
  for (int64_t r = threadIdx.x; r < g.rows; r += kThreads) {
    double d = g.dy[r * channels + c];
    sum_dy += d;
    sum_dy_xc += d * (static_cast<double>(g.x[r * channels + c]) - mean);
  }
  sum_dy = BlockSum(sum_dy);
  sum_dy_xc = BlockSum(sum_dy_xc);
  if (threadIdx.x != 0) return;
  double inv_std = 1.0 / sqrt(static_cast<double>(g.variance[c]) + g.epsilon);
  double k = static_cast<double>(g.scale[c]) * inv_std, m = static_cast<double>(g.rows);
  g.k[c] = static_cast<float>(k);
  g.u[c] = g.training ? static_cast<float>(-k * inv_std * inv_std * sum_dy_xc / m) : 0.0f;
  g.w[c] = g.training ? static_cast<float>(-k * sum_dy / m) : 0.0f;
  g.scale_backprop[c] = static_cast<float>(sum_dy_xc * inv_std);
  g.offset_backprop[c] = static_cast<float>(sum_dy);
}

__global__ void ChannelAffineKernel(const float* x, const float* a, const float* b, float* y,
                                    int64_t n, int64_t channels) {
  DFLOW_GRID_STRIDE(i, n) {
    int64_t c = i % channels;
    y[i] = x[i] * a[c] + b[c];
  }
}

__global__ void GradApplyKernel(BatchNormBackward g, float* dx) {
  DFLOW_GRID_STRIDE(i, g.rows * g.channels) {
    int64_t c = i % g.channels;
    dx[i] = g.k[c] * g.dy[i] + g.u[c] * (g.x[i] - g.mean[c]) + g.w[c];
  }
}

}  // namespace

void LaunchBatchNormStatistics(cudaStream_t stream, const BatchNormForward& f) {
  if (f.channels > 0) StatisticsKernel<<<static_cast<unsigned>(f.channels), kThreads, 0, stream>>>(f);
}

void LaunchBatchNormGradStatistics(cudaStream_t stream, const BatchNormBackward& g) {
  if (g.channels > 0)
    GradStatisticsKernel<<<static_cast<unsigned>(g.channels), kThreads, 0, stream>>>(g);
}

void LaunchChannelAffine(cudaStream_t stream, const float* x, const float* a, const float* b,
                         float* y, int64_t n, int64_t channels) {
  if (n > 0) ChannelAffineKernel<<<Blocks(n), kThreads, 0, stream>>>(x, a, b, y, n, channels);
}

void LaunchBatchNormGradApply(cudaStream_t stream, const BatchNormBackward& g, float* dx) {
  int64_t n = g.rows * g.channels;
  if (n > 0) GradApplyKernel<<<Blocks(n), kThreads, 0, stream>>>(g, dx);
}

}  // namespace dflow::cuda
