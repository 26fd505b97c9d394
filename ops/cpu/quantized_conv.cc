// The fused int8 convolutions on the CPU (ops/quant.h; the arithmetic is in
// the op docs, ops/quant_conv.cc): exact int32 sums, then the bias and the
// requantization (or, ...AndDequantize, the float values) of each block of
// output rows while it is in cache.
// - Dense and grouped: the im2col matrix of the codes (padded with the
//   input's zero point, the code of 0.0) times each group's filter block
//   through cpu::Int8Rhs (ops/cpu/int8_gemm.h), packed once and kept while
//   the filter stays the same; a pointwise convolution multiplies the input
//   itself.
// - Depthwise (one input channel per group): direct loops over each output
//   pixel's taps, the sums of 16 channels at a time in registers when the
//   multiplier is 1; taps in the padding add (zero point - zero point) * w = 0,
//   so they are skipped. With AVX512-VNNI, a row of output pixels at a time
//   over input rows whose taps are interleaved once (int8_depthwise.h).
#include <algorithm>
#include <string>
#include <vector>

#include "graph/kernel.h"
#include "ops/conv.h"
#include "ops/cpu/conv_util.h"
#include "ops/cpu/int8_depthwise.h"
#include "ops/cpu/int8_gemm.h"
#include "ops/cpu/matmul.h"
#include "ops/cpu/quantized_inputs.h"

namespace dflow {
namespace {

// y[pixel, first + j] for `pixels` pixels of acc [pixels, width]. A Stage
// (cpu::Requantization or cpu::Dequantization) turns a row of sums into
// output values of its Out type.
template <typename Stage>
void RequantizeBlock(const Stage& rq, const int32_t* acc, int64_t pixels, int64_t width, int64_t first,
                     int64_t out_c, typename Stage::Out* y) {
  for (int64_t p = 0; p < pixels; ++p) rq.Row(acc + p * width, width, first, y + p * out_c + first);
}

// Each group's filter block [K, O / groups], packed for the int8 product.
cpu::Int8RhsCache::Packed PackFilters(const ConvGeometry& g, const int8_t* w) {
  const std::vector<std::vector<int8_t>> blocks = cpu::GroupFilters(g, w);
  cpu::Int8RhsCache::Packed filters;
  for (int64_t group = 0; group < g.groups; ++group)
    filters.emplace_back(g.groups == 1 ? w : blocks[group].data(), cpu::PatchSize(g), g.group_out_c());
  return filters;
}

// im2col rows padded to whole groups of four codes, which the int8 product
// then reads in place (a 3x3 stem over 3 channels has k = 27).
int64_t Im2ColStride(const ConvGeometry& g) { return (cpu::PatchSize(g) + 3) / 4 * 4; }

// Few output pixels (the small maps at the end of a detector): the threads
// share the output channels instead of the rows, so that each reads its part
// of the filter, not all of it, and every thread gets whole tiles of rows.
template <typename Stage>
void DenseConvByColumns(ThreadPool& pool, const ConvGeometry& g, const uint8_t* x, const cpu::Int8Rhs& filter,
                        uint8_t zero, const Stage& rq, typename Stage::Out* y) {
  const int64_t k = cpu::PatchSize(g), pixels = g.batch * g.out_h * g.out_w, panel = filter.panel_width();
  const bool pointwise = cpu::IsPointwise(g);
  const int64_t lda = pointwise ? k : Im2ColStride(g);
  std::vector<uint8_t> cols(pointwise ? 0 : pixels * lda);
  if (!pointwise) cpu::Im2Col(g, x, 0, 0, g.batch * g.out_h, cols.data(), zero, lda);
  const uint8_t* a = pointwise ? x : cols.data();
  const int64_t panels = (g.out_c + panel - 1) / panel;
  const int64_t blocks = std::min<int64_t>(pool.num_threads(), panels);
  pool.ParallelFor(blocks, pixels * k * g.out_c / blocks, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t begin = panels * block / blocks * panel;
      const int64_t end = std::min(g.out_c, panels * (block + 1) / blocks * panel), width = end - begin;
      std::vector<int32_t> acc(pixels * width);
      filter.MultiplyColumns(a, lda, pixels, zero, begin, width, acc.data(), width);
      RequantizeBlock(rq, acc.data(), pixels, width, begin, g.out_c, y);
    }
  });
}

