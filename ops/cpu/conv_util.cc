// Shared pieces of the CPU convolution kernels (ops/cpu/conv_util.h).
#include "ops/cpu/conv_util.h"

#include <algorithm>

#include "ops/cpu/matmul.h"

namespace dflow::cpu {

ConvGeometry KernelGeometry(const Node& node, const ConvParams& params, const Shape& input,
                            const Shape& filter) {
  try {
    return MakeConvGeometry(params, input, filter);
  } catch (const Error& e) {
    throw Error(e.code(), StrCat(node.Describe(), ": ", e.message()));
  }
}

Shape SizesInput(const Node& node, const Tensor& sizes, const char* name) {
  DFLOW_REQUIRE(sizes.rank() == 1 && sizes.NumElements() == 4, node.Describe(), ": ", name,
                " must be a vector of 4 sizes (NHWC), got shape ", sizes.shape().ToString());
  std::vector<int64_t> dims(sizes.data<int32_t>(), sizes.data<int32_t>() + 4);
  for (int64_t d : dims)
    DFLOW_REQUIRE(d >= 0, node.Describe(), ": ", name, " must be >= 0, got ",
                  Shape(dims).ToString());
  return Shape(dims);
}

void CheckKernelOutBackprop(const Node& node, const ConvGeometry& g, const Shape& input,
                            const Shape& filter, const Shape& out_backprop) {
  try {
    CheckOutBackprop(g, input, filter, out_backprop);
  } catch (const Error& e) {
    throw Error(e.code(), StrCat(node.Describe(), ": ", e.message()));
  }
}

bool IsPointwise(const ConvGeometry& g) {
  return g.k_h == 1 && g.k_w == 1 && g.stride_h == 1 && g.stride_w == 1 && g.groups == 1 &&
         g.out_h == g.in_h && g.out_w == g.in_w && g.pad_top == 0 && g.pad_left == 0;
}

int64_t RowsPerChunk(const ConvGeometry& g) {
  constexpr int64_t kChunkElements = int64_t{1} << 20;
  return std::max<int64_t>(1, kChunkElements / std::max<int64_t>(1, g.out_w * PatchSize(g)));
}

int64_t NumBlocks(ThreadPool& pool, int64_t units, int64_t cost_per_unit) {
  int64_t work = units * std::max<int64_t>(1, cost_per_unit);
  return std::max<int64_t>(
      1, std::min<int64_t>({pool.num_threads(), units, work / kMinGemmWorkPerThread}));
}

void ForBlocks(ThreadPool& pool, int64_t blocks, int64_t units, int64_t cost_per_unit,
               const BlockFn& fn) {
  if (blocks <= 1) {
    fn(0, 0, units, &pool);
    return;
  }
  pool.ParallelFor(blocks, cost_per_unit * units / blocks, [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) fn(b, units * b / blocks, units * (b + 1) / blocks, nullptr);
  });
}

namespace {

// Calls visit(col, src) for every (output pixel, kh, kw) of rows [begin, end)
// of group `group`: col points at the Cg entries of the im2col row, src at
// the Cg input channels (null when the tap falls in the padding).
template <typename T, typename Visit>
void ForEachTap(const ConvGeometry& g, T* x, int64_t group, int64_t begin, int64_t end,
                int64_t col_stride, Visit visit) {
  const int64_t cg = g.filter_c;
  for (int64_t r = begin; r < end; ++r) {
    int64_t n = r / g.out_h, oh = r % g.out_h;
    T* image = x + n * g.in_h * g.in_w * g.in_c + group * cg;
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      int64_t col = ((r - begin) * g.out_w + ow) * col_stride;
      for (int64_t kh = 0; kh < g.k_h; ++kh) {
        int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
        bool row_in = ih >= 0 && ih < g.in_h;
        for (int64_t kw = 0; kw < g.k_w; ++kw) {
          int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
          bool in = row_in && iw >= 0 && iw < g.in_w;
          visit(col + (kh * g.k_w + kw) * cg, in ? image + (ih * g.in_w + iw) * g.in_c : nullptr);
        }
      }
    }
  }
}

// The same walk for groups == 1 and dilation_w == 1, where the KW*C entries
// of an im2col row for one filter row kh are contiguous in x as well: calls
// visit(col, src, length) once per such span (src null: a padding row), and
// per tap only where the span hangs over the left or right edge. For few
// channels (a 9x9 filter on 3 channels) this is 9 copies per pixel, not 81.
template <typename T, typename Visit>
void ForEachSpan(const ConvGeometry& g, T* x, int64_t begin, int64_t end, int64_t col_stride, Visit visit) {
  const int64_t c = g.in_c, span = g.k_w * c, k = col_stride;
  for (int64_t r = begin; r < end; ++r) {
    int64_t n = r / g.out_h, oh = r % g.out_h;
    T* image = x + n * g.in_h * g.in_w * c;
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const int64_t iw0 = ow * g.stride_w - g.pad_left;
      const bool inside = iw0 >= 0 && iw0 + g.k_w <= g.in_w;
      for (int64_t kh = 0; kh < g.k_h; ++kh) {
        const int64_t col = ((r - begin) * g.out_w + ow) * k + kh * span;
        const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
        if (ih < 0 || ih >= g.in_h) {
          visit(col, nullptr, span);
          continue;
        }
        T* row = image + ih * g.in_w * c;
        if (inside) {
          visit(col, row + iw0 * c, span);
          continue;
        }
        for (int64_t kw = 0; kw < g.k_w; ++kw) {
          const int64_t iw = iw0 + kw;
          visit(col + kw * c, iw >= 0 && iw < g.in_w ? row + iw * c : nullptr, c);
        }
      }
    }
  }
}

