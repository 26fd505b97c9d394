// CPU Conv2DBackpropFilter kernel: dw for y = Conv2D(x, w), given dy.
//   pointwise: dw[C, O] = x[NHW, C]^T * dy[NHW, O], one GEMM;
//   depthwise: a direct loop (conv2d_depthwise.cc);
//   otherwise, per chunk of output rows and group g:
//     dw_g[KH*KW*Cg, O/groups] += cols_g[(n, oh, ow), KH*KW*Cg]^T * dy_g[(n, oh, ow), O/groups].
//   Each thread sums its rows into its own partial dw; the partials are added
//   in block order at the end.
//   float without groups or column dilation: per filter row instead, with no
//   im2col copy (ByRow below).
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

// For each filter row kh of a conv without groups and with dilation_w 1,
//   dw[kh] ([KW*C, O]) = sum over output pixels (n, oh, ow) whose row ih is inside x of
//                        x[n, ih, iw0 : iw0 + KW, :]^T dy[n, oh, ow, :],  iw0 = ow*sw - pad_left,
// one GemmLongK over those (input span, output pixel) row pairs. The KW*C
// entries of a span are contiguous in x, so they are read in place; only
// spans that hang over the left or right edge are copied, zero-filled, into
// `edges`. Against im2col this skips writing and re-reading KH copies of x
// (KH*KW*C floats per pixel), and GemmLongK sees the whole batch as one sum.
void Conv2DBackpropFilterByRow(ThreadPool& pool, const ConvGeometry& g, const float* x,
                               const float* dy, float* dw) {
  const int64_t span = g.k_w * g.in_c;
  std::vector<const float*> a_rows, b_rows;
  std::vector<float> edges;
  for (int64_t kh = 0; kh < g.k_h; ++kh) {
    a_rows.clear();
    b_rows.clear();
    std::vector<int64_t> edge_rows;  // indices into a_rows of spans copied into edges
    edges.clear();
    for (int64_t n = 0; n < g.batch; ++n)
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        const int64_t ih = oh * g.stride_h - g.pad_top + kh * g.dilation_h;
        if (ih < 0 || ih >= g.in_h) continue;
        const float* x_row = x + (n * g.in_h + ih) * g.in_w * g.in_c;
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const int64_t iw0 = ow * g.stride_w - g.pad_left;
          b_rows.push_back(dy + ((n * g.out_h + oh) * g.out_w + ow) * g.out_c);
          if (iw0 >= 0 && iw0 + g.k_w <= g.in_w) {
            a_rows.push_back(x_row + iw0 * g.in_c);
            continue;
          }
          edge_rows.push_back(static_cast<int64_t>(a_rows.size()));
          a_rows.push_back(nullptr);  // set below, once edges stops growing
          edges.resize(edges.size() + span, 0.0f);
          float* copy = edges.data() + edges.size() - span;
          for (int64_t kw = 0; kw < g.k_w; ++kw)
            if (iw0 + kw >= 0 && iw0 + kw < g.in_w)
              std::copy_n(x_row + (iw0 + kw) * g.in_c, g.in_c, copy + kw * g.in_c);
        }
      }
    for (size_t e = 0; e < edge_rows.size(); ++e) a_rows[edge_rows[e]] = edges.data() + e * span;
    auto rows = [&](int64_t first, int64_t count, const float** a, const float** b) {
      std::copy_n(a_rows.data() + first, count, a);
      std::copy_n(b_rows.data() + first, count, b);
    };
    float* out = dw + kh * span * g.out_c;
    const int64_t k = static_cast<int64_t>(a_rows.size());
    if (k == 0) std::fill(out, out + span * g.out_c, 0.0f);
    else GemmLongK(&pool, rows, out, span, k, g.out_c);
  }
}

}  // namespace cpu

namespace {

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
    else if (std::is_same_v<T, float> && g.groups == 1 && g.dilation_w == 1)
      cpu::Conv2DBackpropFilterByRow(ctx.pool(), g, x.data<float>(), dy.data<float>(),
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
