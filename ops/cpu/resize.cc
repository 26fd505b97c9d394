// CPU kernels of ResizeNearestNeighbor and ResizeBilinear. Rows of the
// output (image n, row i) run in parallel; each output pixel copies or
// blends whole input pixels, channels innermost:
//   nearest:  out[n,i,j,:] = in[n, src_y(i), src_x(j), :]
//   bilinear: top = in[y0,x0] + (in[y0,x1] - in[y0,x0]) * lx,
//             bottom = the same on row y1,  out = top + (bottom - top) * ly
#include "ops/cpu/image_loops.h"
#include "ops/cpu/resize_util.h"

namespace dflow {
namespace {

using resize::Geometry;

// Calls row(n, i) for every image n and output row i, in parallel.
template <typename Row>
void ForEachOutputRow(OpKernelContext& ctx, const Geometry& g, int64_t cost_per_value,
                      const Row& row) {
  ForEachImageRow(ctx.pool(), g.batch, g.out_h, g.out_w * g.channels * cost_per_value, row);
}

template <typename T>
class ResizeNearestKernel : public OpKernel {
 public:
  explicit ResizeNearestKernel(const Node& node) : OpKernel(node), coords_(node) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& images = ctx.input(0);
    Geometry g = resize::ForwardGeometry(node(), images, ctx.input(1));
    std::vector<int64_t> ys = coords_.Nearest(g.in_h, g.out_h);
    std::vector<int64_t> xs = coords_.Nearest(g.in_w, g.out_w);
    const T* in = images.data<T>();
    T* out = ctx.allocate_output(0, g.OutShape()).template data<T>();
    ForEachOutputRow(ctx, g, 1, [&](int64_t n, int64_t i) {
      for (int64_t j = 0; j < g.out_w; ++j)
        std::copy_n(in + g.In(n, ys[i], xs[j]), g.channels, out + g.Out(n, i, j));
    });
  }

 private:
  resize::Coordinates coords_;
};

template <typename T>
class ResizeBilinearKernel : public OpKernel {
 public:
  explicit ResizeBilinearKernel(const Node& node) : OpKernel(node), coords_(node) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& images = ctx.input(0);
    Geometry g = resize::ForwardGeometry(node(), images, ctx.input(1));
    auto ys = coords_.Linear(g.in_h, g.out_h);
    auto xs = coords_.Linear(g.in_w, g.out_w);
    const T* in = images.data<T>();
    T* out = ctx.allocate_output(0, g.OutShape()).template data<T>();
    ForEachOutputRow(ctx, g, 8, [&](int64_t n, int64_t i) {
      const T ly = static_cast<T>(ys[i].lerp);
      for (int64_t j = 0; j < g.out_w; ++j) {
        const T lx = static_cast<T>(xs[j].lerp);
        const T* tl = in + g.In(n, ys[i].lower, xs[j].lower);
        const T* tr = in + g.In(n, ys[i].lower, xs[j].upper);
        const T* bl = in + g.In(n, ys[i].upper, xs[j].lower);
        const T* br = in + g.In(n, ys[i].upper, xs[j].upper);
        T* o = out + g.Out(n, i, j);
        for (int64_t c = 0; c < g.channels; ++c) {
          T top = tl[c] + (tr[c] - tl[c]) * lx;
          T bottom = bl[c] + (br[c] - bl[c]) * lx;
          o[c] = top + (bottom - top) * ly;
        }
      }
    });
  }

 private:
  resize::Coordinates coords_;
};

REGISTER_KERNEL_FOR_TYPES("ResizeNearestNeighbor", "CPU", ResizeNearestKernel, float, double, uint8_t);
REGISTER_KERNEL_FOR_TYPES("ResizeBilinear", "CPU", ResizeBilinearKernel, float, double);

}  // namespace
}  // namespace dflow