// Whether DenseConvByColumns suits g: one group, fewer than 48 output
// pixels (four tiles of rows) per thread, a panel of channels for each
// thread, and enough work to split at all.
bool FewPixels(ThreadPool& pool, const ConvGeometry& g, int64_t panel) {
  const int64_t threads = pool.num_threads(), pixels = g.batch * g.out_h * g.out_w;
  return threads > 1 && g.groups == 1 && pixels < 48 * threads && g.out_c >= panel * threads &&
         pixels * cpu::PatchSize(g) * g.out_c >= cpu::kMinGemmWorkPerThread;
}

template <typename Stage>
void DenseConv(ThreadPool& pool, const ConvGeometry& g, const uint8_t* x, const cpu::Int8RhsCache::Packed& filters,
               uint8_t zero, const Stage& rq, typename Stage::Out* y) {
  if (FewPixels(pool, g, filters[0].panel_width())) return DenseConvByColumns(pool, g, x, filters[0], zero, rq, y);
  const int64_t k = cpu::PatchSize(g), og = g.group_out_c(), rows = g.batch * g.out_h;
  const bool pointwise = cpu::IsPointwise(g);
  const int64_t lda = pointwise ? g.in_c : Im2ColStride(g);
  // Chunks of output rows small enough that their int32 sums (written by
  // the product, then read by the requantization) stay in L2: 64K sums.
  const int64_t sums_per_row = std::max<int64_t>(1, g.out_w * og);
  const int64_t chunk = std::min(cpu::RowsPerChunk(g), std::max<int64_t>(1, (int64_t{1} << 16) / sums_per_row));
  const int64_t cost_per_row = g.out_w * k * g.out_c;
  cpu::ForBlocks(pool, cpu::NumBlocks(pool, rows, cost_per_row), rows, cost_per_row,
                 [&](int64_t, int64_t begin, int64_t end, ThreadPool* gemm_pool) {
    const int64_t max_pixels = std::min(chunk, end - begin) * g.out_w;
    std::vector<uint8_t> cols(pointwise ? 0 : max_pixels * lda);
    std::vector<int32_t> acc(max_pixels * og);
    for (int64_t r = begin; r < end; r += chunk) {
      const int64_t r_end = std::min(end, r + chunk), pixels = (r_end - r) * g.out_w;
      for (int64_t group = 0; group < g.groups; ++group) {
        const uint8_t* a = x + r * g.out_w * g.in_c;  // pointwise: the input rows are the output rows
        if (!pointwise) {
          cpu::Im2Col(g, x, group, r, r_end, cols.data(), zero, lda);
          a = cols.data();
        }
        filters[group].Multiply(gemm_pool, a, pixels, zero, acc.data(), lda);
        RequantizeBlock(rq, acc.data(), pixels, og, group * og, g.out_c, y + r * g.out_w * g.out_c);
      }
    }
  });
}

template <typename Stage>
void DepthwiseConv(ThreadPool& pool, const ConvGeometry& g, const uint8_t* x, const int8_t* w, uint8_t zero,
                   const Stage& rq, typename Stage::Out* y) {
  const int64_t c = g.in_c, mult = g.out_c / g.in_c, rows = g.batch * g.out_h, width = g.out_w * g.out_c;
  const int64_t cost_per_row = g.k_h * g.k_w * width;
  cpu::ForBlocks(pool, cpu::NumBlocks(pool, rows, cost_per_row), rows, cost_per_row,
                 [&](int64_t, int64_t begin, int64_t end, ThreadPool*) {
    std::vector<int32_t> acc(width);  // one output row
    for (int64_t r = begin; r < end; ++r) {
      std::fill(acc.begin(), acc.end(), 0);
      cpu::ForEachOutputTap(g, r, r + 1, [&](int64_t in, int64_t tap, int64_t out) {
        const uint8_t* px = x + in * c;
        const int8_t* weights = w + tap * g.out_c;
        int32_t* a = acc.data() + (out - r * g.out_w) * g.out_c;
        for (int64_t ch = 0; ch < c; ++ch) {
          const int32_t v = static_cast<int32_t>(px[ch]) - zero;
          for (int64_t m = 0; m < mult; ++m) a[ch * mult + m] += v * weights[ch * mult + m];
        }
      });
      RequantizeBlock(rq, acc.data(), g.out_w, g.out_c, 0, g.out_c, y + r * width);
    }
  });
}

