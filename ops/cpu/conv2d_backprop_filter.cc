// CPU Conv2DBackpropFilter kernel: dw for y = Conv2D(x, w), given dy.
//   pointwise: dw[C, O] = x[NHW, C]^T * dy[NHW, O], one GEMM;
//   depthwise: a direct loop (conv2d_depthwise.cc);
//   otherwise, per chunk of output rows and group g:
//     dw_g[KH*KW*Cg, O/groups] += cols_g[(n, oh, ow), KH*KW*Cg]^T * dy_g[(n, oh, ow), O/groups].
//   Each thread sums its rows into its own partial dw; the partials are added
//   in block order at the end.
//   float without groups: per tap instead, with no im2col copy (ByTap below).
#include <type_traits>

#include "ops/cpu/conv2d_depthwise.h"
#include "ops/cpu/conv_util.h"
#include "ops/cpu/gemm_long_k.h"
#include "ops/cpu/matmul.h"

namespace dflow {
namespace cpu {

template <typename T>
void Conv2DBackpropFilterIm2Col(ThreadPool& pool, const ConvGeometry& g, const T* x,
                                const T* dy, T* dw) {
  const int64_t k = PatchSize(g), og = g.group_out_c(), rows = g.batch * g.out_h;
  const int64_t chunk = RowsPerChunk(g), size = k * g.out_c;
  const int64_t cost_per_row = g.out_w * k * g.out_c;
  const int64_t blocks = NumBlocks(pool, rows, cost_per_row);
  std::vector<std::vector<T>> partial(blocks, std::vector<T>(size, T(0)));
  ForBlocks(pool, blocks, rows, cost_per_row,
            [&](int64_t block, int64_t begin, int64_t end, ThreadPool* gemm_pool) {
    const int64_t max_pixels = std::min(chunk, end - begin) * g.out_w;
    std::vector<T> cols(max_pixels * k), grad(g.groups > 1 ? max_pixels * og : 0);
    std::vector<T> product(k * og);
    for (int64_t r = begin; r < end; r += chunk) {
      const int64_t r_end = std::min(end, r + chunk), pixels = (r_end - r) * g.out_w;
      const T* dy_rows = dy + r * g.out_w * g.out_c;
      for (int64_t group = 0; group < g.groups; ++group) {
        Im2Col(g, x, group, r, r_end, cols.data());
        const T* grad_g = dy_rows;
        if (g.groups > 1) {
          GatherColumns(dy_rows, pixels, g.out_c, group * og, og, grad.data());
          grad_g = grad.data();
        }
        Gemm(gemm_pool, cols.data(), grad_g, product.data(), k, pixels, og, true, false);
        ScatterColumns(product.data(), k, g.out_c, group * og, og, partial[block].data(), true);
      }
    }
  });
  std::copy(partial[0].begin(), partial[0].end(), dw);
  for (int64_t b = 1; b < blocks; ++b)
    for (int64_t i = 0; i < size; ++i) dw[i] += partial[b][i];
}

// For each tap (kh, kw) of a conv without groups,
//   dw[kh, kw] ([C, O]) = sum over output pixels (n, oh, ow) whose tap falls inside x of
//                         x[n, ih, iw, :]^T dy[n, oh, ow, :],
// one GemmLongK over those (input pixel, output pixel) row pairs. Against
// im2col this skips writing and re-reading KH*KW copies of x, and GemmLongK
// sees every pixel of the batch as one long sum.
void Conv2DBackpropFilterByTap(ThreadPool& pool, const ConvGeometry& g, const float* x,
                               const float* dy, float* dw) {
  std::vector<int64_t> pairs;  // x pixel, dy pixel, x pixel, ...
  for (int64_t kh = 0; kh < g.k_h; ++kh)
    for (int64_t kw = 0; kw < g.k_w; ++kw) {
      pairs.clear();
      for (int64_t n = 0; n < g.batch; ++n)
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
          if (ih < 0 || ih >= g.in_h) continue;
          for (int64_t ow = 0; ow < g.out_w; ++ow) {
            const int64_t iw = ow * g.stride_w - g.pad_left + kw * g.dilation_w;
            if (iw < 0 || iw >= g.in_w) continue;
            pairs.push_back((n * g.in_h + ih) * g.in_w + iw);
            pairs.push_back((n * g.out_h + oh) * g.out_w + ow);
          }
        }
      auto rows = [&](int64_t first, int64_t count, const float** a, const float** b) {
        for (int64_t q = 0; q < count; ++q) {
          a[q] = x + pairs[2 * (first + q)] * g.in_c;
          b[q] = dy + pairs[2 * (first + q) + 1] * g.out_c;
        }
      };
      float* tap = dw + (kh * g.k_w + kw) * g.in_c * g.out_c;
      const int64_t k = static_cast<int64_t>(pairs.size()) / 2;
      if (k == 0) std::fill(tap, tap + g.in_c * g.out_c, 0.0f);
      else GemmLongK(&pool, rows, tap, g.in_c, k, g.out_c);
    }
}

}  // namespace cpu

namespace {

// Below this many input channels a tap's rows are too short for GemmLongK's
// tiles of 12 and im2col (rows of KH*KW*C) does better.
constexpr int64_t kMinChannelsByTap = 12;

template <typename T>
class Conv2DBackpropFilterKernel : public OpKernel {
 public:
  explicit Conv2DBackpropFilterKernel(const Node& node)
      : OpKernel(node), params_(ConvParamsOf(node)) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Shape filter = cpu::SizesInput(node(), ctx.input(1), "filter_sizes");
    const Tensor& dy = ctx.input(2);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, x.shape(), filter);
    cpu::CheckKernelOutBackprop(node(), g, x.shape(), filter, dy.shape());
    Tensor& dw = ctx.allocate_output(0, filter);
    T* out = dw.data<T>();
    if (dw.NumElements() == 0) return;
    if (cpu::IsPointwise(g))
      cpu::Gemm(&ctx.pool(), x.data<T>(), dy.data<T>(), out, g.in_c, g.batch * g.in_h * g.in_w,
                g.out_c, true, false);
    else if (g.depthwise())
      cpu::DepthwiseBackpropFilter(ctx.pool(), g, x.data<T>(), dy.data<T>(), out);
    else if (std::is_same_v<T, float> && g.groups == 1 && g.in_c >= kMinChannelsByTap)
      cpu::Conv2DBackpropFilterByTap(ctx.pool(), g, x.data<float>(), dy.data<float>(),
                                     dw.data<float>());
    else cpu::Conv2DBackpropFilterIm2Col(ctx.pool(), g, x.data<T>(), dy.data<T>(), out);
  }

 private:
  ConvParams params_;
};

REGISTER_KERNEL_FOR_TYPES("Conv2DBackpropFilter", "CPU", Conv2DBackpropFilterKernel, float,
                          double);

}  // namespace
}  // namespace dflow