bool HasSpans(const ConvGeometry& g) { return g.groups == 1 && g.dilation_w == 1; }

}  // namespace

template <typename T>
void Im2Col(const ConvGeometry& g, const T* x, int64_t group, int64_t begin, int64_t end, T* cols, T padding,
            int64_t row_stride) {
  if (row_stride == 0) row_stride = PatchSize(g);
  if (HasSpans(g)) {
    ForEachSpan(g, x, begin, end, row_stride, [&](int64_t col, const T* src, int64_t length) {
      if (src) std::copy_n(src, length, cols + col);
      else std::fill_n(cols + col, length, padding);
    });
    return;
  }
  const int64_t cg = g.filter_c;
  ForEachTap(g, x, group, begin, end, row_stride, [&](int64_t col, const T* src) {
    if (src) std::copy_n(src, cg, cols + col);
    else std::fill_n(cols + col, cg, padding);
  });
}

template <typename T>
void Col2Im(const ConvGeometry& g, const T* cols, int64_t group, int64_t begin, int64_t end,
            T* dx) {
  if (HasSpans(g)) {
    ForEachSpan(g, dx, begin, end, PatchSize(g), [&](int64_t col, T* dst, int64_t length) {
      if (dst)
        for (int64_t i = 0; i < length; ++i) dst[i] += cols[col + i];
    });
    return;
  }
  const int64_t cg = g.filter_c;
  ForEachTap(g, dx, group, begin, end, PatchSize(g), [&](int64_t col, T* dst) {
    if (!dst) return;
    for (int64_t c = 0; c < cg; ++c) dst[c] += cols[col + c];
  });
}

template <typename T>
void GatherColumns(const T* src, int64_t rows, int64_t width, int64_t first, int64_t count,
                   T* dst) {
  for (int64_t r = 0; r < rows; ++r) std::copy_n(src + r * width + first, count, dst + r * count);
}

template <typename T>
void ScatterColumns(const T* src, int64_t rows, int64_t width, int64_t first, int64_t count,
                    T* dst, bool accumulate) {
  for (int64_t r = 0; r < rows; ++r) {
    T* out = dst + r * width + first;
    const T* in = src + r * count;
    if (accumulate)
      for (int64_t j = 0; j < count; ++j) out[j] += in[j];
    else std::copy_n(in, count, out);
  }
}

template <typename T>
std::vector<std::vector<T>> GroupFilters(const ConvGeometry& g, const T* filter) {
  std::vector<std::vector<T>> packed(g.groups == 1 ? 1 : g.groups);
  if (g.groups == 1) return packed;
  int64_t k = PatchSize(g), og = g.group_out_c();
  for (int64_t group = 0; group < g.groups; ++group) {
    packed[group].resize(k * og);
    GatherColumns(filter, k, g.out_c, group * og, og, packed[group].data());
  }
  return packed;
}

template <typename T>
std::vector<FixedRhsGemm<T>> FilterProducts(const ConvGeometry& g, const T* filter,
                                           const std::vector<std::vector<T>>& filters,
                                           bool transpose) {
  const int64_t k = PatchSize(g), og = g.group_out_c();
  std::vector<FixedRhsGemm<T>> products;
  products.reserve(g.groups);
  for (int64_t group = 0; group < g.groups; ++group) {
    const T* b = g.groups == 1 ? filter : filters[group].data();
    // b is [k, og]; as b^T it is the [og, k] operand of the input gradient.
    if (transpose) products.emplace_back(b, og, k, true);
    else products.emplace_back(b, k, og, false);
  }
  return products;
}

#define DFLOW_CONV_UTIL_INSTANTIATE(T)                                                          \
  template void Im2Col<T>(const ConvGeometry&, const T*, int64_t, int64_t, int64_t, T*, T, int64_t); \
  template void Col2Im<T>(const ConvGeometry&, const T*, int64_t, int64_t, int64_t, T*);       \
  template void GatherColumns<T>(const T*, int64_t, int64_t, int64_t, int64_t, T*);           \
  template void ScatterColumns<T>(const T*, int64_t, int64_t, int64_t, int64_t, T*, bool);    \
  template std::vector<std::vector<T>> GroupFilters<T>(const ConvGeometry&, const T*);      \
  template std::vector<FixedRhsGemm<T>> FilterProducts<T>(                                  \
      const ConvGeometry&, const T*, const std::vector<std::vector<T>>&, bool);
DFLOW_CONV_UTIL_INSTANTIATE(float)
DFLOW_CONV_UTIL_INSTANTIATE(double)
template void Im2Col<uint8_t>(const ConvGeometry&, const uint8_t*, int64_t, int64_t, int64_t, uint8_t*, uint8_t,
                              int64_t);
template std::vector<std::vector<int8_t>> GroupFilters<int8_t>(const ConvGeometry&, const int8_t*);

}  // namespace dflow::cpu
