// CPU kernel of ApplyCenteredRMSProp, in place:
//   mg = rho * mg + (1 - rho) * grad;  ms = rho * ms + (1 - rho) * grad^2
//   mom = momentum * mom + lr * grad / sqrt(ms - mg^2 + epsilon); var -= mom
#include "ops/cpu/apply_util.h"

namespace dflow {
namespace {

template <typename T>
struct CenteredRMSPropStep {
  static constexpr int64_t kCost = 14;
  T lr, rho, momentum, epsilon;

  void operator()(T* var_p, const std::array<T*, 3>& slots, const T* grad_p, int64_t n) const {
    apply::Vec<T> var(var_p, n), mg(slots[0], n), ms(slots[1], n), mom(slots[2], n);
    apply::ConstVec<T> grad(grad_p, n);
    mg = rho * mg + (T(1) - rho) * grad;
    ms = rho * ms + (T(1) - rho) * grad.square();
    mom = momentum * mom + lr * grad / (ms - mg.square() + epsilon).sqrt();
    var -= mom;
  }
};

template <typename T>
class ApplyCenteredRMSPropKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    // Inputs: var, mg, ms, mom, lr, rho, momentum, epsilon, grad.
    CenteredRMSPropStep<T> step{apply::ReadScalar<T>(ctx, 4), apply::ReadScalar<T>(ctx, 5),
                                apply::ReadScalar<T>(ctx, 6), apply::ReadScalar<T>(ctx, 7)};
    apply::Run<T>(ctx, std::array<int, 3>{1, 2, 3}, 8, step);
  }
};

REGISTER_KERNEL_FOR_TYPES("ApplyCenteredRMSProp", "CPU", ApplyCenteredRMSPropKernel, float,
                          double);

}  // namespace
}  // namespace dflow
