// CPU TopKV2: for each row (the last dimension) a partial sort of the
// positions by a strict total order, value descending (NaN above all), then
// position ascending: exactly the first k of a stable descending sort.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <numeric>
#include <cstdint>

#include "graph/kernel.h"
#include "ops/detection_args.h"

namespace dflow {
namespace {

// Does (a at i) come before (b at j)? NaNs first, then larger values, then
// lower positions.
template <typename T>
bool Before(T a, int32_t i, T b, int32_t j) {
  if constexpr (std::is_floating_point_v<T>) {
    const bool a_nan = std::isnan(a), b_nan = std::isnan(b);
    if (a_nan || b_nan) return a_nan && b_nan ? i < j : a_nan;
  }
  if (a != b) return a > b;
  return i < j;
}

template <typename T>
class TopKKernel : public OpKernel {
 public:
  explicit TopKKernel(const Node& node) : OpKernel(node) {}

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const int64_t k = detection::CheckTopKArgs(node(), input, ctx.input(1));
    const int64_t n = input.dim(input.rank() - 1);
    DFLOW_REQUIRE(n <= INT32_MAX, node().Describe(), ": rows of ", n,
                  " entries do not fit int32 indices");
    std::vector<int64_t> dims = input.shape().dims();
    dims.back() = k;
    T* values = ctx.allocate_output(0, Shape(dims)).template data<T>();
    int32_t* indices = ctx.allocate_output(1, Shape(dims)).template data<int32_t>();
    const int64_t rows = n == 0 ? 0 : input.NumElements() / n;
    if (k == 0 || rows == 0) return;
    const T* x = input.data<T>();
    ctx.pool().ParallelFor(rows, n * 8, [&](int64_t begin, int64_t end) {
      std::vector<int32_t> order(n);
      for (int64_t r = begin; r < end; ++r) {
        const T* row = x + r * n;
        std::iota(order.begin(), order.end(), 0);
        auto before = [row](int32_t i, int32_t j) { return Before(row[i], i, row[j], j); };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        for (int64_t j = 0; j < k; ++j) {
          values[r * k + j] = row[order[j]];
          indices[r * k + j] = order[j];
        }
      }
    });
  }
};

REGISTER_KERNEL_FOR_TYPES("TopKV2", "CPU", TopKKernel, float, double, int32_t, int64_t);

}  // namespace
}  // namespace dflow
