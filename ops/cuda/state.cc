// GPU kernels that move or relabel tensors: _Arg/_Retval (feeds copied to the
// GPU, fetches back to the host), Const (copied once, then shared), the
// variable ops (the value lives in GPU memory), and the no-copy shape ops.
#include <limits>
#include <mutex>

#include "ops/array_shapes.h"
#include "ops/cuda/kernel_util.h"
#include "ops/handle_kernels.h"

namespace dflow {
namespace {

class GpuArgKernel : public OpKernel {
 public:
  explicit GpuArgKernel(const Node& node) : OpKernel(node), index_(node.attr<int64_t>("index")) {}
  void Compute(OpKernelContext& ctx) const override {
    ctx.set_output(0, cuda::Gpu(ctx).CopyToDevice(ctx.step().args->at(index_), node().Describe()));
  }

 private:
  int64_t index_;
};

class GpuRetvalKernel : public OpKernel {
 public:
  explicit GpuRetvalKernel(const Node& node) : OpKernel(node), index_(node.attr<int64_t>("index")) {}
  void Compute(OpKernelContext& ctx) const override {
    ctx.step().retvals->at(index_) = cuda::HostInput(ctx, 0);
  }

 private:
  int64_t index_;
};

// The value is copied on the first step and shared afterwards; the lazily
// filled cache is the only member Compute touches, under call_once.
class GpuConstKernel : public OpKernel {
 public:
  explicit GpuConstKernel(const Node& node) : OpKernel(node), host_(node.attr<Tensor>("value")) {}
  void Compute(OpKernelContext& ctx) const override {
    std::call_once(copied_, [&] { on_device_ = cuda::Gpu(ctx).CopyToDevice(host_, node().Describe()); });
    ctx.set_output(0, on_device_);
  }

 private:
  Tensor host_;
  mutable std::once_flag copied_;
  mutable Tensor on_device_;
};

class GpuReshapeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    std::vector<int64_t> dims = cuda::HostInt64s(ctx, 1, "shape");
    ctx.set_output(0, input.Reshaped(array::ReshapeShape(input.shape(), dims)));
  }
};

class GpuExpandDimsKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    int64_t axis = array::ReadScalarInt(cuda::HostInput(ctx, 1), "axis");
    ctx.set_output(0, input.Reshaped(array::ExpandDimsShape(input.shape(), axis)));
  }
};

// All-zero bits are 0 for every numeric dtype.
class GpuZerosLikeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    Tensor& out = ctx.allocate_output(0, ctx.input(0).shape());
    if (out.TotalBytes())
      DFLOW_CUDA(cudaMemsetAsync(out.raw_data(), 0, out.TotalBytes(), cuda::Stream(ctx)),
                 node().Describe());
  }
};

class GpuPlaceholderKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext&) const override {
    Fail(Code::kInvalidArgument, "placeholder '", node().name(), "' (",
         DTypeName(node().output_dtype(0)), node().output_shape(0).ToString(),
         ") must be fed a value");
  }
};

// Shape and Size read only the input's metadata; their output is declared
// in host memory (ops/cuda/host_memory.cc), where shape-like inputs are read.
void OutputInts(OpKernelContext& ctx, const std::vector<int64_t>& values, const Shape& shape) {
  Tensor& host = ctx.allocate_output(0, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (host.dtype() == DType::kInt64) {
      host.data<int64_t>()[i] = values[i];
    } else {
      DFLOW_REQUIRE(values[i] <= std::numeric_limits<int32_t>::max(), ctx.node().Describe(), ": ",
                    values[i], " does not fit in int32; use out_type=int64");
      host.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    }
  }
}

class GpuShapeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Shape& shape = ctx.input(0).shape();
    OutputInts(ctx, shape.dims(), Shape{shape.rank()});
  }
};

class GpuSizeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    OutputInts(ctx, {ctx.input(0).NumElements()}, Shape{});
  }
};

class GpuNoOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext&) const override {}
};

REGISTER_KERNEL("_Arg", "GPU", GpuArgKernel);
REGISTER_KERNEL("_Retval", "GPU", GpuRetvalKernel);
REGISTER_KERNEL("Const", "GPU", GpuConstKernel);
REGISTER_KERNEL("HostConst", "GPU", HostConstKernel);
// Variables on the GPU hold the dtypes its kernels compute on.
template <typename T> using GpuVariable = VariableKernel;
template <typename T> using GpuAssign = AssignKernel;
REGISTER_KERNEL_FOR_TYPES("VariableV2", "GPU", GpuVariable, float, double, int32_t, int64_t);
REGISTER_KERNEL_FOR_TYPES("Assign", "GPU", GpuAssign, float, double, int32_t, int64_t);
REGISTER_KERNEL("Identity", "GPU", IdentityKernel);
REGISTER_KERNEL("StopGradient", "GPU", IdentityKernel);
REGISTER_KERNEL("Reshape", "GPU", GpuReshapeKernel);
REGISTER_KERNEL("Squeeze", "GPU", SqueezeKernel);
REGISTER_KERNEL("ExpandDims", "GPU", GpuExpandDimsKernel);
REGISTER_KERNEL("ZerosLike", "GPU", GpuZerosLikeKernel);
REGISTER_KERNEL("NoOp", "GPU", GpuNoOpKernel);
REGISTER_KERNEL("Placeholder", "GPU", GpuPlaceholderKernel);
REGISTER_KERNEL("Shape", "GPU", GpuShapeKernel);
REGISTER_KERNEL("Size", "GPU", GpuSizeKernel);

}  // namespace
}  // namespace dflow
