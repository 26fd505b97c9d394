// Launchers of the convolution CUDA kernels, NHWC float32: the implicit
// GEMMs (ops/cuda/conv_gemm.cu), im2col and its adjoint for the cuBLAS path,
// and direct depthwise kernels (ops/cuda/conv.cu). The OpKernels are in
// ops/cuda/conv.cc.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "ops/cuda/conv_gemm.h"
#include "ops/cuda/conv_shape.h"

namespace dflow::cuda {

// cols[g][r][(kh, kw, c)] for images [first, first + images), r over their
// output pixels: x[n, ih, iw, g * Cg + c], zero outside the image.
void LaunchIm2Col(cudaStream_t stream, const ConvShape& s, const float* x, int64_t first,
                  int64_t images, float* cols);
// The adjoint: dx of images [first, first + images) = the sum of every cols
// entry copied from each input element (a gather, so no atomics); writes
// every dx element of those images.
void LaunchCol2Im(cudaStream_t stream, const ConvShape& s, const float* cols, int64_t first,
                  int64_t images, float* dx);

// Depthwise (Cg = 1, groups = C, O = C * multiplier), direct:
// y[n, oh, ow, o] = sum_{kh, kw} x[n, ih, iw, o / multiplier] * w[kh, kw, 0, o].
void LaunchDepthwiseConv(cudaStream_t stream, const ConvShape& s, const float* x, const float* w,
                         float* y);
void LaunchDepthwiseBackpropInput(cudaStream_t stream, const ConvShape& s, const float* w,
                                  const float* dy, float* dx);
void LaunchDepthwiseBackpropFilter(cudaStream_t stream, const ConvShape& s, const float* x,
                                   const float* dy, float* dw);

// How an implicit GEMM of m x n outputs per group and a reduction over k
// is cut: `splits` slices of k_per_split (a multiple of 8) each.
struct ConvGemmPlan {
  int splits;
  int k_per_split;
  // Floats of partial sums the launch needs (none without a split).
  int64_t partial_floats(int64_t m, int64_t n, int64_t groups) const {
    return splits > 1 ? splits * groups * m * n : 0;
  }
};
ConvGemmPlan PlanConvGemm(int64_t m, int64_t n, int64_t k, int64_t groups);
// Each computes its problem with `plan`; `partial` holds
// plan.partial_floats(...) floats (null when none are needed).
void LaunchConvForwardGemm(cudaStream_t stream, const ConvForwardGemm& p, const ConvGemmPlan& plan,
                           float* partial);
void LaunchConvFilterGemm(cudaStream_t stream, const ConvFilterGemm& p, const ConvGemmPlan& plan,
                          float* partial);
void LaunchConvInputGemm(cudaStream_t stream, const ConvInputGemm& p, const ConvGemmPlan& plan,
                         float* partial);

}  // namespace dflow::cuda
