// Shared pieces of the CPU convolution kernels (conv2d*.cc): geometry with
// errors naming the node, im2col / col2im over chunks of output rows, group
// column gathers, and the split of output rows over the thread pool.
//
// Output rows are counted over the whole batch: row r is image r / OH,
// output row r % OH. The im2col matrix of rows [begin, end) and group g has
// one row per output pixel and K = KH*KW*Cg columns:
//   cols[(r, ow), (kh, kw, c)] = x[n, oh*sh - pad_top + kh*dh, ow*sw - pad_left + kw*dw, g*Cg + c]
// (zero outside x), so group g's output is cols x filter_g, where filter_g
// is columns g*O/groups .. (g+1)*O/groups of the filter seen as the matrix
// [KH*KW*Cg, O].
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "graph/kernel.h"
#include "ops/conv.h"
#include "ops/cpu/gemm_packed.h"

namespace dflow::cpu {

// MakeConvGeometry on run-time shapes, errors prefixed with the node.
ConvGeometry KernelGeometry(const Node& node, const ConvParams& params, const Shape& input,
                            const Shape& filter);
// A sizes input (int32 [4], each >= 0) as a shape; errors name the node.
Shape SizesInput(const Node& node, const Tensor& sizes, const char* name);
// Throws naming the node unless out_backprop is the conv's output shape.
void CheckKernelOutBackprop(const Node& node, const ConvGeometry& g, const Shape& input,
                            const Shape& filter, const Shape& out_backprop);

// A 1x1 filter at stride 1 without padding or groups: the conv is one GEMM
// of the input as an [N*H*W, C] matrix by the filter as [C, O].
bool IsPointwise(const ConvGeometry& g);
// Columns of the im2col matrix: KH * KW * Cg.
inline int64_t PatchSize(const ConvGeometry& g) { return g.k_h * g.k_w * g.filter_c; }
// Output rows per im2col chunk, so that a chunk's buffer stays a few MB.
int64_t RowsPerChunk(const ConvGeometry& g);

// How many ranges to split `units` units of `cost_per_unit` multiply-adds
// into: one per thread, fewer when the work is small.
int64_t NumBlocks(ThreadPool& pool, int64_t units, int64_t cost_per_unit);
// fn(block, begin, end, gemm_pool) over `blocks` equal ranges of [0, units),
// in parallel. gemm_pool is the pool when there is a single block (so its
// GEMMs split instead) and null otherwise.
using BlockFn = std::function<void(int64_t, int64_t, int64_t, ThreadPool*)>;
void ForBlocks(ThreadPool& pool, int64_t blocks, int64_t units, int64_t cost_per_unit,
               const BlockFn& fn);

// visit(x_pixel, tap, out_pixel) for every in-bounds tap of output rows
// [begin, end), pixel after pixel (pixels count over the batch; tap is
// kh * KW + kw).
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

// The im2col matrix of output rows [begin, end) and group `group` (see top),
// with `padding` outside x (quantized inputs pad with their zero point, the
// code of 0.0), its rows `row_stride` apart (0: PatchSize(g), no gap; the
// entries in a gap are left as they are). Instantiated for float, double
// and uint8_t.
template <typename T>
void Im2Col(const ConvGeometry& g, const T* x, int64_t group, int64_t begin, int64_t end, T* cols,
            T padding = T(0), int64_t row_stride = 0);
// The adjoint of Im2Col: dx[...] += cols[...] for every in-bounds entry.
template <typename T>
void Col2Im(const ConvGeometry& g, const T* cols, int64_t group, int64_t begin, int64_t end,
            T* dx);
// dst[r, j] = src[r, first + j] for a [rows, width] src and j < count.
template <typename T>
void GatherColumns(const T* src, int64_t rows, int64_t width, int64_t first, int64_t count,
                   T* dst);
// dst[r, first + j] = src[r, j] (accumulate: +=).
template <typename T>
void ScatterColumns(const T* src, int64_t rows, int64_t width, int64_t first, int64_t count,
                    T* dst, bool accumulate);
// The filter's [K, O/groups] block for each group, contiguous (one entry,
// empty, when groups == 1: the filter itself is that matrix).
template <typename T>
std::vector<std::vector<T>> GroupFilters(const ConvGeometry& g, const T* filter);
// Each group's filter block ([K, O/groups]: filter itself when groups == 1,
// else filters[group] from GroupFilters) ready to multiply chunks of rows:
// as b, or as b^T when transpose (the input gradient). They point into
// filter and filters, which must outlive them.
template <typename T>
std::vector<FixedRhsGemm<T>> FilterProducts(const ConvGeometry& g, const T* filter,
                                           const std::vector<std::vector<T>>& filters,
                                           bool transpose);

}  // namespace dflow::cpu
