// CPU Conv2DBackpropInput kernel: dx for y = Conv2D(x, w), given dy.
//   pointwise: dx[NHW, C] = dy[NHW, O] * w[C, O]^T, one product (w^T packed once);
//   depthwise: a direct gather (conv2d_depthwise.cc);
//   otherwise, per chunk of output rows and group g:
//     dcols_g[(n, oh, ow), KH*KW*Cg] = dy_g[(n, oh, ow), O/groups] * w_g^T,
//   then col2im adds each entry back onto the input pixel it was copied from.
//   Images are split over threads (col2im of one image's rows overlap); with
//   fewer images than threads, the GEMMs split instead.
#include "ops/cpu/conv2d_depthwise.h"
#include "ops/cpu/conv_util.h"
#include "ops/cpu/gemm_packed.h"

namespace dflow {
namespace cpu {

template <typename T>
void Conv2DBackpropInputIm2Col(ThreadPool& pool, const ConvGeometry& g, const T* w, const T* dy,
                               T* dx) {
  const int64_t k = PatchSize(g), og = g.group_out_c(), chunk = RowsPerChunk(g);
  const auto filters = GroupFilters(g, w);
  const auto products = FilterProducts(g, w, filters, true);
  const int64_t cost_per_image = g.out_h * g.out_w * k * g.out_c;
  std::fill(dx, dx + g.batch * g.in_h * g.in_w * g.in_c, T(0));
  ForBlocks(pool, NumBlocks(pool, g.batch, cost_per_image), g.batch, cost_per_image,
            [&](int64_t, int64_t first, int64_t last, ThreadPool* gemm_pool) {
    const int64_t max_pixels = std::min(chunk, g.out_h) * g.out_w;
    std::vector<T> dcols(max_pixels * k), grad(g.groups > 1 ? max_pixels * og : 0);
    for (int64_t r = first * g.out_h, r_end; r < last * g.out_h; r = r_end) {
      r_end = std::min((r / g.out_h + 1) * g.out_h, r + chunk);  // within one image
      const int64_t pixels = (r_end - r) * g.out_w;
      const T* dy_rows = dy + r * g.out_w * g.out_c;
      for (int64_t group = 0; group < g.groups; ++group) {
        if (g.groups == 1) {
          products[0].Multiply(gemm_pool, dy_rows, pixels, dcols.data());
        } else {
          GatherColumns(dy_rows, pixels, g.out_c, group * og, og, grad.data());
          products[group].Multiply(gemm_pool, grad.data(), pixels, dcols.data());
        }
        Col2Im(g, dcols.data(), group, r, r_end, dx);
      }
    }
  });
}

}  // namespace cpu

namespace {

template <typename T>
class Conv2DBackpropInputKernel : public OpKernel {
 public:
  explicit Conv2DBackpropInputKernel(const Node& node)
      : OpKernel(node), params_(ConvParamsOf(node)) {}

  void Compute(OpKernelContext& ctx) const override {
    Shape input = cpu::SizesInput(node(), ctx.input(0), "input_sizes");
    const Tensor& w = ctx.input(1);
    const Tensor& dy = ctx.input(2);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, input, w.shape());
    cpu::CheckKernelOutBackprop(node(), g, input, w.shape(), dy.shape());
    Tensor& dx = ctx.allocate_output(0, input);
    T* out = dx.data<T>();
    if (dx.NumElements() == 0) return;
    if (cpu::IsPointwise(g))
      cpu::FixedRhsGemm<T>(w.data<T>(), g.out_c, g.in_c, true)
          .Multiply(&ctx.pool(), dy.data<T>(), g.batch * g.in_h * g.in_w, out);
    else if (g.depthwise())
      cpu::DepthwiseBackpropInput(ctx.pool(), g, w.data<T>(), dy.data<T>(), out);
    else cpu::Conv2DBackpropInputIm2Col(ctx.pool(), g, w.data<T>(), dy.data<T>(), out);
  }

 private:
  ConvParams params_;
};

REGISTER_KERNEL_FOR_TYPES("Conv2DBackpropInput", "CPU", Conv2DBackpropInputKernel, float, double);

}  // namespace
}  // namespace dflow
