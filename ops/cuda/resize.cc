// GPU OpKernels of ResizeNearestNeighbor, ResizeBilinear and their
// gradients (float32, NHWC). The coordinate maps come from the CPU kernels'
// rules (ops/cpu/resize_util.h), computed on the host per step and copied
// to the GPU (out_h + out_w taps); the kernels are in resize.cu.
#include "ops/cpu/resize_util.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/resize_launch.h"

namespace dflow {
namespace {

using resize::Geometry;
using Tap = resize::Coordinates::Tap;

cuda::ResizeShape Flatten(const Geometry& g) {
  return {g.batch, g.in_h, g.in_w, g.out_h, g.out_w, g.channels};
}

// The taps of every output row and column, on the GPU: `indices` holds
// [y_lower | y_upper | x_lower | x_upper], `lerps` [y_lerp | x_lerp].
class DeviceTaps {
 public:
  DeviceTaps(OpKernelContext& ctx, const std::vector<Tap>& ys, const std::vector<Tap>& xs) {
    const int64_t h = static_cast<int64_t>(ys.size()), w = static_cast<int64_t>(xs.size());
    Tensor indices(DType::kInt64, Shape{2 * (h + w)});
    Tensor lerps(DType::kFloat32, Shape{h + w});
    int64_t* index = indices.data<int64_t>();
    float* lerp = lerps.data<float>();
    for (int64_t i = 0; i < h; ++i) {
      index[i] = ys[i].lower;
      index[h + i] = ys[i].upper;
      lerp[i] = static_cast<float>(ys[i].lerp);
    }
    for (int64_t j = 0; j < w; ++j) {
      index[2 * h + j] = xs[j].lower;
      index[2 * h + w + j] = xs[j].upper;
      lerp[h + j] = static_cast<float>(xs[j].lerp);
    }
    const std::string context = ctx.node().Describe();
    indices_ = cuda::Gpu(ctx).CopyToDevice(indices, context);
    lerps_ = cuda::Gpu(ctx).CopyToDevice(lerps, context);
    const int64_t* on_device = indices_.data<int64_t>();
    taps_ = {on_device, on_device + h, on_device + 2 * h, on_device + 2 * h + w,
             lerps_.data<float>(), lerps_.data<float>() + h};
  }
  const cuda::ResizeTaps& taps() const { return taps_; }

 private:
  Tensor indices_, lerps_;
  cuda::ResizeTaps taps_;
};

// Nearest neighbour as taps: lower = upper = the source, weight 0.
std::vector<Tap> NearestTaps(const resize::Coordinates& coords, int64_t in, int64_t out) {
  std::vector<Tap> taps;
  for (int64_t source : coords.Nearest(in, out)) taps.push_back({source, source, 0.0});
  return taps;
}

DeviceTaps TapsFor(OpKernelContext& ctx, const resize::Coordinates& coords, const Geometry& g,
                   bool bilinear) {
  if (bilinear) return DeviceTaps(ctx, coords.Linear(g.in_h, g.out_h), coords.Linear(g.in_w, g.out_w));
  return DeviceTaps(ctx, NearestTaps(coords, g.in_h, g.out_h), NearestTaps(coords, g.in_w, g.out_w));
}

template <bool kBilinear>
class GpuResizeKernel : public OpKernel {
 public:
  explicit GpuResizeKernel(const Node& node) : OpKernel(node), coords_(node) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& images = ctx.input(0);
    Geometry g = resize::ForwardGeometry(node(), images, cuda::HostInput(ctx, 1));
    Tensor& out = ctx.allocate_output(0, g.OutShape());
    DeviceTaps taps = TapsFor(ctx, coords_, g, kBilinear);
    auto launch = kBilinear ? cuda::LaunchResizeBilinear : cuda::LaunchResizeNearest;
    launch(cuda::Stream(ctx), Flatten(g), taps.taps(), images.data<float>(), out.data<float>());
    cuda::CheckLaunch(ctx, kBilinear ? "ResizeBilinear" : "ResizeNearestNeighbor");
  }

 private:
  resize::Coordinates coords_;
};

class GpuResizeNearestGradKernel : public OpKernel {
 public:
  explicit GpuResizeNearestGradKernel(const Node& node) : OpKernel(node), coords_(node) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& grads = ctx.input(0);
    auto [in_h, in_w] = resize::ReadSize(node(), cuda::HostInput(ctx, 1));
    Geometry g = resize::GradGeometry(node(), grads, in_h, in_w);
    Tensor& dx = ctx.allocate_output(0, g.InShape());
    DeviceTaps taps = TapsFor(ctx, coords_, g, false);
    cuda::LaunchResizeNearestGrad(cuda::Stream(ctx), Flatten(g), taps.taps(), grads.data<float>(),
                                  dx.data<float>());
    cuda::CheckLaunch(ctx, "ResizeNearestNeighborGrad");
  }

 private:
  resize::Coordinates coords_;
};

class GpuResizeBilinearGradKernel : public OpKernel {
 public:
  explicit GpuResizeBilinearGradKernel(const Node& node) : OpKernel(node), coords_(node) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& grads = ctx.input(0);
    Geometry g = resize::BilinearGradGeometry(node(), grads, ctx.input(1));
    Tensor& dx = ctx.allocate_output(0, g.InShape());
    DeviceTaps taps = TapsFor(ctx, coords_, g, true);
    cuda::LaunchResizeBilinearGrad(cuda::Stream(ctx), Flatten(g), taps.taps(), grads.data<float>(),
                                   dx.data<float>());
    cuda::CheckLaunch(ctx, "ResizeBilinearGrad");
  }

 private:
  resize::Coordinates coords_;
};

[[maybe_unused]] const KernelRegistrar kResizeKernels[] = {
    cuda::Float32Kernel<GpuResizeKernel<false>>("ResizeNearestNeighbor"),
    cuda::Float32Kernel<GpuResizeKernel<true>>("ResizeBilinear"),
    cuda::Float32Kernel<GpuResizeNearestGradKernel>("ResizeNearestNeighborGrad"),
    cuda::Float32Kernel<GpuResizeBilinearGradKernel>("ResizeBilinearGrad"),
};

}  // namespace
}  // namespace dflow
