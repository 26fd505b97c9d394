// GPU OpKernels of Less, LessEqual, Greater, GreaterEqual, Equal, NotEqual
// (float32 inputs) and LogicalAnd, LogicalOr, LogicalNot (bool), all with
// numpy broadcasting up to rank 8. The CUDA kernels are in compare.cu.
#include "graph/op_def.h"
#include "ops/cuda/compare_launch.h"
#include "ops/cuda/kernel_util.h"

namespace dflow {
namespace {

// The broadcast output shape of inputs 0 and 1 and, unless they have the
// same shape, the index that maps output elements to theirs.
struct Broadcast {
  Shape out;
  bool same_shape;
  cuda::BroadcastIndex index;
};

Broadcast BroadcastInputs(const OpKernelContext& ctx) {
  const Shape& x = ctx.input(0).shape();
  const Shape& y = ctx.input(1).shape();
  Broadcast b{BroadcastShapes(x, y), x == y, {}};
  if (b.out.rank() > cuda::kMaxRank)
    Fail(Code::kUnimplemented, ctx.node().Describe(), ": the GPU kernel broadcasts up to rank ",
         cuda::kMaxRank, ", got ", b.out.ToString());
  if (!b.same_shape) {
    b.index.rank = b.out.rank();
    for (int d = 0; d < b.index.rank; ++d) b.index.dims[d] = b.out.dim(d);
    cuda::BroadcastStrides(x, b.out, b.index.x_strides);
    cuda::BroadcastStrides(y, b.out, b.index.y_strides);
  }
  return b;
}

template <cuda::CompareFn kFn>
class GpuCompareKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    Broadcast b = BroadcastInputs(ctx);
    Tensor& z = ctx.allocate_output(0, b.out);
    cuda::LaunchCompare(cuda::Stream(ctx), kFn, ctx.input(0).data<float>(),
                        ctx.input(1).data<float>(), z.data<bool>(), z.NumElements(), b.same_shape,
                        b.index);
    cuda::CheckLaunch(ctx, "Compare");
  }
};

template <cuda::LogicalFn kFn>
class GpuLogicalKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    Broadcast b = BroadcastInputs(ctx);
    Tensor& z = ctx.allocate_output(0, b.out);
    cuda::LaunchLogical(cuda::Stream(ctx), kFn, ctx.input(0).data<bool>(),
                        ctx.input(1).data<bool>(), z.data<bool>(), z.NumElements(), b.same_shape,
                        b.index);
    cuda::CheckLaunch(ctx, "Logical");
  }
};

class GpuLogicalNotKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.allocate_output(0, x.shape());
    cuda::LaunchLogicalNot(cuda::Stream(ctx), x.data<bool>(), y.data<bool>(), x.NumElements());
    cuda::CheckLaunch(ctx, "LogicalNot");
  }
};

using cuda::CompareFn;
using cuda::LogicalFn;

[[maybe_unused]] const KernelRegistrar kCompareKernels[] = {
    cuda::Float32Kernel<GpuCompareKernel<CompareFn::kLess>>("Less"),
    cuda::Float32Kernel<GpuCompareKernel<CompareFn::kLessEqual>>("LessEqual"),
    cuda::Float32Kernel<GpuCompareKernel<CompareFn::kGreater>>("Greater"),
    cuda::Float32Kernel<GpuCompareKernel<CompareFn::kGreaterEqual>>("GreaterEqual"),
    cuda::Float32Kernel<GpuCompareKernel<CompareFn::kEqual>>("Equal"),
    cuda::Float32Kernel<GpuCompareKernel<CompareFn::kNotEqual>>("NotEqual"),
    // The logical ops have no type attr: bool in and out, registered for any dtype.
    cuda::GpuKernel<GpuLogicalKernel<LogicalFn::kAnd>>("LogicalAnd", DType::kInvalid),
    cuda::GpuKernel<GpuLogicalKernel<LogicalFn::kOr>>("LogicalOr", DType::kInvalid),
    cuda::GpuKernel<GpuLogicalNotKernel>("LogicalNot", DType::kInvalid),
};

}  // namespace
}  // namespace dflow
