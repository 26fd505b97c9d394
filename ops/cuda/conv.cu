// CUDA kernels of the convolutions (NHWC, float32): im2col, its adjoint as a
// gather (each input element sums the column entries copied from it, so the
// result is deterministic), and direct depthwise kernels (one thread per
// output or input element; one block per filter element for its gradient).
#include "ops/cuda/grid.cuh"
#include "ops/cuda/conv_launch.h"

namespace dflow::cuda {
namespace {

// The output index `o` along one dim that tap k of input index `i` feeds:
// i = o * stride - pad + k * dilation. -1 when none (not on the stride, or
// outside [0, out)).
__device__ int64_t OutputOf(int64_t i, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                            int64_t out) {
  int64_t numerator = i + pad - k * dilation;
  if (numerator < 0 || numerator % stride != 0) return -1;
  int64_t o = numerator / stride;
  return o < out ? o : -1;
}

__global__ void Im2ColKernel(ConvShape s, const float* x, int64_t first, int64_t images,
                             float* cols) {
  const int64_t patch = s.patch(), rows = images * s.out_h * s.out_w;
  DFLOW_GRID_STRIDE(i, s.groups * rows * patch) {
    int64_t c = i % s.filter_c;
    int64_t kw = (i / s.filter_c) % s.k_w;
    int64_t kh = (i / (s.filter_c * s.k_w)) % s.k_h;
    int64_t r = (i / patch) % rows;
    int64_t g = i / (patch * rows);
    int64_t ow = r % s.out_w, oh = (r / s.out_w) % s.out_h, n = first + r / (s.out_w * s.out_h);
    int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h;
    int64_t iw = ow * s.stride_w - s.pad_left + kw * s.dilation_w;
    bool inside = ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w;
    cols[i] = inside ? x[((n * s.in_h + ih) * s.in_w + iw) * s.in_c + g * s.filter_c + c] : 0.0f;
  }
}

__global__ void Col2ImKernel(ConvShape s, const float* cols, int64_t first, int64_t images,
                             float* dx) {
  const int64_t patch = s.patch(), rows = images * s.out_h * s.out_w;
  DFLOW_GRID_STRIDE(i, images * s.in_h * s.in_w * s.in_c) {
    int64_t ch = i % s.in_c;
    int64_t iw = (i / s.in_c) % s.in_w;
    int64_t ih = (i / (s.in_c * s.in_w)) % s.in_h;
    int64_t n = i / (s.in_c * s.in_w * s.in_h);  // within the chunk
    int64_t g = ch / s.filter_c, c = ch % s.filter_c;
    const float* group_cols = cols + g * rows * patch;
    float sum = 0;
    for (int64_t kh = 0; kh < s.k_h; ++kh) {
      int64_t oh = OutputOf(ih, kh, s.stride_h, s.pad_top, s.dilation_h, s.out_h);
      if (oh < 0) continue;
      for (int64_t kw = 0; kw < s.k_w; ++kw) {
        int64_t ow = OutputOf(iw, kw, s.stride_w, s.pad_left, s.dilation_w, s.out_w);
        if (ow < 0) continue;
        int64_t r = (n * s.out_h + oh) * s.out_w + ow;
        sum += group_cols[r * patch + (kh * s.k_w + kw) * s.filter_c + c];
      }
    }
    dx[first * s.in_h * s.in_w * s.in_c + i] = sum;
  }
}

__global__ void DepthwiseKernel(ConvShape s, const float* x, const float* w, float* y) {
  const int64_t multiplier = s.out_c / s.in_c;
  DFLOW_GRID_STRIDE(i, s.batch * s.out_h * s.out_w * s.out_c) {
    int64_t o = i % s.out_c;
    int64_t ow = (i / s.out_c) % s.out_w;
    int64_t oh = (i / (s.out_c * s.out_w)) % s.out_h;
    int64_t n = i / (s.out_c * s.out_w * s.out_h);
    int64_t c = o / multiplier;
    float sum = 0;
    for (int64_t kh = 0; kh < s.k_h; ++kh) {
      int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h;
      if (ih < 0 || ih >= s.in_h) continue;
      for (int64_t kw = 0; kw < s.k_w; ++kw) {
        int64_t iw = ow * s.stride_w - s.pad_left + kw * s.dilation_w;
        if (iw < 0 || iw >= s.in_w) continue;
        sum += x[((n * s.in_h + ih) * s.in_w + iw) * s.in_c + c] * w[(kh * s.k_w + kw) * s.out_c + o];
      }
    }
    y[i] = sum;
  }
}

__global__ void DepthwiseBackpropInputKernel(ConvShape s, const float* w, const float* dy,
                                             float* dx) {
  const int64_t multiplier = s.out_c / s.in_c;
  DFLOW_GRID_STRIDE(i, s.batch * s.in_h * s.in_w * s.in_c) {
    int64_t c = i % s.in_c;
    int64_t iw = (i / s.in_c) % s.in_w;
    int64_t ih = (i / (s.in_c * s.in_w)) % s.in_h;
    int64_t n = i / (s.in_c * s.in_w * s.in_h);
    float sum = 0;
    for (int64_t kh = 0; kh < s.k_h; ++kh) {
      int64_t oh = OutputOf(ih, kh, s.stride_h, s.pad_top, s.dilation_h, s.out_h);
      if (oh < 0) continue;
      for (int64_t kw = 0; kw < s.k_w; ++kw) {
        int64_t ow = OutputOf(iw, kw, s.stride_w, s.pad_left, s.dilation_w, s.out_w);
        if (ow < 0) continue;
        const float* grad = dy + ((n * s.out_h + oh) * s.out_w + ow) * s.out_c + c * multiplier;
        const float* taps = w + (kh * s.k_w + kw) * s.out_c + c * multiplier;
        for (int64_t m = 0; m < multiplier; ++m) sum += grad[m] * taps[m];
      }
    }
    dx[i] = sum;
  }
}

// Block b computes dw[b] for b = (kh, kw, o): the sum over every output
// pixel of x at its tap times dy, strided over the block's threads, then a
// shared-memory tree sum.
__global__ void DepthwiseBackpropFilterKernel(ConvShape s, const float* x, const float* dy,
                                              float* dw) {
  __shared__ float partial[kThreads];
  const int64_t multiplier = s.out_c / s.in_c;
  const int64_t b = blockIdx.x;
  const int64_t o = b % s.out_c, kw = (b / s.out_c) % s.k_w, kh = b / (s.out_c * s.k_w);
  const int64_t c = o / multiplier;
  float sum = 0;
  for (int64_t p = threadIdx.x; p < s.batch * s.out_h * s.out_w; p += kThreads) {
    int64_t ow = p % s.out_w, oh = (p / s.out_w) % s.out_h, n = p / (s.out_w * s.out_h);
    int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h;
    int64_t iw = ow * s.stride_w - s.pad_left + kw * s.dilation_w;
    if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
    sum += x[((n * s.in_h + ih) * s.in_w + iw) * s.in_c + c] * dy[p * s.out_c + o];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) dw[b] = partial[0];
}

}  // namespace

void LaunchIm2Col(cudaStream_t stream, const ConvShape& s, const float* x, int64_t first,
                  int64_t images, float* cols) {
  int64_t n = s.groups * images * s.out_h * s.out_w * s.patch();
  Im2ColKernel<<<Blocks(n), kThreads, 0, stream>>>(s, x, first, images, cols);
}

void LaunchCol2Im(cudaStream_t stream, const ConvShape& s, const float* cols, int64_t first,
                  int64_t images, float* dx) {
  int64_t n = images * s.in_h * s.in_w * s.in_c;
  Col2ImKernel<<<Blocks(n), kThreads, 0, stream>>>(s, cols, first, images, dx);
}

void LaunchDepthwiseConv(cudaStream_t stream, const ConvShape& s, const float* x, const float* w,
                         float* y) {
  DepthwiseKernel<<<Blocks(s.batch * s.out_h * s.out_w * s.out_c), kThreads, 0, stream>>>(s, x, w, y);
}

void LaunchDepthwiseBackpropInput(cudaStream_t stream, const ConvShape& s, const float* w,
                                  const float* dy, float* dx) {
  int64_t n = s.batch * s.in_h * s.in_w * s.in_c;
  DepthwiseBackpropInputKernel<<<Blocks(n), kThreads, 0, stream>>>(s, w, dy, dx);
}

void LaunchDepthwiseBackpropFilter(cudaStream_t stream, const ConvShape& s, const float* x,
                                   const float* dy, float* dw) {
  int64_t filter = s.k_h * s.k_w * s.out_c;
  if (filter == 0) return;
  DepthwiseBackpropFilterKernel<<<static_cast<unsigned>(filter), kThreads, 0, stream>>>(s, x, dy, dw);
}

}  // namespace dflow::cuda
