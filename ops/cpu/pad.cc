// CPU Pad and PadV2: each output row (all dims but the last) is either wholly
// padding or a copy of one input row with padding before and after it.
#include "graph/kernel.h"
#include "ops/array_shapes.h"
#include "ops/cpu/array_copy.h"

namespace dflow {
namespace {

class PadKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const Tensor& table = ctx.input(1);
    int rank = input.rank();
    DFLOW_REQUIRE(table.rank() == 2 && table.dim(0) == rank && table.dim(1) == 2,
                  "paddings must have shape [", rank, ",2] for an input of shape ",
                  input.shape().ToString(), ", got ", table.shape().ToString());
    std::vector<int64_t> paddings = array::ReadTable(table, "paddings");
    Shape out_shape = array::PadShape(input.shape(), paddings);
    size_t elem = DTypeSize(input.dtype());
    uint64_t zero = 0;
    const void* value = &zero;
    if (ctx.num_inputs() == 3) {
      const Tensor& constant = ctx.input(2);
      DFLOW_REQUIRE(constant.rank() == 0, "constant_values must be a scalar, got shape ",
                    constant.shape().ToString());
      value = constant.raw_data();
    }
    Tensor& output = ctx.allocate_output(0, out_shape);
    if (output.NumElements() == 0) return;
    if (rank == 0) {
      std::memcpy(output.raw_data(), input.raw_data(), elem);
      return;
    }
    PadRows(input, paddings, value, output, ctx.pool());
  }

 private:
  static void PadRows(const Tensor& input, const std::vector<int64_t>& paddings, const void* value,
                      Tensor& output, ThreadPool& pool) {
    int outer = input.rank() - 1;
    size_t elem = DTypeSize(input.dtype());
    int64_t in_len = input.dim(outer), out_len = output.dim(outer);
    int64_t before = paddings[2 * outer], after = paddings[2 * outer + 1];
    std::vector<int64_t> in_strides = Strides(input.shape());
    const char* src = static_cast<const char*>(input.raw_data());
    char* dst = static_cast<char*>(output.raw_data());
    pool.ParallelFor(output.NumElements() / out_len, out_len, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        // Position of this row in the input, if it lies inside it.
        int64_t rest = row, offset = 0;
        bool inside = true;
        for (int d = outer - 1; d >= 0 && inside; --d) {
          int64_t i = rest % output.dim(d) - paddings[2 * d];
          rest /= output.dim(d);
          inside = i >= 0 && i < input.dim(d);
          offset += i * in_strides[d];
        }
        char* out = dst + row * out_len * elem;
        if (!inside || in_len == 0) {
          cpu::FillElements(out, value, elem, out_len);
          continue;
        }
        cpu::FillElements(out, value, elem, before);
        std::memcpy(out + before * elem, src + offset * elem, in_len * elem);
        cpu::FillElements(out + (before + in_len) * elem, value, elem, after);
      }
    });
  }
};

REGISTER_KERNEL("Pad", "CPU", PadKernel);
REGISTER_KERNEL("PadV2", "CPU", PadKernel);

}  // namespace
}  // namespace dflow
