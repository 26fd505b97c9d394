// CPU StridedSlice: the spec (ops/array_shapes.h) gives a first index and a
// stride per input dim; the copy is a strided gather over those dims, and the
// output is that result with new axes inserted and shrunk axes removed.
#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/cpu/array_copy.h"

namespace dflow {
namespace {

class StridedSliceKernel : public OpKernel {
 public:
  explicit StridedSliceKernel(const Node& node)
      : OpKernel(node),
        masks_{node.attr<int64_t>("begin_mask"), node.attr<int64_t>("end_mask"),
               node.attr<int64_t>("ellipsis_mask"), node.attr<int64_t>("new_axis_mask"),
               node.attr<int64_t>("shrink_axis_mask")} {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const char* names[] = {"", "begin", "end", "strides"};
    std::vector<int64_t> spec_values[4];
    for (int i = 1; i <= 3; ++i) {
      DFLOW_REQUIRE(ctx.input(i).rank() == 1, names[i], " must be a vector, got shape ",
                    ctx.input(i).shape().ToString());
      spec_values[i] = ReadInt64s(ctx.input(i), names[i]);
    }
    array::StridedSliceSpec spec = array::ComputeStridedSlice(input.shape(), spec_values[1],
                                                              spec_values[2], spec_values[3], masks_);
    bool whole = spec.processing_shape == input.shape();
    for (int64_t s : spec.strides) whole &= s == 1;
    if (whole) return ctx.set_output(0, input.Reshaped(spec.final_shape));
    Tensor& output = ctx.allocate_output(0, spec.final_shape);
    std::vector<int64_t> in_strides = Strides(input.shape()), steps(input.rank());
    int64_t base = 0;
    for (int d = 0; d < input.rank(); ++d) {
      base += spec.begin[d] * in_strides[d];
      steps[d] = spec.strides[d] * in_strides[d];
    }
    cpu::StridedGather(input.raw_data(), base, steps, output.raw_data(), spec.processing_shape.dims(),
                       DTypeSize(input.dtype()), ctx.pool());
  }

 private:
  array::StridedSliceMasks masks_;
};

REGISTER_KERNEL("StridedSlice", "CPU", StridedSliceKernel);

}  // namespace
}  // namespace dflow
