// CPU kernels that read a tensor's shape: Shape, Size and Rank.
#include <algorithm>
#include <limits>

#include "graph/kernel.h"

namespace dflow {
namespace {

// Writes `values` as the node's output (int32 or int64).
void OutputInts(OpKernelContext& ctx, const std::vector<int64_t>& values, Shape shape) {
  Tensor& output = ctx.allocate_output(0, std::move(shape));
  if (output.dtype() == DType::kInt64) {
    std::copy(values.begin(), values.end(), output.data<int64_t>());
    return;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    DFLOW_REQUIRE(values[i] <= std::numeric_limits<int32_t>::max(), values[i],
                  " does not fit in int32; use out_type=int64");
    output.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
  }
}

class ShapeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Shape& shape = ctx.input(0).shape();
    OutputInts(ctx, shape.dims(), Shape{shape.rank()});
  }
};

class SizeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    OutputInts(ctx, {ctx.input(0).NumElements()}, Shape{});
  }
};

class RankKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    OutputInts(ctx, {ctx.input(0).rank()}, Shape{});
  }
};

REGISTER_KERNEL("Shape", "CPU", ShapeKernel);
REGISTER_KERNEL("Size", "CPU", SizeKernel);
REGISTER_KERNEL("Rank", "CPU", RankKernel);

}  // namespace
}  // namespace dflow
