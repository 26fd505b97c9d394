// The exact int32 sums of the GPU's direct int8 products (ops/cuda/quant.cu),
// one output at a time: plain index arithmetic, compiled for the host too,
// so that the CPU-only tests check it against the CPU kernels on every kind
// of convolution (tests/ops/test_quant_sums.cc).
#pragma once

#include <cstdint>

#include "ops/cuda/conv_shape.h"
#include "ops/host_device.h"

namespace dflow::cuda {

// Output `at` (NHWC, the channel o fastest) of the int8 convolution of every
// group kind (depthwise: Cg = 1): the sum over its window inside the image
// and its group's Cg channels of (x - zero) * w[kh, kw, c, o]. Taps in the
// padding would add (zero - zero) * w = 0, so they are skipped.
DFLOW_HOST_DEVICE int32_t ConvWindowSum(const ConvShape& s, const uint8_t* x, const int8_t* w, int32_t zero,
                                        int64_t at) {
  const int64_t o = at % s.out_c, pixel = at / s.out_c;
  const int64_t ow = pixel % s.out_w, oh = pixel / s.out_w % s.out_h, n = pixel / (s.out_w * s.out_h);
  const int64_t first_c = o / (s.out_c / s.groups) * s.filter_c;
  int32_t acc = 0;
  for (int64_t kh = 0; kh < s.k_h; ++kh) {
    const int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h;
    if (ih < 0 || ih >= s.in_h) continue;
    for (int64_t kw = 0; kw < s.k_w; ++kw) {
      const int64_t iw = ow * s.stride_w - s.pad_left + kw * s.dilation_w;
      if (iw < 0 || iw >= s.in_w) continue;
      const uint8_t* px = x + ((n * s.in_h + ih) * s.in_w + iw) * s.in_c + first_c;
      const int8_t* pw = w + (kh * s.k_w + kw) * s.filter_c * s.out_c + o;
      for (int64_t c = 0; c < s.filter_c; ++c) acc += (static_cast<int32_t>(px[c]) - zero) * pw[c * s.out_c];
    }
  }
  return acc;
}

// Output at = (i, j) of the int8 dense layer, a [m, k] times b [k, n] (b
// [n, k] with transpose_b): sum_p (a[i, p] - zero) * b[p, j].
DFLOW_HOST_DEVICE int32_t DenseSum(int64_t k, int64_t n, bool transpose_b, const uint8_t* a, const int8_t* b,
                                   int32_t zero, int64_t at) {
  const int64_t i = at / n, j = at % n;
  const uint8_t* row = a + i * k;
  const int64_t b_step = transpose_b ? 1 : n;
  const int8_t* column = b + (transpose_b ? j * k : j);
  int32_t acc = 0;
  for (int64_t p = 0; p < k; ++p) acc += (static_cast<int32_t>(row[p]) - zero) * column[p * b_step];
  return acc;
}

}  // namespace dflow::cuda
