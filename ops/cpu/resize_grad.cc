// CPU kernels of the resize gradients: each element of grads (the resized
// image's gradient) is scattered onto the original pixels it was read from,
// with the forward weights (so each op is the exact adjoint of its forward):
//   nearest:  dx[n, src_y(i), src_x(j), :] += g[n,i,j,:]
//   bilinear: dx[y0,x0] += g (1-ly)(1-lx), dx[y0,x1] += g (1-ly) lx,
//             dx[y1,x0] += g ly (1-lx),     dx[y1,x1] += g ly lx
// Output rows read overlapping input rows, so images run in parallel, each
// written by one task.
#include "ops/cpu/image_loops.h"
#include "ops/cpu/resize_util.h"

namespace dflow {
namespace {

using resize::Geometry;

// Zeroes dx and calls image(n) for every image n, in parallel.
template <typename T, typename Image>
void ForEachImage(OpKernelContext& ctx, const Geometry& g, T* dx, int64_t cost_per_value,
                  const Image& image) {
  ScatterEachImage(ctx.pool(), g.batch, g.in_h * g.in_w * g.channels,
                   g.out_h * g.out_w * g.channels * cost_per_value, dx, image);
}

template <typename T>
class ResizeNearestGradKernel : public OpKernel {
 public:
  explicit ResizeNearestGradKernel(const Node& node) : OpKernel(node), coords_(node) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& grads = ctx.input(0);
    auto [in_h, in_w] = resize::ReadSize(node(), ctx.input(1));
    Geometry g = resize::GradGeometry(node(), grads, in_h, in_w);
    std::vector<int64_t> ys = coords_.Nearest(g.in_h, g.out_h);
    std::vector<int64_t> xs = coords_.Nearest(g.in_w, g.out_w);
    const T* gy = grads.data<T>();
    T* dx = ctx.allocate_output(0, g.InShape()).template data<T>();
    ForEachImage(ctx, g, dx, 1, [&](int64_t n) {
      for (int64_t i = 0; i < g.out_h; ++i)
        for (int64_t j = 0; j < g.out_w; ++j) {
          const T* src = gy + g.Out(n, i, j);
          T* dst = dx + g.In(n, ys[i], xs[j]);
          for (int64_t c = 0; c < g.channels; ++c) dst[c] += src[c];
        }
    });
  }

 private:
  resize::Coordinates coords_;
};

template <typename T>
class ResizeBilinearGradKernel : public OpKernel {
 public:
  explicit ResizeBilinearGradKernel(const Node& node) : OpKernel(node), coords_(node) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& grads = ctx.input(0);
    Geometry g = resize::BilinearGradGeometry(node(), grads, ctx.input(1));
    auto ys = coords_.Linear(g.in_h, g.out_h);
    auto xs = coords_.Linear(g.in_w, g.out_w);
    const T* gy = grads.data<T>();
    T* dx = ctx.allocate_output(0, g.InShape()).template data<T>();
    ForEachImage(ctx, g, dx, 8, [&](int64_t n) {
      for (int64_t i = 0; i < g.out_h; ++i)
        for (int64_t j = 0; j < g.out_w; ++j) Spread(g, n, i, j, ys[i], xs[j], gy + g.Out(n, i, j), dx);
    });
  }

 private:
  using Tap = resize::Coordinates::Tap;

  static void Spread(const Geometry& g, int64_t n, int64_t i, int64_t j, const Tap& y,
                     const Tap& x, const T* src, T* dx) {
    const T ly = static_cast<T>(y.lerp), lx = static_cast<T>(x.lerp);
    const T w_tl = (1 - ly) * (1 - lx), w_tr = (1 - ly) * lx, w_bl = ly * (1 - lx), w_br = ly * lx;
    T* tl = dx + g.In(n, y.lower, x.lower);
    T* tr = dx + g.In(n, y.lower, x.upper);
    T* bl = dx + g.In(n, y.upper, x.lower);
    T* br = dx + g.In(n, y.upper, x.upper);
    // Taps may coincide at the border; += keeps that right.
    for (int64_t c = 0; c < g.channels; ++c) tl[c] += src[c] * w_tl;
    for (int64_t c = 0; c < g.channels; ++c) tr[c] += src[c] * w_tr;
    for (int64_t c = 0; c < g.channels; ++c) bl[c] += src[c] * w_bl;
    for (int64_t c = 0; c < g.channels; ++c) br[c] += src[c] * w_br;
  }

  resize::Coordinates coords_;
};

REGISTER_KERNEL_FOR_TYPES("ResizeNearestNeighborGrad", "CPU", ResizeNearestGradKernel, float,
                          double);
REGISTER_KERNEL_FOR_TYPES("ResizeBilinearGrad", "CPU", ResizeBilinearGradKernel, float, double);

}  // namespace
}  // namespace dflow