// One output pixel's channels [first, first + kWidth) of a depthwise
// convolution with multiplier 1: the sums stay in registers over the taps
// (kWidth a compile-time width the compiler keeps in vector registers).
template <int64_t kWidth>
void DepthwisePixelBlock(const uint8_t* const* src, const int8_t* const* taps, int64_t count, int64_t first,
                         int32_t zero, int32_t* acc) {
  int32_t sums[kWidth] = {};
  for (int64_t t = 0; t < count; ++t) {
    const uint8_t* px = src[t] + first;
    const int8_t* wt = taps[t] + first;
    for (int64_t j = 0; j < kWidth; ++j) sums[j] += (static_cast<int32_t>(px[j]) - zero) * wt[j];
  }
  std::copy_n(sums, kWidth, acc);
}

// Depthwise with multiplier 1 and AVX512-VNNI (int8_depthwise.h): each block of output rows keeps the expanded input
// rows it reads, each made once (rows past the image's edge read one
// expanded row of the padding).
template <typename Stage>
void DepthwiseByRowsVnni(ThreadPool& pool, const ConvGeometry& g, const uint8_t* x, const int8_t* w, uint8_t zero,
                         const Stage& rq, typename Stage::Out* y) {
  const int64_t c = g.in_c, rows = g.batch * g.out_h;
  const int64_t cost_per_row = g.out_w * g.k_h * g.k_w * c;
  const cpu::DepthwiseRowsVnni kernel(w, g, zero);
  std::vector<uint8_t> padding(kernel.expanded_size());
  kernel.ExpandRow(nullptr, padding.data());
  cpu::ForBlocks(pool, cpu::NumBlocks(pool, rows, cost_per_row), rows, cost_per_row,
                 [&](int64_t, int64_t begin, int64_t end, ThreadPool*) {
    // k_h slots, each the expanded row of input row `held` (image * in_h +
    // ih; -2: none yet, as -1 stands for the padding); a row not held goes
    // to a slot that the output row does not read.
    std::vector<std::vector<uint8_t>> slots(g.k_h, std::vector<uint8_t>(kernel.expanded_size()));
    std::vector<int64_t> held(g.k_h, -2), wanted(g.k_h);
    std::vector<const uint8_t*> taps(g.k_h);
    std::vector<int32_t> acc(g.out_w * c);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / g.out_h, oh = r % g.out_h;
      for (int64_t kh = 0; kh < g.k_h; ++kh) {
        const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
        wanted[kh] = ih >= 0 && ih < g.in_h ? n * g.in_h + ih : -1;
      }
      for (int64_t kh = 0; kh < g.k_h; ++kh) {
        if (wanted[kh] < 0) {
          taps[kh] = padding.data();
          continue;
        }
        auto slot = std::find(held.begin(), held.end(), wanted[kh]);
        if (slot == held.end()) {
          slot = std::find_if(held.begin(), held.end(),
                              [&](int64_t row) { return std::find(wanted.begin(), wanted.end(), row) == wanted.end(); });
          kernel.ExpandRow(x + wanted[kh] * g.in_w * c, slots[slot - held.begin()].data());
          *slot = wanted[kh];
        }
        taps[kh] = slots[slot - held.begin()].data();
      }
      kernel.Row(taps.data(), acc.data());
      RequantizeBlock(rq, acc.data(), g.out_w, c, 0, c, y + r * g.out_w * c);
    }
  });
}

