// CPU kernel of ApplyAdamW, in place: decoupled weight decay as PyTorch's
// AdamW does it, var -= lr * weight_decay * var, then the Adam step
// (apply::AdamStep).
#include "ops/cpu/apply_util.h"

namespace dflow {
namespace {

template <typename T>
struct AdamWTileStep {
  static constexpr int64_t kCost = 14;
  apply::AdamStep<T> adam;
  T decay;  // 1 - lr * weight_decay

  void operator()(T* var_p, const std::array<T*, 2>& slots, const T* grad, int64_t n) const {
    apply::Vec<T> var(var_p, n);
    var *= decay;
    adam(var, apply::Vec<T>(slots[0], n), apply::Vec<T>(slots[1], n),
         apply::ConstVec<T>(grad, n));
  }
};

template <typename T>
class ApplyAdamWKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    // Inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon,
    // weight_decay, grad.
    T decay = T(1) - apply::ReadScalar<T>(ctx, 5) * apply::ReadScalar<T>(ctx, 9);
    AdamWTileStep<T> step{apply::AdamStep<T>(ctx, /*nesterov=*/false), decay};
    apply::Run<T>(ctx, std::array<int, 2>{1, 2}, 10, step);
  }
};

REGISTER_KERNEL_FOR_TYPES("ApplyAdamW", "CPU", ApplyAdamWKernel, float, double);

}  // namespace
}  // namespace dflow
