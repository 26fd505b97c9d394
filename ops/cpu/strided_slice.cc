// CPU StridedSlice and StridedSliceGrad. The spec (ops/array_shapes.h) gives a
// first index and a stride per input dim; StridedSlice gathers those elements
// (the output is that result with new axes inserted and shrunk axes removed),
// and StridedSliceGrad scatters dy back to the same positions of a zero tensor.
#include <cstring>

#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/cpu/array_copy.h"

namespace dflow {
namespace {

array::StridedSliceMasks MasksOf(const Node& node) {
  return {node.attr<int64_t>("begin_mask"), node.attr<int64_t>("end_mask"),
          node.attr<int64_t>("ellipsis_mask"), node.attr<int64_t>("new_axis_mask"),
          node.attr<int64_t>("shrink_axis_mask")};
}

// The elements a slice of a tensor of `shape` reads: flat positions
// base + sum_d i_d * steps[d] over the processing shape.
struct StridedIndex {
  array::StridedSliceSpec spec;
  int64_t base = 0;
  std::vector<int64_t> steps{};
  bool whole = true;  // every element, in order
};

// Reads begin/end/strides from inputs first..first+2 of ctx.
StridedIndex ComputeStridedIndex(const OpKernelContext& ctx, int first, const Shape& shape,
                                 const array::StridedSliceMasks& masks) {
  const char* names[] = {"begin", "end", "strides"};
  std::vector<int64_t> values[3];
  for (int i = 0; i < 3; ++i) {
    const Tensor& t = ctx.input(first + i);
    DFLOW_REQUIRE(t.rank() == 1, names[i], " must be a vector, got shape ", t.shape().ToString());
    values[i] = ReadInt64s(t, names[i]);
  }
  StridedIndex index{array::ComputeStridedSlice(shape, values[0], values[1], values[2], masks)};
  index.whole = index.spec.processing_shape == shape;
  std::vector<int64_t> strides = Strides(shape);
  index.steps.resize(shape.rank());
  for (int d = 0; d < shape.rank(); ++d) {
    index.base += index.spec.begin[d] * strides[d];
    index.steps[d] = index.spec.strides[d] * strides[d];
    index.whole &= index.spec.strides[d] == 1;
  }
  return index;
}

class StridedSliceKernel : public OpKernel {
 public:
  explicit StridedSliceKernel(const Node& node) : OpKernel(node), masks_(MasksOf(node)) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    StridedIndex index = ComputeStridedIndex(ctx, 1, input.shape(), masks_);
    if (index.whole) return ctx.set_output(0, input.Reshaped(index.spec.final_shape));
    Tensor& output = ctx.allocate_output(0, index.spec.final_shape);
    cpu::StridedGather(input.raw_data(), index.base, index.steps, output.raw_data(),
                       index.spec.processing_shape.dims(), DTypeSize(input.dtype()), ctx.pool());
  }

 private:
  array::StridedSliceMasks masks_;
};

// Inputs: shape, begin, end, strides, dy.
class StridedSliceGradKernel : public OpKernel {
 public:
  explicit StridedSliceGradKernel(const Node& node) : OpKernel(node), masks_(MasksOf(node)) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& shape_input = ctx.input(0);
    DFLOW_REQUIRE(shape_input.rank() == 1, "shape must be a vector, got shape ",
                  shape_input.shape().ToString());
    std::vector<int64_t> dims = ReadInt64s(shape_input, "shape");
    for (int64_t d : dims)
      DFLOW_REQUIRE(d >= 0, "shape ", array::IntsString(dims), " has a negative dimension");
    Shape shape(dims);
    StridedIndex index = ComputeStridedIndex(ctx, 1, shape, masks_);
    const Tensor& dy = ctx.input(4);
    DFLOW_REQUIRE(dy.shape() == index.spec.final_shape, "dy has shape ", dy.shape().ToString(),
                  " but the slice of a tensor of shape ", shape.ToString(), " has shape ",
                  index.spec.final_shape.ToString());
    if (index.whole) return ctx.set_output(0, dy.Reshaped(shape));
    Tensor& output = ctx.allocate_output(0, shape);
    size_t elem = DTypeSize(dy.dtype());
    std::memset(output.raw_data(), 0, output.NumElements() * elem);  // all-zero bytes are 0
    cpu::StridedScatter(dy.raw_data(), index.spec.processing_shape.dims(), output.raw_data(),
                        index.base, index.steps, elem, ctx.pool());
  }

 private:
  array::StridedSliceMasks masks_;
};

REGISTER_KERNEL("StridedSlice", "CPU", StridedSliceKernel);
REGISTER_KERNEL("StridedSliceGrad", "CPU", StridedSliceGradKernel);

}  // namespace
}  // namespace dflow
