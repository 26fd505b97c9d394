// CPU ConcatV2: each output row (everything before `axis`) is the inputs'
// rows laid end to end, so the copy is one memcpy per input per row.
#include "graph/kernel.h"
#include "ops/array_shapes.h"

namespace dflow {
namespace {

class ConcatKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    int n = ctx.num_inputs() - 1;
    int64_t axis = array::ReadScalarInt(ctx.input(n), "axis");
    std::vector<Shape> shapes;
    for (int i = 0; i < n; ++i) shapes.push_back(ctx.input(i).shape());
    Shape out_shape = array::ConcatShape(shapes, axis);
    if (n == 1) return ctx.set_output(0, ctx.input(0));
    Tensor& output = ctx.allocate_output(0, out_shape);
    if (output.NumElements() == 0) return;
    int a = array::CanonicalAxis(axis, out_shape.rank());
    int64_t outer = 1;
    for (int d = 0; d < a; ++d) outer *= out_shape.dim(d);
    size_t elem = DTypeSize(output.dtype());
    // Bytes each input contributes to one output row.
    std::vector<int64_t> chunk(n);
    int64_t row_bytes = 0;
    for (int i = 0; i < n; ++i) row_bytes += chunk[i] = ctx.input(i).NumElements() / outer * elem;
    char* dst = static_cast<char*>(output.raw_data());
    ctx.pool().ParallelFor(outer, row_bytes / elem, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        char* out = dst + row * row_bytes;
        for (int i = 0; i < n; ++i) {
          if (chunk[i] == 0) continue;
          std::memcpy(out, static_cast<const char*>(ctx.input(i).raw_data()) + row * chunk[i], chunk[i]);
          out += chunk[i];
        }
      }
    });
  }
};

REGISTER_KERNEL("ConcatV2", "CPU", ConcatKernel);

}  // namespace
}  // namespace dflow
