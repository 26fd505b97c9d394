// CPU kernels that only relabel a tensor's shape: Reshape, ExpandDims and
// Squeeze share the input's buffer (no copy); Identity and StopGradient pass
// the input through.
#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/handle_kernels.h"

namespace dflow {
namespace {

class ReshapeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& shape = ctx.input(1);
    DFLOW_REQUIRE(shape.rank() == 1, "shape must be a vector, got shape ", shape.shape().ToString());
    const Tensor& input = ctx.input(0);
    ctx.set_output(0, input.Reshaped(array::ReshapeShape(input.shape(), ReadInt64s(shape, "shape"))));
  }
};

class ExpandDimsKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    int64_t axis = array::ReadScalarInt(ctx.input(1), "axis");
    ctx.set_output(0, input.Reshaped(array::ExpandDimsShape(input.shape(), axis)));
  }
};

REGISTER_KERNEL("Reshape", "CPU", ReshapeKernel);
REGISTER_KERNEL("ExpandDims", "CPU", ExpandDimsKernel);
REGISTER_KERNEL("Squeeze", "CPU", SqueezeKernel);
REGISTER_KERNEL("Identity", "CPU", IdentityKernel);
REGISTER_KERNEL("StopGradient", "CPU", IdentityKernel);

}  // namespace
}  // namespace dflow
