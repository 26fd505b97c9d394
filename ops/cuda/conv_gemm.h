// Convolutions as implicit GEMMs: the matrices of the im2col formulation
// (ops/cuda/conv.cc) read straight from the NHWC tensors, element by element,
// so no column matrix is ever written. Each problem says what A[m, k],
// B[k, n] and the output C[m, n] of one group are; the tiled kernel in
// ops/cuda/conv_gemm.cu multiplies them. Everything here is plain index
// arithmetic, compiled for the host too, so the CPU-only tests check it
// against the CPU convolutions (tests/ops/test_conv_gemm.cc).
//
//   forward  y[pixel, o]      = sum_{(kh, kw, c)} x[pixel's tap (kh, kw), c] * w[kh, kw, c, o]
//   filter   dw[(kh, kw, c), o] = sum_{pixel} x[pixel's tap (kh, kw), c] * dy[pixel, o]
//   input    dx[pixel, c]     = sum_{(kh, kw, o)} dy[output pixel fed by tap (kh, kw), o] * w[kh, kw, c, o]
//
// The input gradient is a gather: an input pixel receives from output pixel
// (ih + pad - kh * dilation) / stride only when that division is exact. The
// set of taps for which it is exact depends only on the pixel's position
// modulo the stride, so the input pixels are split into stride_h * stride_w
// phases, each a GEMM over its own taps alone (a stride-2 transposed
// convolution then costs a quarter of the naive gather).
//
// Indices are 32-bit (the caller checks that every tensor has fewer than
// 2^31 elements) and divisions by the invariant sizes are multiply-and-shift.
#pragma once

#include <cstdint>

#include "ops/host_device.h"

namespace dflow::cuda {

// n / d for 0 <= n < 2^31 and 1 <= d < 2^31 as (mulhi(n, magic) + n) >> shift,
// with 2^shift >= d and magic = floor(2^32 (2^shift - d) / d) + 1 (Granlund
// and Montgomery, "Division by invariant integers using multiplication",
// PLDI 1994). The sum cannot overflow: mulhi(n, magic) < n < 2^31.
class FastDivider {
 public:
  FastDivider() = default;
  explicit FastDivider(uint32_t divisor) : divisor_(divisor) {
    while ((uint64_t{1} << shift_) < divisor) ++shift_;
    magic_ = static_cast<uint32_t>((uint64_t{1} << 32) * ((uint64_t{1} << shift_) - divisor) / divisor + 1);
  }
  DFLOW_HOST_DEVICE int Divide(int n) const {
    uint32_t u = static_cast<uint32_t>(n);
#if defined(__CUDA_ARCH__)
    uint32_t high = __umulhi(u, magic_);
#else
    uint32_t high = static_cast<uint32_t>((uint64_t{u} * magic_) >> 32);
#endif
    return static_cast<int>((high + u) >> shift_);
  }
  // quotient = n / d; returns n % d.
  DFLOW_HOST_DEVICE int DivMod(int n, int& quotient) const {
    quotient = Divide(n);
    return n - quotient * static_cast<int>(divisor_);
  }
  DFLOW_HOST_DEVICE int divisor() const { return static_cast<int>(divisor_); }

