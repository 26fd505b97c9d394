// CPU BroadcastTo: the input, aligned to the right and padded with leading
// 1s, is repeated along every dim where it has size 1.
#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/cpu/array_copy.h"

namespace dflow {
namespace {

class BroadcastToKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& shape = ctx.input(1);
    DFLOW_REQUIRE(shape.rank() == 1, "shape must be a vector, got shape ", shape.shape().ToString());
    std::vector<int64_t> target = ReadInt64s(shape, "shape");
    for (int64_t d : target)
      DFLOW_REQUIRE(d >= 0, "shape ", array::IntsString(target), " has a negative dimension");
    Shape out_shape = array::BroadcastToShape(input.shape(), Shape(target));
    if (out_shape.NumElements() == input.NumElements())
      return ctx.set_output(0, input.Reshaped(out_shape));  // only leading 1s were added
    std::vector<int64_t> in_dims(out_shape.rank() - input.rank(), 1);
    in_dims.insert(in_dims.end(), input.shape().dims().begin(), input.shape().dims().end());
    Tensor& output = ctx.allocate_output(0, out_shape);
    cpu::RepeatCopy(input.raw_data(), in_dims, output.raw_data(), out_shape.dims(),
                    DTypeSize(input.dtype()), ctx.pool());
  }
};

REGISTER_KERNEL("BroadcastTo", "CPU", BroadcastToKernel);

}  // namespace
}  // namespace dflow
