// CPU OneHot. With indices viewed as [prefix, suffix] (split at `axis`), the
// output is [prefix, depth, suffix]: off_value everywhere, then on_value at
// (p, indices[p, s], s) for each index inside [0, depth).
#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/cpu/array_copy.h"

namespace dflow {
namespace {

class OneHotKernel : public OpKernel {
 public:
  explicit OneHotKernel(const Node& node) : OpKernel(node), axis_(node.attr<int64_t>("axis")) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& indices = ctx.input(0);
    int64_t depth = array::ReadScalarInt(ctx.input(1), "depth");
    DFLOW_REQUIRE(depth >= 0, "depth must be non-negative, got ", depth);
    const Tensor& on = ctx.input(2);
    const Tensor& off = ctx.input(3);
    DFLOW_REQUIRE(on.rank() == 0 && off.rank() == 0, "on_value and off_value must be scalars, got ",
                  on.shape().ToString(), " and ", off.shape().ToString());
    Tensor& output = ctx.allocate_output(0, array::OneHotShape(indices.shape(), depth, axis_));
    int split = axis_ == -1 ? indices.rank() : static_cast<int>(axis_);
    int64_t prefix = 1, suffix = 1;
    for (int d = 0; d < indices.rank(); ++d) (d < split ? prefix : suffix) *= indices.dim(d);
    size_t elem = DTypeSize(output.dtype());
    char* out = static_cast<char*>(output.raw_data());
    ctx.pool().ParallelFor(prefix, depth * suffix, [&](int64_t begin, int64_t end) {
      cpu::FillElements(out + begin * depth * suffix * elem, off.raw_data(), elem,
                        (end - begin) * depth * suffix);
    });
    Dispatch<uint8_t, int32_t, int64_t>(indices.dtype(), "OneHot indices", [&]<typename I>() {
      const I* idx = indices.data<I>();
      for (int64_t p = 0; p < prefix; ++p)
        for (int64_t s = 0; s < suffix; ++s) {
          int64_t i = idx[p * suffix + s];
          if (i >= 0 && i < depth)
            std::memcpy(out + ((p * depth + i) * suffix + s) * elem, on.raw_data(), elem);
        }
    });
  }

 private:
  int64_t axis_;
};

REGISTER_KERNEL("OneHot", "CPU", OneHotKernel);

}  // namespace
}  // namespace dflow
