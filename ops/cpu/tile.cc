// CPU Tile: output[i] = input[i mod input.shape] in every dim.
#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/cpu/array_copy.h"

namespace dflow {
namespace {

class TileKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& multiples = ctx.input(1);
    DFLOW_REQUIRE(multiples.rank() == 1, "multiples must be a vector, got shape ",
                  multiples.shape().ToString());
    Shape out_shape = array::TileShape(input.shape(), ReadInt64s(multiples, "multiples"));
    if (out_shape == input.shape()) return ctx.set_output(0, input);
    Tensor& output = ctx.allocate_output(0, out_shape);
    cpu::RepeatCopy(input.raw_data(), input.shape().dims(), output.raw_data(), out_shape.dims(),
                    DTypeSize(input.dtype()), ctx.pool());
  }
};

REGISTER_KERNEL("Tile", "CPU", TileKernel);

}  // namespace
}  // namespace dflow
