// CPU UnsortedSegmentSum: output[id] += data row, rows with negative ids
// dropped. Threads split the columns, so no two write the same element.
#include <algorithm>

#include "graph/kernel.h"
#include "ops/array_shapes.h"

namespace dflow {
namespace {

template <typename T>
class UnsortedSegmentSumKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    const Tensor& data = ctx.input(0);
    const Tensor& segment_ids = ctx.input(1);
    int64_t num_segments = array::ReadScalarInt(ctx.input(2), "num_segments");
    DFLOW_REQUIRE(num_segments >= 0, "num_segments must be non-negative, got ", num_segments);
    Shape out_shape = array::SegmentSumShape(data.shape(), segment_ids.shape(), num_segments);
    std::vector<int64_t> ids = array::ReadTable(segment_ids, "segment_ids");
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] >= num_segments)
        Fail(Code::kOutOfRange, "segment_ids[", i, "] = ", ids[i], " is out of range [0, ",
             num_segments, ") (num_segments is ", num_segments, "; negative ids are dropped)");
    Tensor& output = ctx.allocate_output(0, out_shape);
    T* out = output.data<T>();
    std::fill(out, out + output.NumElements(), T(0));
    int64_t rows = static_cast<int64_t>(ids.size());
    int64_t inner = 1;
    for (int d = segment_ids.rank(); d < data.rank(); ++d) inner *= data.dim(d);
    const T* in = data.data<T>();
    ctx.pool().ParallelFor(inner, rows, [&](int64_t c0, int64_t c1) {
      for (int64_t r = 0; r < rows; ++r) {
        if (ids[r] < 0) continue;
        T* o = out + ids[r] * inner;
        const T* d = in + r * inner;
        for (int64_t c = c0; c < c1; ++c) o[c] += d[c];
      }
    });
  }
};

REGISTER_KERNEL_FOR_TYPES("UnsortedSegmentSum", "CPU", UnsortedSegmentSumKernel, float, double,
                          int32_t, int64_t);

}  // namespace
}  // namespace dflow
