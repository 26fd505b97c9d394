// A convolution's sizes as the CUDA kernels take them: plain C++, so that
// the host-compiled index arithmetic (quant_sums.h) and its CPU-only tests
// use it too. The host code makes it with ConvShapeOf (kernel_util.h).
#pragma once

#include <cstdint>

namespace dflow::cuda {

// One convolution's sizes (ops/conv.h's ConvGeometry, flattened for the
// device). Input [N, H, W, C], filter [KH, KW, Cg, O], output [N, OH, OW, O];
// groups = C / Cg. Output (oh, ow) tap (kh, kw) reads input row
// oh * stride_h - pad_top + kh * dilation_h (and the same for columns).
struct ConvShape {
  int64_t batch, in_h, in_w, in_c;
  int64_t k_h, k_w, filter_c, out_c, groups;
  int64_t out_h, out_w, pad_top, pad_left, stride_h, stride_w, dilation_h, dilation_w;
  // Columns of one group's im2col matrix: KH * KW * Cg.
  constexpr int64_t patch() const { return k_h * k_w * filter_c; }
};

}  // namespace dflow::cuda