 private:
  uint32_t divisor_ = 1, magic_ = 1, shift_ = 0;
};

// Sizes shared by the three problems (ops/conv.h's ConvGeometry in 32 bits).
struct ConvDims {
  int batch, in_h, in_w, in_c;
  int k_h, k_w, filter_c, out_c, groups;
  int out_h, out_w, pad_top, pad_left, stride_h, stride_w, dilation_h, dilation_w;
  DFLOW_HOST_DEVICE int group_out_c() const { return out_c / groups; }
};

inline bool Aligned16(const float* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Four floats from a 16-byte aligned address, or zeros from null.
DFLOW_HOST_DEVICE void Load4(const float* from, float* out) {
  if (!from) {
    out[0] = out[1] = out[2] = out[3] = 0.0f;
    return;
  }
#if defined(__CUDA_ARCH__)
  float4 v = __ldg(reinterpret_cast<const float4*>(from));
  out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
#else
  for (int i = 0; i < 4; ++i) out[i] = from[i];
#endif
}

// What the GEMM's last step does with a forward sum: add the bias of the
// output channel, then clamp (_FusedConv2D's epilogue).
enum class ConvEpilogue : int { kNone, kBias, kBiasRelu, kBiasRelu6 };

DFLOW_HOST_DEVICE float ApplyEpilogue(ConvEpilogue epilogue, float value, const float* bias, int channel) {
  if (epilogue == ConvEpilogue::kNone) return value;
  value += bias[channel];
  if (epilogue == ConvEpilogue::kBias) return value;
  value = value > 0.0f ? value : 0.0f;
  return epilogue == ConvEpilogue::kBiasRelu6 && value > 6.0f ? 6.0f : value;
}

// What the forward and filter-gradient problems both index: output pixels
// (n, oh, ow) and filter taps (kh, kw, c), and the input inside its bounds.
struct ConvIndexing {
  ConvDims d;
  FastDivider out_w, out_h, filter_c, k_w;

  explicit ConvIndexing(const ConvDims& dims)
      : d(dims), out_w(dims.out_w), out_h(dims.out_h), filter_c(dims.filter_c), k_w(dims.k_w) {}
  // Output pixel p (of the batch) as its image and position.
  DFLOW_HOST_DEVICE void SplitPixel(int p, int& image, int& oh, int& ow) const {
    int rest;
    ow = out_w.DivMod(p, rest);
    oh = out_h.DivMod(rest, image);
  }
  // Tap t of a group's filter as its position; returns its channel.
  DFLOW_HOST_DEVICE int SplitTap(int t, int& kh, int& kw) const {
    int tap, c = filter_c.DivMod(t, tap);
    kw = k_w.DivMod(tap, kh);
    return c;
  }
  DFLOW_HOST_DEVICE bool Inside(int ih, int iw) const {
    return ih >= 0 && ih < d.in_h && iw >= 0 && iw < d.in_w;
  }
};

// Forward: m = output pixel (n, oh, ow), k = tap (kh, kw, c), n = output channel of the group.
struct ConvForwardGemm : ConvIndexing {
  int m, n, k;
  const float* x;
  const float* w;
  float* y;
  const float* bias;  // with an epilogue other than kNone
  ConvEpilogue epilogue;

  ConvForwardGemm(const ConvDims& dims, const float* x_, const float* w_, float* y_,
                  const float* bias_ = nullptr, ConvEpilogue epilogue_ = ConvEpilogue::kNone)
      : ConvIndexing(dims), m(dims.batch * dims.out_h * dims.out_w), n(dims.group_out_c()),
        k(dims.k_h * dims.k_w * dims.filter_c), x(x_), w(w_), y(y_), bias(bias_), epilogue(epilogue_) {}

  // Row m's first input element (its image and group) and its top-left tap.
  struct Row {
    int image_offset, ih, iw;
    bool valid;
  };
  DFLOW_HOST_DEVICE Row RowAt(int row, int group) const {
    int image, oh, ow;
    SplitPixel(row, image, oh, ow);
    return {image * d.in_h * d.in_w * d.in_c + group * d.filter_c, oh * d.stride_h - d.pad_top,
            ow * d.stride_w - d.pad_left, row < m};
  }
  // x at row r's tap `col`; null outside the image.
  DFLOW_HOST_DEVICE const float* Source(const Row& r, int col) const {
    int kh, kw, c = SplitTap(col, kh, kw);
    int ih = r.ih + kh * d.dilation_h, iw = r.iw + kw * d.dilation_w;
    return r.valid && Inside(ih, iw) ? x + r.image_offset + (ih * d.in_w + iw) * d.in_c + c : nullptr;
  }
  DFLOW_HOST_DEVICE float A(const Row& r, int col, int /*group*/) const {
    const float* from = Source(r, col);
    return from ? *from : 0.0f;
  }
  // A[r, col .. col + 3], for col a multiple of 4 when runs_of_4: one tap,
  // four consecutive channels (16-byte aligned: every channel count is a multiple of 4).
  bool runs_of_4() const { return d.filter_c % 4 == 0 && Aligned16(x); }
  DFLOW_HOST_DEVICE void A4(const Row& r, int col, int /*group*/, float* out) const {
    Load4(Source(r, col), out);
  }
  DFLOW_HOST_DEVICE float B(int row, int col, int group) const {
    return w[row * d.out_c + group * n + col];
  }
  DFLOW_HOST_DEVICE void Store(int row, int col, int group, float value) const {
    int channel = group * n + col;
    y[row * d.out_c + channel] = ApplyEpilogue(epilogue, value, bias, channel);
  }
};

// Filter gradient: m = tap (kh, kw, c), k = output pixel (n, oh, ow), n = output channel of the group.
struct ConvFilterGemm : ConvIndexing {
  int m, n, k;
  const float* x;
  const float* dy;
  float* dw;

  ConvFilterGemm(const ConvDims& dims, const float* x_, const float* dy_, float* dw_)
      : ConvIndexing(dims), m(dims.k_h * dims.k_w * dims.filter_c), n(dims.group_out_c()),
        k(dims.batch * dims.out_h * dims.out_w), x(x_), dy(dy_), dw(dw_) {}

  // Row m's input channel and the offsets of its tap from an output pixel's top-left.
  struct Row {
    int channel, dh, dw;
    bool valid;
  };
  DFLOW_HOST_DEVICE Row RowAt(int row, int group) const {
    int kh, kw, c = SplitTap(row, kh, kw);
    return {group * d.filter_c + c, kh * d.dilation_h - d.pad_top, kw * d.dilation_w - d.pad_left,
            row < m};
  }
  DFLOW_HOST_DEVICE float A(const Row& r, int col, int /*group*/) const {
    int image, oh, ow;
    SplitPixel(col, image, oh, ow);
    int ih = oh * d.stride_h + r.dh, iw = ow * d.stride_w + r.dw;
    return r.valid && Inside(ih, iw) ? x[((image * d.in_h + ih) * d.in_w + iw) * d.in_c + r.channel] : 0.0f;
  }
  // Consecutive k are pixels, not consecutive in memory.
  bool runs_of_4() const { return false; }
  DFLOW_HOST_DEVICE void A4(const Row& r, int col, int group, float* out) const {
    for (int i = 0; i < 4; ++i) out[i] = A(r, col + i, group);
  }
  DFLOW_HOST_DEVICE float B(int row, int col, int group) const {
    return dy[row * d.out_c + group * n + col];
  }
  DFLOW_HOST_DEVICE void Store(int row, int col, int group, float value) const {
    dw[row * d.out_c + group * n + col] = value;
  }
};

// Input gradient of one phase: the input pixels (n, first_h + i * stride_h,
// first_w + j * stride_w); m = such a pixel, k = (tap of the phase, o), n =
// input channel of the group. Tap (kh, kw) of the phase reaches output pixel
// (i + out_dh, j + out_dw), its offsets computed once here: no division per element.
struct ConvInputGemm {
  static constexpr int kMaxTaps = 16;  // per dim; larger kernels take the im2col path
  ConvDims d;
  int m, n, k;
  // The phase's taps per dim (kh whose division is exact) and their output offsets.
  int tap_h[kMaxTaps], tap_w[kMaxTaps], out_dh[kMaxTaps], out_dw[kMaxTaps];
  int first_h, first_w, rows_h, rows_w, taps_h, taps_w;
  FastDivider cols_div, rows_div, group_out_c, taps_w_div;
  const float* w;
  const float* dy;
  float* dx;

  // The phase of input pixels congruent to (first_h, first_w) modulo the strides.
  ConvInputGemm(const ConvDims& dims, int first_h_, int first_w_, const float* w_,
                const float* dy_, float* dx_)
      : d(dims), first_h(first_h_), first_w(first_w_),
        rows_h((dims.in_h - first_h_ + dims.stride_h - 1) / dims.stride_h),
        rows_w((dims.in_w - first_w_ + dims.stride_w - 1) / dims.stride_w),
        taps_h(Taps(first_h_ + dims.pad_top, dims.k_h, dims.dilation_h, dims.stride_h, tap_h, out_dh)),
        taps_w(Taps(first_w_ + dims.pad_left, dims.k_w, dims.dilation_w, dims.stride_w, tap_w, out_dw)),
        cols_div(rows_w), rows_div(rows_h), group_out_c(dims.group_out_c()),
        taps_w_div(taps_w > 0 ? taps_w : 1), w(w_), dy(dy_), dx(dx_) {
    m = dims.batch * rows_h * rows_w;
    n = dims.filter_c;
    k = taps_h * taps_w * dims.group_out_c();
  }
  // The taps t < size with (offset - t * dilation) divisible by stride into
  // taps, with (offset - t * dilation) / stride into out (at most kMaxTaps:
  // the caller checks size); returns how many.
  static int Taps(int offset, int size, int dilation, int stride, int* taps, int* out) {
    int count = 0;
    for (int t = 0; t < size && count < kMaxTaps; ++t) {
      int reach = offset - t * dilation;
      if (reach % stride != 0) continue;
      taps[count] = t;
      out[count++] = reach / stride;
    }
    return count;
  }

  struct Row {
    int image, i, j;
    bool valid;
  };
  DFLOW_HOST_DEVICE Row RowAt(int row, int /*group*/) const {
    int rest, j = cols_div.DivMod(row, rest), image, i = rows_div.DivMod(rest, image);
    return {image, i, j, row < m};
  }
  // The tap index along each dim and output channel o of column `col` of A (row of B).
  DFLOW_HOST_DEVICE void TapOf(int col, int& th, int& tw, int& o) const {
    int tap;
    o = group_out_c.DivMod(col, tap);
    tw = taps_w_div.DivMod(tap, th);
  }
  // dy at the output pixel tap (th, tw) reaches from row r; null outside.
  DFLOW_HOST_DEVICE const float* Source(const Row& r, int th, int tw, int o, int group) const {
    int oh = r.i + out_dh[th], ow = r.j + out_dw[tw];
    bool inside = r.valid && oh >= 0 && oh < d.out_h && ow >= 0 && ow < d.out_w;
    return inside ? dy + ((r.image * d.out_h + oh) * d.out_w + ow) * d.out_c +
                        group * group_out_c.divisor() + o
                  : nullptr;
  }
  DFLOW_HOST_DEVICE float A(const Row& r, int col, int group) const {
    int th, tw, o;
    TapOf(col, th, tw, o);
    const float* from = Source(r, th, tw, o, group);
    return from ? *from : 0.0f;
  }
  // Four consecutive output channels of one tap (16-byte aligned: O and the
  // group's channels are multiples of 4 when runs_of_4).
  bool runs_of_4() const { return d.group_out_c() % 4 == 0 && Aligned16(dy); }
  DFLOW_HOST_DEVICE void A4(const Row& r, int col, int group, float* out) const {
    int th, tw, o;
    TapOf(col, th, tw, o);
    Load4(Source(r, th, tw, o, group), out);
  }
  DFLOW_HOST_DEVICE float B(int row, int col, int group) const {
    int th, tw, o;
    TapOf(row, th, tw, o);
    return w[((tap_h[th] * d.k_w + tap_w[tw]) * d.filter_c + col) * d.out_c +
             group * group_out_c.divisor() + o];
  }
  DFLOW_HOST_DEVICE void Store(int row, int col, int group, float value) const {
    Row r = RowAt(row, group);
    int ih = first_h + r.i * d.stride_h, iw = first_w + r.j * d.stride_w;
    dx[((r.image * d.in_h + ih) * d.in_w + iw) * d.in_c + group * d.filter_c + col] = value;
  }
};

}  // namespace dflow::cuda
