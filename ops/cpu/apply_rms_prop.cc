// CPU kernel of ApplyRMSProp, in place:
//   ms = rho * ms + (1 - rho) * grad^2
//   mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom
#include "ops/cpu/apply_util.h"

namespace dflow {
namespace {

template <typename T>
struct RMSPropStep {
  static constexpr int64_t kCost = 12;
  T lr, rho, momentum, epsilon;

  void operator()(T* var_p, const std::array<T*, 2>& slots, const T* grad_p, int64_t n) const {
    apply::Vec<T> var(var_p, n), ms(slots[0], n), mom(slots[1], n);
    apply::ConstVec<T> grad(grad_p, n);
    ms = rho * ms + (T(1) - rho) * grad.square();
    mom = momentum * mom + lr * grad / (ms + epsilon).sqrt();
    var -= mom;
  }
};

template <typename T>
class ApplyRMSPropKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    // Inputs: var, ms, mom, lr, rho, momentum, epsilon, grad.
    RMSPropStep<T> step{apply::ReadScalar<T>(ctx, 3), apply::ReadScalar<T>(ctx, 4),
                        apply::ReadScalar<T>(ctx, 5), apply::ReadScalar<T>(ctx, 6)};
    apply::Run<T>(ctx, std::array<int, 2>{1, 2}, 7, step);
  }
};

REGISTER_KERNEL_FOR_TYPES("ApplyRMSProp", "CPU", ApplyRMSPropKernel, float, double);

}  // namespace
}  // namespace dflow
