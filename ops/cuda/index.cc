// GPU OpKernels of GatherV2 and OneHot (4- and 8-byte element dtypes). The
// indices are copied to the host, checked there (GatherV2: an index outside
// the axis is an error naming it, as on the CPU) and sent back as int64;
// the CUDA kernels are in index.cu.
#include <cstring>

#include "ops/array_shapes.h"
#include "ops/cuda/index_launch.h"
#include "ops/cuda/kernel_util.h"

namespace dflow {
namespace {

// Input `input` (uint8, int32 or int64, any shape) as int64 values on the
// host, in row-major order.
std::vector<int64_t> HostIndices(const OpKernelContext& ctx, int input) {
  Tensor host = cuda::HostInput(ctx, input);
  if (host.dtype() != DType::kUInt8) return ReadInt64s(host.Reshaped(Shape{host.NumElements()}), "indices");
  const uint8_t* bytes = host.data<uint8_t>();
  return std::vector<int64_t>(bytes, bytes + host.NumElements());
}

int ElementBytes(const OpKernelContext& ctx, DType dtype) {
  int bytes = static_cast<int>(DTypeSize(dtype));
  DFLOW_REQUIRE(bytes == 4 || bytes == 8, ctx.node().Describe(),
                ": the GPU kernel handles 4- and 8-byte dtypes, not ", DTypeName(dtype));
  return bytes;
}

class GpuGatherKernel : public OpKernel {
 public:
  explicit GpuGatherKernel(const Node& node)
      : OpKernel(node), batch_dims_(node.attr<int64_t>("batch_dims")) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& params = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    int64_t axis_value = array::ReadScalarInt(cuda::HostInput(ctx, 2), "axis");
    Shape out_shape = array::GatherShape(params.shape(), indices.shape(), axis_value, batch_dims_);
    int axis = array::CanonicalAxis(axis_value, params.rank());
    int batch_dims = static_cast<int>(batch_dims_ < 0 ? batch_dims_ + indices.rank() : batch_dims_);
    cuda::GatherShape s{1, 1, params.dim(axis), 1, 0};
    for (int d = 0; d < batch_dims; ++d) s.batch *= params.dim(d);
    for (int d = batch_dims; d < axis; ++d) s.outer *= params.dim(d);
    for (int d = axis + 1; d < params.rank(); ++d) s.inner *= params.dim(d);
    s.m = s.batch == 0 ? 0 : indices.NumElements() / s.batch;
    std::vector<int64_t> idx = HostIndices(ctx, 1);
    for (size_t i = 0; i < idx.size(); ++i)
      if (idx[i] < 0 || idx[i] >= s.n)
        Fail(Code::kOutOfRange, "indices",
             array::IndexString(static_cast<int64_t>(i), indices.shape()), " = ", idx[i], " is out of range: params ", params.shape().ToString(), " has ", s.n,
             " entries along axis ", axis, ", so valid indices are [0, ", s.n, ")");
    Tensor& output = ctx.allocate_output(0, out_shape);
    if (output.NumElements() == 0) return;
    int bytes = ElementBytes(ctx, params.dtype());
    Tensor on_device = cuda::Gpu(ctx).CopyToDevice(Tensor::FromVector(idx), node().Describe());
    cuda::LaunchGather(cuda::Stream(ctx), bytes, s, params.raw_data(), on_device.data<int64_t>(),
                       output.raw_data());
    cuda::CheckLaunch(ctx, "Gather");
  }

 private:
  int64_t batch_dims_;
};

class GpuOneHotKernel : public OpKernel {
 public:
  explicit GpuOneHotKernel(const Node& node) : OpKernel(node), axis_(node.attr<int64_t>("axis")) {}
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& indices = ctx.input(0);
    int64_t depth = array::ReadScalarInt(cuda::HostInput(ctx, 1), "depth");
    DFLOW_REQUIRE(depth >= 0, "depth must be non-negative, got ", depth);
    Tensor on = cuda::HostInput(ctx, 2), off = cuda::HostInput(ctx, 3);
    DFLOW_REQUIRE(on.rank() == 0 && off.rank() == 0, "on_value and off_value must be scalars, got ",
                  on.shape().ToString(), " and ", off.shape().ToString());
    Tensor& output = ctx.allocate_output(0, array::OneHotShape(indices.shape(), depth, axis_));
    int bytes = ElementBytes(ctx, output.dtype());
    int split = axis_ == -1 ? indices.rank() : static_cast<int>(axis_);
    int64_t prefix = 1, suffix = 1;
    for (int d = 0; d < indices.rank(); ++d) (d < split ? prefix : suffix) *= indices.dim(d);
    if (output.NumElements() == 0) return;
    uint64_t on_bits = 0, off_bits = 0;  // little-endian: a 4-byte value sits in the low half
    std::memcpy(&on_bits, on.raw_data(), bytes);
    std::memcpy(&off_bits, off.raw_data(), bytes);
    Tensor idx = cuda::Gpu(ctx).CopyToDevice(Tensor::FromVector(HostIndices(ctx, 0)),
                                             node().Describe());
    cuda::LaunchOneHot(cuda::Stream(ctx), bytes, idx.data<int64_t>(), prefix, depth, suffix, on_bits,
                       off_bits, output.raw_data());
    cuda::CheckLaunch(ctx, "OneHot");
  }

 private:
  int64_t axis_;
};

[[maybe_unused]] const KernelRegistrar kIndexKernels[] = {
    cuda::GpuKernel<GpuGatherKernel>("GatherV2", DType::kFloat32),
    cuda::GpuKernel<GpuGatherKernel>("GatherV2", DType::kFloat64),
    cuda::GpuKernel<GpuGatherKernel>("GatherV2", DType::kInt32),
    cuda::GpuKernel<GpuGatherKernel>("GatherV2", DType::kInt64),
    cuda::GpuKernel<GpuOneHotKernel>("OneHot", DType::kFloat32),
    cuda::GpuKernel<GpuOneHotKernel>("OneHot", DType::kFloat64),
    cuda::GpuKernel<GpuOneHotKernel>("OneHot", DType::kInt32),
    cuda::GpuKernel<GpuOneHotKernel>("OneHot", DType::kInt64),
};

}  // namespace
}  // namespace dflow
