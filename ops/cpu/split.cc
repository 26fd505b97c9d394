// CPU Split: each input row (everything before `axis`) is cut into num_split
// equal pieces, one memcpy per piece per row.
#include "graph/kernel.h"
#include "ops/array_shapes.h"

namespace dflow {
namespace {

class SplitKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(1);
    int64_t axis = array::ReadScalarInt(ctx.input(0), "axis");
    int n = ctx.num_outputs();
    Shape piece = array::SplitShape(input.shape(), axis, n);
    if (n == 1) return ctx.set_output(0, input);
    std::vector<char*> outputs;
    for (int i = 0; i < n; ++i) outputs.push_back(static_cast<char*>(ctx.allocate_output(i, piece).raw_data()));
    if (input.NumElements() == 0) return;
    int a = array::CanonicalAxis(axis, input.rank());
    int64_t outer = 1;
    for (int d = 0; d < a; ++d) outer *= input.dim(d);
    size_t elem = DTypeSize(input.dtype());
    int64_t chunk = input.NumElements() / outer / n * elem;  // bytes of one piece of one row
    const char* src = static_cast<const char*>(input.raw_data());
    ctx.pool().ParallelFor(outer, chunk * n / elem, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row)
        for (int i = 0; i < n; ++i)
          std::memcpy(outputs[i] + row * chunk, src + (row * n + i) * chunk, chunk);
    });
  }
};

REGISTER_KERNEL("Split", "CPU", SplitKernel);

}  // namespace
}  // namespace dflow
