// CPU kernel of ApplyAdam (TensorFlow's formula, see apply::AdamStep), in place.
#include "ops/cpu/apply_util.h"

namespace dflow {
namespace {

template <typename T>
struct AdamTileStep {
  static constexpr int64_t kCost = 12;
  apply::AdamStep<T> adam;

  void operator()(T* var, const std::array<T*, 2>& slots, const T* grad, int64_t n) const {
    adam(apply::Vec<T>(var, n), apply::Vec<T>(slots[0], n), apply::Vec<T>(slots[1], n),
         apply::ConstVec<T>(grad, n));
  }
};

template <typename T>
class ApplyAdamKernel : public OpKernel {
 public:
  explicit ApplyAdamKernel(const Node& node)
      : OpKernel(node), use_nesterov_(node.attr<bool>("use_nesterov")) {}
  void Compute(OpKernelContext& ctx) const override {
    // Inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad.
    AdamTileStep<T> step{apply::AdamStep<T>(ctx, use_nesterov_)};
    apply::Run<T>(ctx, std::array<int, 2>{1, 2}, 9, step);
  }

 private:
  bool use_nesterov_;
};

REGISTER_KERNEL_FOR_TYPES("ApplyAdam", "CPU", ApplyAdamKernel, float, double);

}  // namespace
}  // namespace dflow
