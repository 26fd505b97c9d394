// Direct depthwise convolution kernels (ops/cpu/conv2d_depthwise.h). The
// forward pass and the filter gradient walk the output; the input gradient
// walks the input and gathers the outputs each pixel fed, so every thread
// writes only its own rows. The filter gradient sums per-block partials in
// block order (deterministic for a given thread count).
#include "ops/cpu/conv2d_depthwise.h"

#include <algorithm>
#include <vector>

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
  if (multiplier == 1) {  // the common depthwise case: one vectorisable loop
    for (int64_t c = 0; c < channels; ++c) acc[c] += a[c] * b[c];
    return;
  }
  for (int64_t c = 0; c < channels; ++c) {
    T sum = 0;
    for (int64_t m = 0; m < multiplier; ++m) sum += a[c * multiplier + m] * b[c * multiplier + m];
    acc[c] += sum;
  }
}

// visit(x_pixel, tap, out_pixel) for every in-bounds tap of output rows [begin, end).
template <typename Visit>
void ForEachOutputTap(const ConvGeometry& g, int64_t begin, int64_t end, Visit visit) {
  for (int64_t r = begin; r < end; ++r) {
    int64_t n = r / g.out_h, oh = r % g.out_h;
    for (int64_t ow = 0; ow < g.out_w; ++ow)
      for (int64_t kh = 0; kh < g.k_h; ++kh) {
        int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
        if (ih < 0 || ih >= g.in_h) continue;
        for (int64_t kw = 0; kw < g.k_w; ++kw) {
          int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
          if (iw < 0 || iw >= g.in_w) continue;
          visit((n * g.in_h + ih) * g.in_w + iw, kh * g.k_w + kw, r * g.out_w + ow);
        }
      }
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

}  // namespace

template <typename T>
void DepthwiseConv2D(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* w, T* y,
                     const ConvEpilogue<T>& epilogue) {
  const int64_t c = g.in_c, mult = g.out_c / g.in_c, rows = g.batch * g.out_h;
  const int64_t row_size = g.out_w * g.out_c;
  pool.ParallelFor(rows, g.out_w * g.k_h * g.k_w * g.out_c, [&](int64_t begin, int64_t end) {
    std::fill(y + begin * row_size, y + end * row_size, T(0));
    for (int64_t r = begin; r < end; ++r) {
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
  // The output column each (input column, tap) reads, once per call: the
  // divisions in SourceOf would otherwise run for every tap of every row.
  std::vector<int64_t> source_col(g.in_w * g.k_w);
  for (int64_t iw = 0; iw < g.in_w; ++iw)
    for (int64_t kw = 0; kw < g.k_w; ++kw)
      source_col[iw * g.k_w + kw] = SourceOf(iw, kw, g.stride_w, g.pad_left, g.dilation_w, g.out_w);
  pool.ParallelFor(rows, g.in_w * g.k_h * g.k_w * g.out_c, [&](int64_t begin, int64_t end) {
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