// Depthwise with multiplier 1 (MobileNet's): per output pixel, its in-bounds
// taps, then the channels 16 at a time (the rest one at a time).
template <typename Stage>
void DepthwisePerPixel(ThreadPool& pool, const ConvGeometry& g, const uint8_t* x, const int8_t* w, uint8_t zero,
                       const Stage& rq, typename Stage::Out* y) {
  if (cpu::DepthwiseRowsVnni::Available()) return DepthwiseByRowsVnni(pool, g, x, w, zero, rq, y);
  constexpr int64_t kBlock = 16;
  const int64_t c = g.in_c, rows = g.batch * g.out_h;
  const int64_t cost_per_row = g.out_w * g.k_h * g.k_w * c;
  cpu::ForBlocks(pool, cpu::NumBlocks(pool, rows, cost_per_row), rows, cost_per_row,
                 [&](int64_t, int64_t begin, int64_t end, ThreadPool*) {
    std::vector<const uint8_t*> src(g.k_h * g.k_w);
    std::vector<const int8_t*> taps(g.k_h * g.k_w);
    std::vector<int32_t> acc(c);
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / g.out_h, oh = r % g.out_h;
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        // The in-bounds taps, written out (as in the float kernel): through
        // a visitor lambda this kernel ran 1.6x slower.
        int64_t count = 0;
        for (int64_t kh = 0; kh < g.k_h; ++kh) {
          const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
          for (int64_t kw = 0; kw < g.k_w && ih >= 0 && ih < g.in_h; ++kw) {
            const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
            if (iw < 0 || iw >= g.in_w) continue;
            src[count] = x + ((n * g.in_h + ih) * g.in_w + iw) * c;
            taps[count++] = w + (kh * g.k_w + kw) * c;
          }
        }
        int64_t ch = 0;
        for (; ch + kBlock <= c; ch += kBlock)
          DepthwisePixelBlock<kBlock>(src.data(), taps.data(), count, ch, zero, acc.data() + ch);
        for (; ch < c; ++ch) DepthwisePixelBlock<1>(src.data(), taps.data(), count, ch, zero, acc.data() + ch);
        rq.Row(acc.data(), c, 0, y + (r * g.out_w + ow) * c);
      }
    }
  });
}

// ...AndRequantize: uint8 codes of the frozen output range;
// ...AndDequantize: float32.
class QuantizedConvKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const cpu::QuantizedConv conv = cpu::QuantizedConvOf(ctx);
    const cpu::ProductRanges& r = conv.ranges;
    const float* bias = ctx.input(2).data<float>();
    if (!r.requantize) {
      Convolve(ctx, conv.geometry, r.in, cpu::Dequantization(r.in.step, r.weight_steps, bias, r.relu));
      return;
    }
    Convolve(ctx, conv.geometry, r.in, cpu::Requantization(r.in.step, r.weight_steps, bias, r.out, r.relu));
    cpu::WriteOutputRange(ctx, r.out_min, r.out_max);
  }

 private:
  template <typename Stage>
  void Convolve(OpKernelContext& ctx, const ConvGeometry& g, const cpu::MinFirstCodes& in, const Stage& stage) const {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    auto* y = ctx.allocate_output(0, g.output_shape()).data<typename Stage::Out>();
    const auto zero = static_cast<uint8_t>(in.zero_point);
    if (g.depthwise() && g.out_c == g.in_c) {
      DepthwisePerPixel(ctx.pool(), g, x.data<uint8_t>(), w.data<int8_t>(), zero, stage, y);
    } else if (g.depthwise()) {
      DepthwiseConv(ctx.pool(), g, x.data<uint8_t>(), w.data<int8_t>(), zero, stage, y);
    } else {
      auto filters = packed_.Get({g.k_h, g.k_w, g.filter_c, g.out_c}, w.data<int8_t>(), w.NumElements(),
                                 [&](const int8_t* bytes) { return PackFilters(g, bytes); });
      DenseConv(ctx.pool(), g, x.data<uint8_t>(), *filters, zero, stage, y);
    }
  }

  mutable cpu::Int8RhsCache packed_;  // the filter, packed once for every run
};

REGISTER_KERNEL("QuantizedConv2DWithBiasAndRequantize", "CPU", QuantizedConvKernel);
REGISTER_KERNEL("QuantizedConv2DWithBiasAndReluAndRequantize", "CPU", QuantizedConvKernel);
REGISTER_KERNEL("QuantizedDepthwiseConv2DWithBiasAndRequantize", "CPU", QuantizedConvKernel);
REGISTER_KERNEL("QuantizedDepthwiseConv2DWithBiasAndReluAndRequantize", "CPU", QuantizedConvKernel);
REGISTER_KERNEL("QuantizedConv2DWithBiasAndDequantize", "CPU", QuantizedConvKernel);
REGISTER_KERNEL("QuantizedConv2DWithBiasAndReluAndDequantize", "CPU", QuantizedConvKernel);
REGISTER_KERNEL("QuantizedDepthwiseConv2DWithBiasAndDequantize", "CPU", QuantizedConvKernel);
REGISTER_KERNEL("QuantizedDepthwiseConv2DWithBiasAndReluAndDequantize", "CPU", QuantizedConvKernel);

}  // namespace
}  // namespace dflow
