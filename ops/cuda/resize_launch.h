// Launchers of the resize CUDA kernels (ops/cuda/resize.cu), NHWC float32.
// The source coordinates of every output row and column are computed on the
// host with the CPU kernels' rules (ops/cpu/resize_util.h) and copied to
// the GPU; the kernels only gather (forward) or scatter (gradients).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace dflow::cuda {

// [batch, in_h, in_w, channels] <-> [batch, out_h, out_w, channels].
struct ResizeShape {
  int64_t batch, in_h, in_w, out_h, out_w, channels;
  constexpr int64_t out_count() const { return batch * out_h * out_w * channels; }
  constexpr int64_t in_count() const { return batch * in_h * in_w * channels; }
};

// Device arrays: per output row the input rows read (lower, upper) and the
// weight of the upper one; the same per output column. Nearest neighbour
// uses only the lower rows and columns.
struct ResizeTaps {
  const int64_t *y_lower, *y_upper, *x_lower, *x_upper;
  const float *y_lerp, *x_lerp;
};

void LaunchResizeNearest(cudaStream_t stream, const ResizeShape& s, const ResizeTaps& taps,
                         const float* in, float* out);
void LaunchResizeBilinear(cudaStream_t stream, const ResizeShape& s, const ResizeTaps& taps,
                          const float* in, float* out);
// dx (zeroed here) += grads at the taps each grads element was read from.
void LaunchResizeNearestGrad(cudaStream_t stream, const ResizeShape& s, const ResizeTaps& taps,
                             const float* grads, float* dx);
void LaunchResizeBilinearGrad(cudaStream_t stream, const ResizeShape& s, const ResizeTaps& taps,
                              const float* grads, float* dx);

}  // namespace dflow::cuda
