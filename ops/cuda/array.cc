// GPU OpKernels of Slice and Transpose (strided gathers through the
// broadcast-copy kernel of elementwise.cu, 4- and 8-byte dtypes), ConcatV2
// and Split (any dtype: each piece of every row moves with one 2-D copy,
// rows being everything before the axis).
#include "ops/array_shapes.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/launch.h"

namespace dflow {
namespace {

// Output 0 of shape `out`: out[coords] = input[start + sum coords[d] * steps[d]].
void StridedGather(OpKernelContext& ctx, const Tensor& input, int64_t start,
                   const std::vector<int64_t>& steps, const Shape& out) {
  DFLOW_REQUIRE(out.rank() <= cuda::kMaxRank, ctx.node().Describe(), ": the GPU kernel handles up to rank ",
                cuda::kMaxRank, ", got ", out.ToString());
  cuda::BroadcastIndex index;
  index.rank = out.rank();
  for (int d = 0; d < index.rank; ++d) {
    index.dims[d] = out.dim(d);
    index.x_strides[d] = steps[d];
  }
  Tensor& output = ctx.allocate_output(0, out);
  const int bytes = static_cast<int>(DTypeSize(input.dtype()));
  cuda::LaunchBroadcastCopy(cuda::Stream(ctx), bytes,
                            static_cast<const char*>(input.raw_data()) + start * bytes,
                            output.raw_data(), output.NumElements(), index);
  cuda::CheckLaunch(ctx, "StridedGather");
}

// Copies `rows` rows of `width` bytes between buffers whose rows are
// `dst_pitch` and `src_pitch` bytes apart.
void CopyRows(OpKernelContext& ctx, void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
              size_t width, int64_t rows) {
  if (width == 0 || rows == 0) return;
  DFLOW_CUDA(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows,
                               cudaMemcpyDeviceToDevice, cuda::Stream(ctx)),
             ctx.node().Describe());
}

// The rows of `shape` split before `axis`: the product of the dims before it.
int64_t RowsBefore(const Shape& shape, int axis) {
  int64_t rows = 1;
  for (int d = 0; d < axis; ++d) rows *= shape.dim(d);
  return rows;
}

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
    // out[coords] = input[begin + coords]: the input's strides from a shifted start.
    std::vector<int64_t> strides = cuda::Strides(input.shape());
    int64_t start = 0;
    for (int d = 0; d < out.rank(); ++d) start += begin[d] * strides[d];
    StridedGather(ctx, input, start, strides, out);
  }
};

class GpuTransposeKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    DFLOW_REQUIRE(ctx.input(1).rank() == 1, node().Describe(), ": perm must be a vector, got shape ",
                  ctx.input(1).shape().ToString());
    std::vector<int64_t> perm = cuda::HostInt64s(ctx, 1, "perm");
    Shape out = array::TransposeShape(input.shape(), perm);
    // Output dim d walks input dim perm[d].
    std::vector<int64_t> in_strides = cuda::Strides(input.shape()), steps(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) steps[d] = in_strides[perm[d]];
    StridedGather(ctx, input, 0, steps, out);
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
    const int64_t rows = RowsBefore(out, array::CanonicalAxis(axis, out.rank()));
    const size_t row_bytes = output.TotalBytes() / rows;
    size_t offset = 0;  // where input i's part of each output row starts
    for (int i = 0; i < n; ++i) {
      const size_t width = ctx.input(i).TotalBytes() / rows;
      CopyRows(ctx, static_cast<char*>(output.raw_data()) + offset, row_bytes,
               ctx.input(i).raw_data(), width, width, rows);
      offset += width;
    }
  }
};

class GpuSplitKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(1);
    int64_t axis = array::ReadScalarInt(cuda::HostInput(ctx, 0), "axis");
    const int n = ctx.num_outputs();
    Shape piece = array::SplitShape(input.shape(), axis, n);
    if (n == 1) return ctx.set_output(0, input);
    if (input.NumElements() == 0) {
      for (int i = 0; i < n; ++i) ctx.allocate_output(i, piece);
      return;
    }
    const int64_t rows = RowsBefore(input.shape(), array::CanonicalAxis(axis, input.rank()));
    const size_t row_bytes = input.TotalBytes() / rows, width = row_bytes / n;
    for (int i = 0; i < n; ++i)
      CopyRows(ctx, ctx.allocate_output(i, piece).raw_data(), width,
               static_cast<const char*>(input.raw_data()) + i * width, row_bytes, width, rows);
  }
};

[[maybe_unused]] const KernelRegistrar kArrayKernels[] = {
    cuda::GpuKernel<GpuSliceKernel>("Slice", DType::kFloat32),
    cuda::GpuKernel<GpuSliceKernel>("Slice", DType::kFloat64),
    cuda::GpuKernel<GpuSliceKernel>("Slice", DType::kInt32),
    cuda::GpuKernel<GpuSliceKernel>("Slice", DType::kInt64),
    cuda::GpuKernel<GpuTransposeKernel>("Transpose", DType::kFloat32),
    cuda::GpuKernel<GpuTransposeKernel>("Transpose", DType::kFloat64),
    cuda::GpuKernel<GpuTransposeKernel>("Transpose", DType::kInt32),
    cuda::GpuKernel<GpuTransposeKernel>("Transpose", DType::kInt64),
    cuda::GpuKernel<GpuConcatKernel>("ConcatV2", DType::kInvalid),
    cuda::GpuKernel<GpuSplitKernel>("Split", DType::kInvalid),
};

}  // namespace
}  // namespace dflow
