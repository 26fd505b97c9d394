// GPU OpKernels of FusedBatchNorm and FusedBatchNormGrad (float32, NHWC):
// the shape checks are the CPU kernels' (ops/cpu/batch_norm_util.h); the
// per-channel statistics and the element-wise passes are in batch_norm.cu.
#include "ops/cpu/batch_norm_util.h"
#include "ops/cuda/batch_norm_launch.h"
#include "ops/cuda/kernel_util.h"

namespace dflow {
namespace {

// `count` floats of scratch on the kernel's GPU (stream-ordered reuse).
Tensor Scratch(OpKernelContext& ctx, int64_t count) {
  return Tensor(DType::kFloat32, Shape{count}, ctx.device().allocator());
}

float* ChannelOutput(OpKernelContext& ctx, int output, int64_t channels) {
  return ctx.allocate_output(output, Shape{channels}).data<float>();
}

class GpuFusedBatchNormKernel : public OpKernel {
 public:
  explicit GpuFusedBatchNormKernel(const Node& node)
      : OpKernel(node), epsilon_(node.attr<double>("epsilon")),
        training_(node.attr<bool>("is_training")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    int64_t channels = batch_norm::CheckForwardInputs(ctx, training_);
    Tensor coefficients = Scratch(ctx, 2 * channels);
    cuda::BatchNormForward f{x.data<float>(),
                             ctx.input(1).data<float>(),
                             ctx.input(2).data<float>(),
                             training_ ? nullptr : ctx.input(3).data<float>(),
                             training_ ? nullptr : ctx.input(4).data<float>(),
                             channels == 0 ? 0 : x.NumElements() / channels,
                             channels,
                             training_,
                             epsilon_,
                             ChannelOutput(ctx, 1, channels),
                             ChannelOutput(ctx, 2, channels),
                             ChannelOutput(ctx, 3, channels),
                             ChannelOutput(ctx, 4, channels),
                             coefficients.data<float>(),
                             coefficients.data<float>() + channels};
    cudaStream_t stream = cuda::Stream(ctx);
    cuda::LaunchBatchNormStatistics(stream, f);
    Tensor& y = ctx.allocate_output(0, x.shape());
    cuda::LaunchChannelAffine(stream, f.x, f.a, f.b, y.data<float>(), x.NumElements(), channels);
    cuda::CheckLaunch(ctx, "FusedBatchNorm");
  }

 private:
  double epsilon_;
  bool training_;
};

class GpuFusedBatchNormGradKernel : public OpKernel {
 public:
  explicit GpuFusedBatchNormGradKernel(const Node& node)
      : OpKernel(node), epsilon_(node.attr<double>("epsilon")),
        training_(node.attr<bool>("is_training")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    int64_t channels = batch_norm::CheckGradInputs(ctx);
    Tensor coefficients = Scratch(ctx, 3 * channels);
    float* k = coefficients.data<float>();
    cuda::BatchNormBackward g{dy.data<float>(),
                              x.data<float>(),
                              ctx.input(2).data<float>(),
                              ctx.input(3).data<float>(),
                              ctx.input(4).data<float>(),
                              channels == 0 ? 0 : x.NumElements() / channels,
                              channels,
                              training_,
                              epsilon_,
                              ChannelOutput(ctx, 1, channels),
                              ChannelOutput(ctx, 2, channels),
                              k,
                              k + channels,
                              k + 2 * channels};
    cudaStream_t stream = cuda::Stream(ctx);
    cuda::LaunchBatchNormGradStatistics(stream, g);
    Tensor& dx = ctx.allocate_output(0, x.shape());
    cuda::LaunchBatchNormGradApply(stream, g, dx.data<float>());
    cuda::CheckLaunch(ctx, "FusedBatchNormGrad");
  }

 private:
  double epsilon_;
  bool training_;
};

[[maybe_unused]] const KernelRegistrar kBatchNormKernels[] = {
    cuda::Float32Kernel<GpuFusedBatchNormKernel>("FusedBatchNorm"),
    cuda::Float32Kernel<GpuFusedBatchNormGradKernel>("FusedBatchNormGrad"),
};

}  // namespace
}  // namespace dflow
