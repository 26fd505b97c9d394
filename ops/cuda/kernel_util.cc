#include "ops/cuda/kernel_util.h"

#include <optional>

#include "graph/graph.h"

namespace dflow::cuda {

void CheckLaunch(const OpKernelContext& ctx, const char* kernel) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    Fail(Code::kInternal, ctx.node().Describe(), ": launching CUDA kernel ", kernel, " failed: ",
         cudaGetErrorName(status), " (", cudaGetErrorString(status), ")");
}

ConvShape ConvShapeOf(const ConvGeometry& g) {
  return {g.batch,    g.in_h,     g.in_w,     g.in_c,     g.k_h,      g.k_w,
          g.filter_c, g.out_c,    g.groups,   g.out_h,    g.out_w,    g.pad_top,
          g.pad_left, g.stride_h, g.stride_w, g.dilation_h, g.dilation_w};
}

Tensor HostInput(const OpKernelContext& ctx, int input) {
  const Tensor& t = ctx.input(input);
  if (!t.allocator() || t.allocator()->host_accessible()) return t;
  // A value the graph already knows (a Const, the Shape of a tensor whose
  // shape is static) is taken from the graph: copying it back from the GPU
  // would wait for every kernel queued before it, stalling the stream.
  std::optional<Tensor> known = KnownValue(ctx.node().input(input));
  if (known && known->dtype() == t.dtype() && known->shape() == t.shape()) return *std::move(known);
  return Gpu(ctx).CopyToHost(t, ctx.node().Describe());
}

std::vector<int64_t> HostInt64s(const OpKernelContext& ctx, int input, std::string_view what) {
  return ReadInt64s(HostInput(ctx, input), what);
}

std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 1);
  for (int i = shape.rank() - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape.dim(i + 1);
  return strides;
}

void BroadcastStrides(const Shape& shape, const Shape& out, int64_t* strides) {
  std::vector<int64_t> own = cuda::Strides(shape);
  int offset = out.rank() - shape.rank();
  for (int d = 0; d < out.rank(); ++d) {
    int own_dim = d - offset;
    strides[d] = own_dim < 0 || shape.dim(own_dim) == 1 ? 0 : own[own_dim];
  }
}

}  // namespace dflow::cuda
