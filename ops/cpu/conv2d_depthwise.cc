// Direct depthwise convolution kernels (ops/cpu/conv2d_depthwise.h). The
// forward pass and the filter gradient walk the output; the input gradient
// walks the input and gathers the outputs each pixel fed, so every thread
// writes only its own rows. The filter gradient sums per-block partials in
// block order (deterministic for a given thread count).
//
// With a channel multiplier of 1 (MobileNet's case) and rows of up to
// kMaxTapRowBytes, each destination pixel of the forward pass and of the
// input gradient is one SumOfProducts over its list of in-bounds taps
// (ops/cpu/channel_products.h): the sum stays in registers instead of being
// re-read and re-stored once per tap. (The same idea for the filter gradient,
// a register sum per tap over runs of pixels, measured slower than the loop
// below on 4 of MobileNet's 6 layer shapes, so it is not used.)
#include "ops/cpu/conv2d_depthwise.h"

#include <algorithm>
#include <vector>

#include "ops/cpu/channel_products.h"
#include "ops/cpu/conv_util.h"

namespace dflow::cpu {
namespace {

// acc[c*M + m] += a[c] * b[c*M + m] for c < channels, m < M.
template <typename T>
void SpreadMultiply(const T* a, const T* b, T* acc, int64_t channels, int64_t multiplier) {
  if (multiplier == 1) {
    for (int64_t c = 0; c < channels; ++c) acc[c] += a[c] * b[c];
    return;
  }
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t m = 0; m < multiplier; ++m) acc[c * multiplier + m] += a[c] * b[c * multiplier + m];
}

// acc[c] += sum_m a[c*M + m] * b[c*M + m].
template <typename T>
void GatherMultiply(const T* a, const T* b, T* acc, int64_t channels, int64_t multiplier) {
  if (multiplier == 1) {  // one vectorisable loop
    for (int64_t c = 0; c < channels; ++c) acc[c] += a[c] * b[c];
    return;
  }
  for (int64_t c = 0; c < channels; ++c) {
    T sum = 0;
    for (int64_t m = 0; m < multiplier; ++m) sum += a[c * multiplier + m] * b[c * multiplier + m];
    acc[c] += sum;
  }
}

// The output index along one dim that tap k puts on input index i, or -1:
// o*stride - pad + k*dilation = i.
int64_t SourceOf(int64_t i, int64_t k, int64_t stride, int64_t pad, int64_t dilation,
                 int64_t out) {
  int64_t t = i + pad - k * dilation;
  if (t < 0 || t % stride != 0 || t / stride >= out) return -1;
  return t / stride;
}

// The output column each (input column iw, tap kw) reads, at iw * KW + kw,
// once per call: the divisions in SourceOf would otherwise run for every tap
// of every row.
std::vector<int64_t> SourceColumns(const ConvGeometry& g) {
  std::vector<int64_t> source_col(g.in_w * g.k_w);
  for (int64_t iw = 0; iw < g.in_w; ++iw)
    for (int64_t kw = 0; kw < g.k_w; ++kw)
      source_col[iw * g.k_w + kw] = SourceOf(iw, kw, g.stride_w, g.pad_left, g.dilation_w, g.out_w);
  return source_col;
}

// Multiplier 1, output row r: y[out, :] = sum over the in-bounds taps of
// x[in, :] * w[tap, :]. src and taps have room for KH*KW pointers.
template <typename T>
void DepthwiseRow(const ConvGeometry& g, const T* x, const T* w, int64_t r, const T** src,
                  const T** taps, T* y_row) {
  const int64_t c = g.in_c, n = r / g.out_h, oh = r % g.out_h;
  for (int64_t ow = 0; ow < g.out_w; ++ow) {
    // The in-bounds taps, written out (as in the int8 kernel): through a
    // visitor lambda (ForEachOutputTap's form) this kernel ran 1.5x slower.
    int64_t count = 0;
    for (int64_t kh = 0; kh < g.k_h; ++kh) {
      const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
      if (ih < 0 || ih >= g.in_h) continue;
      for (int64_t kw = 0; kw < g.k_w; ++kw) {
        const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
        if (iw < 0 || iw >= g.in_w) continue;
        src[count] = x + ((n * g.in_h + ih) * g.in_w + iw) * c;
        taps[count++] = w + (kh * g.k_w + kw) * c;
      }
    }
    SumOfProducts(src, taps, count, c, y_row + ow * c);
  }
}

// Multiplier 1, input row r: dx[in, :] = sum over the (tap, output pixel)
// pairs that read input pixel `in` of dy[out, :] * w[tap, :].
template <typename T>
void DepthwiseInputRow(const ConvGeometry& g, const std::vector<int64_t>& source_col, const T* w,
                       const T* dy, int64_t r, const T** src, const T** taps, T* dx_row) {
  const int64_t c = g.in_c, n = r / g.in_h, ih = r % g.in_h;
  for (int64_t iw = 0; iw < g.in_w; ++iw) {
    int64_t count = 0;
    for (int64_t kh = 0; kh < g.k_h; ++kh) {
      const int64_t oh = SourceOf(ih, kh, g.stride_h, g.pad_top, g.dilation_h, g.out_h);
      if (oh < 0) continue;
      const T* dy_row = dy + (n * g.out_h + oh) * g.out_w * c;
      for (int64_t kw = 0; kw < g.k_w; ++kw) {
        const int64_t ow = source_col[iw * g.k_w + kw];
        if (ow < 0) continue;
        src[count] = dy_row + ow * c;
        taps[count++] = w + (kh * g.k_w + kw) * c;
      }
    }
    SumOfProducts(src, taps, count, c, dx_row + iw * c);
  }
}

// Multiplier 1 and channel rows narrow enough for SumOfProducts.
template <typename T>
bool SumsByPixel(const ConvGeometry& g) {
  return g.out_c == g.in_c && g.in_c * int64_t{sizeof(T)} <= kMaxTapRowBytes;
}

}  // namespace

