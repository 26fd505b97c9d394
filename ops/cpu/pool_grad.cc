// CPU kernels of the pooling backward passes, which scatter each output
// gradient into its input window:
//   MaxPoolGrad: dx[argmax of window o] += g[o]   (first maximum, row-major)
//   AvgPoolGrad: dx[p] += g[o] / count(o)  for every valid p in window o
// Windows of neighbouring output rows overlap when stride < ksize, so the
// work splits over the pool by image (each image's dx is written by one task).
#include "ops/cpu/image_loops.h"
#include "ops/cpu/pool_util.h"

namespace dflow {
namespace {

using pool::InputPixel;
using pool::OutputPixel;

// Zeroes dx and calls fn(n) for every image n, in parallel.
template <typename T, typename F>
void ForEachImage(OpKernelContext& ctx, const PoolGeometry& g, T* dx, const F& fn) {
  int64_t image_cost = g.rows.out * g.cols.out * g.rows.size * g.cols.size * g.channels;
  ScatterEachImage(ctx.pool(), g.batch, g.rows.in * g.cols.in * g.channels, image_cost, dx, fn);
}

template <typename T>
class MaxPoolGradKernel : public OpKernel {
 public:
  explicit MaxPoolGradKernel(const Node& node) : OpKernel(node), window_(node) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& grad = ctx.input(2);
    PoolGeometry g = window_.Geometry(input.shape());
    pool::RequireShape(node(), "orig_output", ctx.input(1).shape(), g.output_shape());
    pool::RequireShape(node(), "grad", grad.shape(), g.output_shape());
    Tensor& output = ctx.allocate_output(0, input.shape());
    const T* x = input.data<T>();
    const T* gy = grad.data<T>();
    T* dx = output.data<T>();
    ForEachImage(ctx, g, dx, [&](int64_t n) {
      std::vector<T> best(g.channels);
      std::vector<int64_t> where(g.channels);
      for (int64_t i = 0; i < g.rows.out; ++i)
        for (int64_t j = 0; j < g.cols.out; ++j) {
          pool::WindowArgmax(x, g, n, i, j, best.data(), where.data());
          const T* go = gy + OutputPixel(g, n, i, j);
          for (int64_t c = 0; c < g.channels; ++c) dx[where[c]] += go[c];
        }
    });
  }

 private:
  pool::WindowAttrs window_;
};

template <typename T>
class AvgPoolGradKernel : public OpKernel {
 public:
  explicit AvgPoolGradKernel(const Node& node) : OpKernel(node), window_(node) {}

  void Compute(OpKernelContext& ctx) const override {
    Shape input_shape(ReadInt64s(ctx.input(0), "orig_input_shape"));
    for (int i = 0; i < input_shape.rank(); ++i)
      DFLOW_REQUIRE(input_shape.dim(i) >= 0, node().Describe(), ": orig_input_shape ",
                    input_shape.ToString(), " has a negative dim");
    const Tensor& grad = ctx.input(1);
    PoolGeometry g = window_.Geometry(input_shape);
    pool::RequireShape(node(), "grad", grad.shape(), g.output_shape());
    Tensor& output = ctx.allocate_output(0, input_shape);
    const T* gy = grad.data<T>();
    T* dx = output.data<T>();
    ForEachImage(ctx, g, dx, [&](int64_t n) {
      for (int64_t i = 0; i < g.rows.out; ++i)
        for (int64_t j = 0; j < g.cols.out; ++j) Spread(g, n, i, j, gy + OutputPixel(g, n, i, j), dx);
    });
  }

 private:
  // dx[window (i, j)] += g / count
  static void Spread(const PoolGeometry& g, int64_t n, int64_t i, int64_t j, const T* go, T* dx) {
    int64_t count = (g.rows.end(i) - g.rows.begin(i)) * (g.cols.end(j) - g.cols.begin(j));
    const T scale = T(1) / static_cast<T>(count);
    for (int64_t h = g.rows.begin(i); h < g.rows.end(i); ++h)
      for (int64_t w = g.cols.begin(j); w < g.cols.end(j); ++w) {
        T* p = dx + InputPixel(g, n, h, w);
        for (int64_t c = 0; c < g.channels; ++c) p[c] += go[c] * scale;
      }
  }

  pool::WindowAttrs window_;
};

REGISTER_KERNEL_FOR_TYPES("MaxPoolGrad", "CPU", MaxPoolGradKernel, float, double);
REGISTER_KERNEL_FOR_TYPES("AvgPoolGrad", "CPU", AvgPoolGradKernel, float, double);

}  // namespace
}  // namespace dflow
