// GPU OpKernels of Slice (a strided gather through the broadcast-copy
// kernel of elementwise.cu, 4- and 8-byte dtypes) and ConcatV2 (any dtype:
// each input's rows land in the output with one 2-D copy, rows being
// everything before the axis).
#include "ops/array_shapes.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/launch.h"

namespace dflow {
namespace {

class GpuSliceKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    for (int i : {1, 2})
      DFLOW_REQUIRE(ctx.input(i).rank() == 1, node().Describe(), ": ", i == 1 ? "begin" : "size",
                    " must be a vector, got shape ", ctx.input(i).shape().ToString());
    std::vector<int64_t> begin = cuda::HostInt64s(ctx, 1, "begin");
    Shape out = array::SliceShape(input.shape(), begin, cuda::HostInt64s(ctx, 2, "size"));
    if (out == input.shape()) return ctx.set_output(0, input);
    DFLOW_REQUIRE(out.rank() <= cuda::kMaxRank, node().Describe(), ": the GPU Slice handles up to rank ",
                  cuda::kMaxRank, ", got ", out.ToString());
    // out[coords] = input[begin + coords]: the input's strides from a shifted start.
    std::vector<int64_t> strides = cuda::Strides(input.shape());
    cuda::BroadcastIndex index;
    index.rank = out.rank();
    int64_t start = 0;
    for (int d = 0; d < index.rank; ++d) {
      index.dims[d] = out.dim(d);
      index.x_strides[d] = strides[d];
      start += begin[d] * strides[d];
    }
    Tensor& output = ctx.allocate_output(0, out);
    const int bytes = static_cast<int>(DTypeSize(input.dtype()));
    cuda::LaunchBroadcastCopy(cuda::Stream(ctx), bytes,
                              static_cast<const char*>(input.raw_data()) + start * bytes,
                              output.raw_data(), output.NumElements(), index);
    cuda::CheckLaunch(ctx, "Slice");
  }
};

class GpuConcatKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const int n = ctx.num_inputs() - 1;
    int64_t axis = array::ReadScalarInt(cuda::HostInput(ctx, n), "axis");
    std::vector<Shape> shapes;
    for (int i = 0; i < n; ++i) shapes.push_back(ctx.input(i).shape());
    Shape out = array::ConcatShape(shapes, axis);
    if (n == 1) return ctx.set_output(0, ctx.input(0));
    Tensor& output = ctx.allocate_output(0, out);
    if (output.NumElements() == 0) return;
    const int a = array::CanonicalAxis(axis, out.rank());
    int64_t rows = 1;
    for (int d = 0; d < a; ++d) rows *= out.dim(d);
    const size_t row_bytes = output.TotalBytes() / rows;
    cudaStream_t stream = cuda::Stream(ctx);
    size_t offset = 0;  // where input i's part of each output row starts
    for (int i = 0; i < n; ++i) {
      const size_t width = ctx.input(i).TotalBytes() / rows;
      if (width > 0)
        DFLOW_CUDA(cudaMemcpy2DAsync(static_cast<char*>(output.raw_data()) + offset, row_bytes,
                                     ctx.input(i).raw_data(), width, width, rows,
                                     cudaMemcpyDeviceToDevice, stream),
                   node().Describe());
      offset += width;
    }
  }
};

[[maybe_unused]] const KernelRegistrar kArrayKernels[] = {
    cuda::GpuKernel<GpuSliceKernel>("Slice", DType::kFloat32),
    cuda::GpuKernel<GpuSliceKernel>("Slice", DType::kFloat64),
    cuda::GpuKernel<GpuSliceKernel>("Slice", DType::kInt32),
    cuda::GpuKernel<GpuSliceKernel>("Slice", DType::kInt64),
    cuda::GpuKernel<GpuConcatKernel>("ConcatV2", DType::kInvalid),
};

}  // namespace
}  // namespace dflow
