// CPU GatherV2. With params viewed as [batch, outer, N, inner] and indices as
// [batch, M], output row (b, o, m) is params row (b, o, indices[b, m]): one
// copy of `inner` elements per row. Every index is checked before copying.
#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/cpu/array_copy.h"

namespace dflow {
namespace {

class GatherKernel : public OpKernel {
 public:
  explicit GatherKernel(const Node& node)
      : OpKernel(node), batch_dims_(node.attr<int64_t>("batch_dims")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& params = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    int64_t axis_value = array::ReadScalarInt(ctx.input(2), "axis");
    Shape out_shape = array::GatherShape(params.shape(), indices.shape(), axis_value, batch_dims_);
    int axis = array::CanonicalAxis(axis_value, params.rank());
    int batch_dims = static_cast<int>(batch_dims_ < 0 ? batch_dims_ + indices.rank() : batch_dims_);
    int64_t batch = 1, outer = 1, inner = 1, n = params.dim(axis);
    for (int d = 0; d < batch_dims; ++d) batch *= params.dim(d);
    for (int d = batch_dims; d < axis; ++d) outer *= params.dim(d);
    for (int d = axis + 1; d < params.rank(); ++d) inner *= params.dim(d);
    int64_t m = batch == 0 ? 0 : indices.NumElements() / batch;
    Tensor& output = ctx.allocate_output(0, out_shape);
    Dispatch<int32_t, int64_t>(indices.dtype(), "GatherV2 indices", [&]<typename I>() {
      const I* idx = indices.data<I>();
      for (int64_t i = 0; i < indices.NumElements(); ++i)
        if (idx[i] < 0 || idx[i] >= n)
          Fail(Code::kOutOfRange, "indices", array::IndexString(i, indices.shape()), " = ",
               int64_t{idx[i]}, " is out of range: params ", params.shape().ToString(), " has ", n,
               " entries along axis ", axis, ", so valid indices are [0, ", n, ")");
      if (output.NumElements() == 0) return;
      size_t elem = DTypeSize(params.dtype());
      cpu::DispatchByElementSize(elem, [&]<typename U>() {
        const U* src = static_cast<const U*>(params.raw_data());
        U* dst = static_cast<U*>(output.raw_data());
        ctx.pool().ParallelFor(batch * outer * m, inner + 4, [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            int64_t b = row / (outer * m), o = row / m % outer;
            const U* from = src + ((b * outer + o) * n + idx[b * m + row % m]) * inner;
            if (inner == 1) dst[row] = *from;
            else std::memcpy(dst + row * inner, from, inner * sizeof(U));
          }
        });
      });
    });
  }

 private:
  int64_t batch_dims_;
};

REGISTER_KERNEL("GatherV2", "CPU", GatherKernel);

}  // namespace
}  // namespace dflow
