// CPU Slice: a strided gather with unit strides, whose innermost run is a
// memcpy. Taking the whole input shares its buffer.
#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/cpu/array_copy.h"

namespace dflow {
namespace {

class SliceKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    for (int i : {1, 2})
      DFLOW_REQUIRE(ctx.input(i).rank() == 1, i == 1 ? "begin" : "size", " must be a vector, got shape ",
                    ctx.input(i).shape().ToString());
    std::vector<int64_t> begin = ReadInt64s(ctx.input(1), "begin");
    Shape out_shape = array::SliceShape(input.shape(), begin, ReadInt64s(ctx.input(2), "size"));
    if (out_shape == input.shape()) return ctx.set_output(0, input);
    Tensor& output = ctx.allocate_output(0, out_shape);
    std::vector<int64_t> steps = Strides(input.shape());
    int64_t base = 0;
    for (int d = 0; d < input.rank(); ++d) base += begin[d] * steps[d];
    cpu::StridedGather(input.raw_data(), base, steps, output.raw_data(), out_shape.dims(),
                       DTypeSize(input.dtype()), ctx.pool());
  }
};

REGISTER_KERNEL("Slice", "CPU", SliceKernel);

}  // namespace
}  // namespace dflow