template <typename T>
void DepthwiseConv2D(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* w, T* y,
                     const ConvEpilogue<T>& epilogue) {
  const int64_t c = g.in_c, mult = g.out_c / g.in_c, rows = g.batch * g.out_h;
  const int64_t row_size = g.out_w * g.out_c;
  const bool by_pixel = SumsByPixel<T>(g);
  pool.ParallelFor(rows, g.out_w * g.k_h * g.k_w * g.out_c, [&](int64_t begin, int64_t end) {
    std::vector<const T*> src(g.k_h * g.k_w), taps(g.k_h * g.k_w);
    if (!by_pixel) std::fill(y + begin * row_size, y + end * row_size, T(0));
    for (int64_t r = begin; r < end; ++r) {
      if (by_pixel)
        DepthwiseRow(g, x, w, r, src.data(), taps.data(), y + r * row_size);
      else
        ForEachOutputTap(g, r, r + 1, [&](int64_t in, int64_t tap, int64_t out) {
          SpreadMultiply(x + in * c, w + tap * g.out_c, y + out * g.out_c, c, mult);
        });
      if (!epilogue.empty()) epilogue.Apply(y + r * row_size, g.out_w, g.out_c);
    }
  });
}

template <typename T>
void DepthwiseBackpropInput(ThreadPool& pool, const ConvGeometry& g, const T* w, const T* dy,
                            T* dx) {
  const int64_t c = g.in_c, mult = g.out_c / g.in_c, rows = g.batch * g.in_h;
  const std::vector<int64_t> source_col = SourceColumns(g);
  const bool by_pixel = SumsByPixel<T>(g);
  pool.ParallelFor(rows, g.in_w * g.k_h * g.k_w * g.out_c, [&](int64_t begin, int64_t end) {
    if (by_pixel) {
      std::vector<const T*> src(g.k_h * g.k_w), taps(g.k_h * g.k_w);
      for (int64_t r = begin; r < end; ++r)
        DepthwiseInputRow(g, source_col, w, dy, r, src.data(), taps.data(), dx + r * g.in_w * c);
      return;
    }
    std::fill(dx + begin * g.in_w * c, dx + end * g.in_w * c, T(0));
    for (int64_t r = begin; r < end; ++r) {
      int64_t n = r / g.in_h, ih = r % g.in_h;
      for (int64_t kh = 0; kh < g.k_h; ++kh) {
        int64_t oh = SourceOf(ih, kh, g.stride_h, g.pad_top, g.dilation_h, g.out_h);
        if (oh < 0) continue;
        for (int64_t iw = 0; iw < g.in_w; ++iw)
          for (int64_t kw = 0; kw < g.k_w; ++kw) {
            int64_t ow = source_col[iw * g.k_w + kw];
            if (ow < 0) continue;
            const T* grad = dy + ((n * g.out_h + oh) * g.out_w + ow) * g.out_c;
            GatherMultiply(grad, w + (kh * g.k_w + kw) * g.out_c, dx + (r * g.in_w + iw) * c, c,
                           mult);
          }
      }
    }
  });
}

template <typename T>
void DepthwiseBackpropFilter(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* dy,
                             T* dw) {
  const int64_t c = g.in_c, mult = g.out_c / g.in_c, rows = g.batch * g.out_h;
  const int64_t size = g.k_h * g.k_w * g.out_c, cost = g.out_w * size;
  const int64_t blocks = NumBlocks(pool, rows, cost);
  std::vector<std::vector<T>> partial(blocks, std::vector<T>(size, T(0)));
  ForBlocks(pool, blocks, rows, cost, [&](int64_t block, int64_t begin, int64_t end, ThreadPool*) {
    T* acc = partial[block].data();
    ForEachOutputTap(g, begin, end, [&](int64_t in, int64_t tap, int64_t out) {
      SpreadMultiply(x + in * c, dy + out * g.out_c, acc + tap * g.out_c, c, mult);
    });
  });
  std::copy(partial[0].begin(), partial[0].end(), dw);
  for (int64_t b = 1; b < blocks; ++b)
    for (int64_t i = 0; i < size; ++i) dw[i] += partial[b][i];
}

#define DFLOW_DEPTHWISE_INSTANTIATE(T)                                                           \
  template void DepthwiseConv2D<T>(ThreadPool&, const ConvGeometry&, const T*, const T*, T*,     \
                                   const ConvEpilogue<T>&);                                    \
  template void DepthwiseBackpropInput<T>(ThreadPool&, const ConvGeometry&, const T*, const T*, \
                                          T*);                                                  \
  template void DepthwiseBackpropFilter<T>(ThreadPool&, const ConvGeometry&, const T*, const T*, \
                                           T*);
DFLOW_DEPTHWISE_INSTANTIATE(float)
DFLOW_DEPTHWISE_INSTANTIATE(double)

}  // namespace dflow::cpu
