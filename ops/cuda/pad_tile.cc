// GPU OpKernels of Pad, PadV2 and Tile (4- and 8-byte dtypes, up to rank 8):
// the shapes and checks are the CPU kernels' (ops/array_shapes.h), the
// paddings, multiples and constant are read on the host; kernels in
// pad_tile.cu.
#include <cstring>

#include "ops/array_shapes.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/pad_tile_launch.h"

namespace dflow {
namespace {

// The index of an input of shape `in` read by an output of shape `out`.
cuda::PadTileIndex IndexFor(const OpKernelContext& ctx, const Shape& in, const Shape& out) {
  DFLOW_REQUIRE(out.rank() <= cuda::kMaxRank, ctx.node().Describe(),
                ": the GPU kernel handles up to rank ", cuda::kMaxRank, ", got ", out.ToString());
  cuda::PadTileIndex index;
  index.rank = out.rank();
  std::vector<int64_t> strides = cuda::Strides(in);
  for (int d = 0; d < index.rank; ++d) {
    index.out_dims[d] = out.dim(d);
    index.in_dims[d] = in.dim(d);
    index.in_strides[d] = strides[d];
  }
  return index;
}

int WordBytes(const OpKernelContext& ctx, DType dtype) {
  int bytes = static_cast<int>(DTypeSize(dtype));
  DFLOW_REQUIRE(bytes == 4 || bytes == 8, ctx.node().Describe(),
                ": the GPU kernel handles 4- and 8-byte dtypes, not ", DTypeName(dtype));
  return bytes;
}

class GpuPadKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    Tensor table = cuda::HostInput(ctx, 1);
    int rank = input.rank();
    DFLOW_REQUIRE(table.rank() == 2 && table.dim(0) == rank && table.dim(1) == 2,
                  "paddings must have shape [", rank, ",2] for an input of shape ",
                  input.shape().ToString(), ", got ", table.shape().ToString());
    std::vector<int64_t> paddings = array::ReadTable(table, "paddings");
    Shape out = array::PadShape(input.shape(), paddings);
    int bytes = WordBytes(ctx, input.dtype());
    uint64_t constant = 0;
    if (ctx.num_inputs() == 3) {
      Tensor value = cuda::HostInput(ctx, 2);
      DFLOW_REQUIRE(value.rank() == 0, "constant_values must be a scalar, got shape ",
                    value.shape().ToString());
      std::memcpy(&constant, value.raw_data(), bytes);
    }
    cuda::PadTileIndex index = IndexFor(ctx, input.shape(), out);
    for (int d = 0; d < rank; ++d) index.pad_before[d] = paddings[2 * d];
    Tensor& output = ctx.allocate_output(0, out);
    cuda::LaunchPad(cuda::Stream(ctx), bytes, index, input.raw_data(), constant, output.raw_data(),
                    output.NumElements());
    cuda::CheckLaunch(ctx, "Pad");
  }
};

class GpuTileKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    DFLOW_REQUIRE(ctx.input(1).rank() == 1, "multiples must be a vector, got shape ",
                  ctx.input(1).shape().ToString());
    Shape out = array::TileShape(input.shape(), cuda::HostInt64s(ctx, 1, "multiples"));
    int bytes = WordBytes(ctx, input.dtype());
    cuda::PadTileIndex index = IndexFor(ctx, input.shape(), out);
    Tensor& output = ctx.allocate_output(0, out);
    cuda::LaunchTile(cuda::Stream(ctx), bytes, index, input.raw_data(), output.raw_data(),
                     output.NumElements());
    cuda::CheckLaunch(ctx, "Tile");
  }
};

[[maybe_unused]] const KernelRegistrar kPadTileKernels[] = {
    cuda::GpuKernel<GpuPadKernel>("Pad", DType::kFloat32),
    cuda::GpuKernel<GpuPadKernel>("Pad", DType::kInt32),
    cuda::GpuKernel<GpuPadKernel>("Pad", DType::kInt64),
    cuda::GpuKernel<GpuPadKernel>("Pad", DType::kFloat64),
    cuda::GpuKernel<GpuPadKernel>("PadV2", DType::kFloat32),
    cuda::GpuKernel<GpuPadKernel>("PadV2", DType::kInt32),
    cuda::GpuKernel<GpuPadKernel>("PadV2", DType::kInt64),
    cuda::GpuKernel<GpuPadKernel>("PadV2", DType::kFloat64),
    cuda::GpuKernel<GpuTileKernel>("Tile", DType::kFloat32),
    cuda::GpuKernel<GpuTileKernel>("Tile", DType::kInt32),
    cuda::GpuKernel<GpuTileKernel>("Tile", DType::kInt64),
    cuda::GpuKernel<GpuTileKernel>("Tile", DType::kFloat64),
};

}  // namespace
}  // namespace dflow
