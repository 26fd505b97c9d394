// CPU kernels of the pooling ops that write each output pixel once:
// MaxPool, AvgPool and MaxPoolGradGrad (a gather at the window argmax). The
// work splits over the pool by (image, output row); for each output pixel
// the window's input pixels are folded in with a loop over channels.
#include <limits>

#include "ops/cpu/image_loops.h"
#include "ops/cpu/pool_util.h"

namespace dflow {
namespace {

using pool::InputPixel;
using pool::OutputPixel;

// Calls fn(n, i) for every image n and output row i, in parallel.
template <typename F>
void ForEachOutputRow(OpKernelContext& ctx, const PoolGeometry& g, const F& fn) {
  int64_t row_cost = g.cols.out * g.rows.size * g.cols.size * g.channels;
  ForEachImageRow(ctx.pool(), g.batch, g.rows.out, row_cost, fn);
}

// y = max over the window, or the mean over its valid elements:
//   avg: y[n,i,j,c] = sum_{h,w in window} x[n,h,w,c] / (window rows * cols inside the image).
template <typename T, bool kMax>
class PoolKernel : public OpKernel {
 public:
  explicit PoolKernel(const Node& node) : OpKernel(node), window_(node) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    PoolGeometry g = window_.Geometry(input.shape());
    Tensor& output = ctx.allocate_output(0, g.output_shape());
    const T* x = input.data<T>();
    T* y = output.data<T>();
    ForEachOutputRow(ctx, g, [&](int64_t n, int64_t i) {
      for (int64_t j = 0; j < g.cols.out; ++j) PoolPixel(x, g, n, i, j, y + OutputPixel(g, n, i, j));
    });
  }

 private:
  static void PoolPixel(const T* x, const PoolGeometry& g, int64_t n, int64_t i, int64_t j,
                        T* out) {
    const int64_t channels = g.channels;
    const T init = !kMax ? T(0)
                   : std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                          : std::numeric_limits<T>::lowest();
    for (int64_t c = 0; c < channels; ++c) out[c] = init;
    for (int64_t h = g.rows.begin(i); h < g.rows.end(i); ++h)
      for (int64_t w = g.cols.begin(j); w < g.cols.end(j); ++w) {
        const T* p = x + InputPixel(g, n, h, w);
        for (int64_t c = 0; c < channels; ++c) {
          if constexpr (kMax) out[c] = p[c] > out[c] ? p[c] : out[c];
          else out[c] += p[c];
        }
      }
    if constexpr (!kMax) {
      int64_t count = (g.rows.end(i) - g.rows.begin(i)) * (g.cols.end(j) - g.cols.begin(j));
      const T scale = T(1) / static_cast<T>(count);
      for (int64_t c = 0; c < channels; ++c) out[c] *= scale;
    }
  }

  pool::WindowAttrs window_;
};

template <typename T> using MaxPoolKernel = PoolKernel<T, true>;
template <typename T> using AvgPoolKernel = PoolKernel<T, false>;

// y[n,i,j,c] = grad[argmax of window (i, j) of orig_input, channel c].
template <typename T>
class MaxPoolGradGradKernel : public OpKernel {
 public:
  explicit MaxPoolGradGradKernel(const Node& node) : OpKernel(node), window_(node) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& grad = ctx.input(2);
    PoolGeometry g = window_.Geometry(input.shape());
    pool::RequireShape(node(), "orig_output", ctx.input(1).shape(), g.output_shape());
    pool::RequireShape(node(), "grad", grad.shape(), input.shape());
    Tensor& output = ctx.allocate_output(0, g.output_shape());
    const T* x = input.data<T>();
    const T* gx = grad.data<T>();
    T* y = output.data<T>();
    ForEachOutputRow(ctx, g, [&](int64_t n, int64_t i) {
      std::vector<T> best(g.channels);
      std::vector<int64_t> where(g.channels);
      for (int64_t j = 0; j < g.cols.out; ++j) {
        pool::WindowArgmax(x, g, n, i, j, best.data(), where.data());
        T* out = y + OutputPixel(g, n, i, j);
        for (int64_t c = 0; c < g.channels; ++c) out[c] = gx[where[c]];
      }
    });
  }

 private:
  pool::WindowAttrs window_;
};

REGISTER_KERNEL_FOR_TYPES("MaxPool", "CPU", MaxPoolKernel, float, double, uint8_t);
REGISTER_KERNEL_FOR_TYPES("AvgPool", "CPU", AvgPoolKernel, float, double);
REGISTER_KERNEL_FOR_TYPES("MaxPoolGradGrad", "CPU", MaxPoolGradGradKernel, float, double);

}  // namespace
}  // namespace dflow
