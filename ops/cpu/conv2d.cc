// CPU Conv2D kernel. Three paths:
//   pointwise (1x1, stride 1, no padding, one group): y[NHW, O] = x[NHW, C] * w[C, O], one GEMM;
//   depthwise (filter in-channels 1): a direct loop (conv2d_depthwise.cc);
//   otherwise im2col: per chunk of output rows and per group g,
//     y_g[(n, oh, ow), O/groups] = cols_g[(n, oh, ow), KH*KW*Cg] * w_g[KH*KW*Cg, O/groups],
//   the chunks split over the thread pool (ops/cpu/conv_util.h).
// Each path runs a fused op's epilogue (ops/cpu/conv_epilogue.h) on the
// output block it has just written.
#include "ops/cpu/conv2d.h"

#include "ops/cpu/conv2d_depthwise.h"
#include "ops/cpu/conv_util.h"
#include "ops/cpu/gemm_packed.h"

namespace dflow {
namespace cpu {
namespace {

template <typename T>
void Conv2DIm2Col(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* w, T* y,
                  const ConvEpilogue<T>& epilogue) {
  const int64_t k = PatchSize(g), og = g.group_out_c(), rows = g.batch * g.out_h;
  const int64_t chunk = RowsPerChunk(g);
  const auto filters = GroupFilters(g, w);
  const auto products = FilterProducts(g, w, filters, false);
  const int64_t cost_per_row = g.out_w * k * g.out_c;
  ForBlocks(pool, NumBlocks(pool, rows, cost_per_row), rows, cost_per_row,
            [&](int64_t, int64_t begin, int64_t end, ThreadPool* gemm_pool) {
    const int64_t max_pixels = std::min(chunk, end - begin) * g.out_w;
    std::vector<T> cols(max_pixels * k), out(g.groups > 1 ? max_pixels * og : 0);
    for (int64_t r = begin; r < end; r += chunk) {
      const int64_t r_end = std::min(end, r + chunk), pixels = (r_end - r) * g.out_w;
      T* y_rows = y + r * g.out_w * g.out_c;
      for (int64_t group = 0; group < g.groups; ++group) {
        Im2Col(g, x, group, r, r_end, cols.data());
        if (g.groups == 1) {
          products[0].Multiply(gemm_pool, cols.data(), pixels, y_rows);
          continue;
        }
        products[group].Multiply(gemm_pool, cols.data(), pixels, out.data());
        ScatterColumns(out.data(), pixels, g.out_c, group * og, og, y_rows, false);
      }
      if (!epilogue.empty()) epilogue.Apply(y_rows, pixels, g.out_c);
    }
  });
}

// Pointwise: y[pixels, O] = x[pixels, C] * w[C, O], w packed once. Without
// an epilogue, one product over the pool. Otherwise each thread takes a range
// of pixels and runs product + epilogue per chunk of pixels, so the epilogue
// reads what the product has just written.
template <typename T>
void Conv2DPointwise(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* w, T* y,
                     const ConvEpilogue<T>& epilogue) {
  const int64_t pixels = g.batch * g.in_h * g.in_w;
  const FixedRhsGemm<T> filter(w, g.in_c, g.out_c, false);
  if (epilogue.empty()) return filter.Multiply(&pool, x, pixels, y);
  // About 256 KiB of output per chunk: GEMM-sized, and in L2 for the epilogue.
  const int64_t chunk = std::max<int64_t>(64, (int64_t{1} << 16) / g.out_c);
  const int64_t cost_per_pixel = g.in_c * g.out_c;
  ForBlocks(pool, NumBlocks(pool, pixels, cost_per_pixel), pixels, cost_per_pixel,
            [&](int64_t, int64_t begin, int64_t end, ThreadPool* gemm_pool) {
    for (int64_t p = begin; p < end; p += chunk) {
      const int64_t n = std::min(chunk, end - p);
      filter.Multiply(gemm_pool, x + p * g.in_c, n, y + p * g.out_c);
      epilogue.Apply(y + p * g.out_c, n, g.out_c);
    }
  });
}

}  // namespace

template <typename T>
void Conv2DForward(ThreadPool& pool, const ConvGeometry& g, const T* x, const T* w, T* y,
                   const ConvEpilogue<T>& epilogue) {
  if (IsPointwise(g)) Conv2DPointwise(pool, g, x, w, y, epilogue);
  else if (g.depthwise()) DepthwiseConv2D(pool, g, x, w, y, epilogue);
  else Conv2DIm2Col(pool, g, x, w, y, epilogue);
}

template void Conv2DForward<float>(ThreadPool&, const ConvGeometry&, const float*, const float*,
                                   float*, const ConvEpilogue<float>&);
template void Conv2DForward<double>(ThreadPool&, const ConvGeometry&, const double*,
                                    const double*, double*, const ConvEpilogue<double>&);

}  // namespace cpu

namespace {

template <typename T>
class Conv2DKernel : public OpKernel {
 public:
  explicit Conv2DKernel(const Node& node) : OpKernel(node), params_(ConvParamsOf(node)) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, x.shape(), w.shape());
    Tensor& y = ctx.allocate_output(0, g.output_shape());
    if (y.NumElements() == 0) return;
    cpu::Conv2DForward(ctx.pool(), g, x.data<T>(), w.data<T>(), y.data<T>());
  }

 private:
  ConvParams params_;
};

REGISTER_KERNEL_FOR_TYPES("Conv2D", "CPU", Conv2DKernel, float, double);

}  // namespace
}  // namespace dflow
