// CPU kernels for Softmax and LogSoftmax over the last axis. Each row
// subtracts its maximum before exponentiating, so exp never overflows and the
// largest term is exp(0) = 1 (the sum is >= 1, its log is finite). Rows run
// in parallel; Eigen supplies the vectorised exp.
#include <Eigen/Core>
#include <cmath>

#include "graph/kernel.h"

namespace dflow {
namespace {

template <typename T, bool kLog>
class SoftmaxKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

  void Compute(OpKernelContext& ctx) const override {
    const Tensor& logits = ctx.input(0);
    DFLOW_REQUIRE(logits.rank() >= 1, node().Describe(), ": logits must have rank >= 1, got a scalar");
    // May share logits' buffer: each row is fully read before it is written.
    Tensor& output = ctx.forward_input_or_allocate_output(0, 0, logits.shape());
    if (output.NumElements() == 0) return;
    int64_t cols = logits.dim(logits.rank() - 1);
    int64_t rows = logits.NumElements() / cols;
    const T* in = logits.data<T>();
    T* out = output.data<T>();
    using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
    ctx.pool().ParallelFor(rows, cols * 24, [&](int64_t first, int64_t last) {
      for (int64_t r = first; r < last; ++r) {
        Eigen::Map<const Row> x(in + r * cols, cols);
        Eigen::Map<Row> y(out + r * cols, cols);
        T max = x.maxCoeff();
        if constexpr (kLog) {
          // (x - max) - log(sum): subtracting the two small terms separately
          // keeps precision when max is large.
          T log_sum = std::log((x - max).exp().sum());
          y = (x - max) - log_sum;
        } else {
          y = (x - max).exp();
          y *= T(1) / y.sum();
        }
      }
    });
  }
};

template <typename T> using Softmax = SoftmaxKernel<T, false>;
template <typename T> using LogSoftmax = SoftmaxKernel<T, true>;

REGISTER_KERNEL_FOR_TYPES("Softmax", "CPU", Softmax, float, double);
REGISTER_KERNEL_FOR_TYPES("LogSoftmax", "CPU", LogSoftmax, float, double);

}  // namespace
}  // namespace dflow
