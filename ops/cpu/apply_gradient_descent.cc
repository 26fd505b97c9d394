// CPU kernel of ApplyGradientDescent: var -= alpha * delta, in place.
#include "ops/cpu/apply_util.h"

namespace dflow {
namespace {

template <typename T>
struct GradientDescentStep {
  static constexpr int64_t kCost = 2;
  T alpha;

  void operator()(T* var, const std::array<T*, 0>&, const T* delta, int64_t n) const {
    apply::Vec<T>(var, n) -= alpha * apply::ConstVec<T>(delta, n);
  }
};

template <typename T>
class ApplyGradientDescentKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    GradientDescentStep<T> step{apply::ReadScalar<T>(ctx, 1)};
    apply::Run<T>(ctx, std::array<int, 0>{}, 2, step);
  }
};

REGISTER_KERNEL_FOR_TYPES("ApplyGradientDescent", "CPU", ApplyGradientDescentKernel, float,
                          double);

}  // namespace
}  // namespace dflow
