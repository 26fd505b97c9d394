// CPU kernel of _FusedConv2D: activation(Conv2D(x, w) + bias). The same
// convolution paths as Conv2D (ops/cpu/conv2d.h), with the bias and the
// activation applied as each path's epilogue on the output block it has just
// written, so the output is walked once instead of three times.
#include "ops/cpu/conv2d.h"
#include "ops/cpu/conv_util.h"

namespace dflow {
namespace {

template <typename T>
class FusedConv2DKernel : public OpKernel {
 public:
  explicit FusedConv2DKernel(const Node& node)
      : OpKernel(node),
        params_(ConvParamsOf(node)),
        activation_(ParseConvActivation(node.attr<std::string>("activation"))) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& w = ctx.input(1);
    const Tensor& bias = ctx.input(2);
    ConvGeometry g = cpu::KernelGeometry(node(), params_, x.shape(), w.shape());
    DFLOW_REQUIRE(bias.rank() == 1 && bias.dim(0) == g.out_c, node().Describe(), ": bias ",
                  bias.shape().ToString(), " must be a vector of the ", g.out_c,
                  " output channels of filter ", w.shape().ToString());
    Tensor& y = ctx.allocate_output(0, g.output_shape());
    if (y.NumElements() == 0) return;
    cpu::ConvEpilogue<T> epilogue{bias.data<T>(), activation_};
    cpu::Conv2DForward(ctx.pool(), g, x.data<T>(), w.data<T>(), y.data<T>(), epilogue);
  }

 private:
  ConvParams params_;
  ConvActivation activation_;
};

REGISTER_KERNEL_FOR_TYPES("_FusedConv2D", "CPU", FusedConv2DKernel, float, double);

}  // namespace
}  // namespace dflow
