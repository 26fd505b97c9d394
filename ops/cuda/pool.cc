// GPU OpKernels of MaxPool, AvgPool, MaxPoolGrad, MaxPoolGradGrad and
// AvgPoolGrad (float32, NHWC). The window geometry and its checks are the
// CPU kernels' (ops/cpu/pool_util.h), SAME, VALID and EXPLICIT padding alike:
// every padding reaches the device as (out, pad_before) per dim, and pool.cu
// clips each window to the image, so padding is never read or counted. The
// CUDA kernels are in pool.cu.
#include "ops/cpu/pool_util.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/pool_launch.h"

namespace dflow {
namespace {

cuda::PoolWindow2D Flatten(const PoolGeometry& g) {
  return {g.batch,       g.channels,    g.rows.in,     g.cols.in,
          g.rows.out,    g.cols.out,    g.rows.size,   g.cols.size,
          g.rows.stride, g.cols.stride, g.rows.pad_before, g.cols.pad_before};
}

// MaxPool and AvgPool: x -> pooled y.
template <bool kMax>
class GpuPoolKernel : public OpKernel {
 public:
  explicit GpuPoolKernel(const Node& node) : OpKernel(node), window_(node) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    PoolGeometry g = window_.Geometry(x.shape());
    Tensor& y = ctx.allocate_output(0, g.output_shape());
    auto launch = kMax ? cuda::LaunchMaxPool : cuda::LaunchAvgPool;
    launch(cuda::Stream(ctx), Flatten(g), x.data<float>(), y.data<float>());
    cuda::CheckLaunch(ctx, kMax ? "MaxPool" : "AvgPool");
  }

 private:
  pool::WindowAttrs window_;
};

// MaxPoolGrad (dx, orig_input's shape) and MaxPoolGradGrad (y, the pooled
// shape): both find each window's first maximum of orig_input.
template <bool kGradGrad>
class GpuMaxPoolBackKernel : public OpKernel {
 public:
  explicit GpuMaxPoolBackKernel(const Node& node) : OpKernel(node), window_(node) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& grad = ctx.input(2);
    PoolGeometry g = window_.Geometry(x.shape());
    pool::RequireShape(node(), "orig_output", ctx.input(1).shape(), g.output_shape());
    pool::RequireShape(node(), "grad", grad.shape(), kGradGrad ? x.shape() : g.output_shape());
    Tensor& out = ctx.allocate_output(0, kGradGrad ? g.output_shape() : x.shape());
    auto launch = kGradGrad ? cuda::LaunchMaxPoolGradGrad : cuda::LaunchMaxPoolGrad;
    launch(cuda::Stream(ctx), Flatten(g), x.data<float>(), grad.data<float>(), out.data<float>());
    cuda::CheckLaunch(ctx, kGradGrad ? "MaxPoolGradGrad" : "MaxPoolGrad");
  }

 private:
  pool::WindowAttrs window_;
};

class GpuAvgPoolGradKernel : public OpKernel {
 public:
  explicit GpuAvgPoolGradKernel(const Node& node) : OpKernel(node), window_(node) {}
  void Compute(OpKernelContext& ctx) const override {
    Shape input_shape(cuda::HostInt64s(ctx, 0, "orig_input_shape"));
    for (int i = 0; i < input_shape.rank(); ++i)
      DFLOW_REQUIRE(input_shape.dim(i) >= 0, node().Describe(), ": orig_input_shape ",
                    input_shape.ToString(), " has a negative dim");
    const Tensor& grad = ctx.input(1);
    PoolGeometry g = window_.Geometry(input_shape);
    pool::RequireShape(node(), "grad", grad.shape(), g.output_shape());
    Tensor& dx = ctx.allocate_output(0, input_shape);
    cuda::LaunchAvgPoolGrad(cuda::Stream(ctx), Flatten(g), grad.data<float>(), dx.data<float>());
    cuda::CheckLaunch(ctx, "AvgPoolGrad");
  }

 private:
  pool::WindowAttrs window_;
};

[[maybe_unused]] const KernelRegistrar kPoolKernels[] = {
    cuda::Float32Kernel<GpuPoolKernel<true>>("MaxPool"),
    cuda::Float32Kernel<GpuPoolKernel<false>>("AvgPool"),
    cuda::Float32Kernel<GpuMaxPoolBackKernel<false>>("MaxPoolGrad"),
    cuda::Float32Kernel<GpuMaxPoolBackKernel<true>>("MaxPoolGradGrad"),
    cuda::Float32Kernel<GpuAvgPoolGradKernel>("AvgPoolGrad"),
};

}  // namespace
}  // namespace dflow
