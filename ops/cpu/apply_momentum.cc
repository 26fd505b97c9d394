// CPU kernel of ApplyMomentum, in place:
//   accum = accum * momentum + grad
//   var -= lr * accum   (nesterov: var -= lr * grad + lr * momentum * accum)
#include "ops/cpu/apply_util.h"

namespace dflow {
namespace {

template <typename T>
struct MomentumStep {
  static constexpr int64_t kCost = 4;
  T lr, momentum;
  bool use_nesterov;

  void operator()(T* var_p, const std::array<T*, 1>& slots, const T* grad_p, int64_t n) const {
    apply::Vec<T> var(var_p, n), accum(slots[0], n);
    apply::ConstVec<T> grad(grad_p, n);
    accum = accum * momentum + grad;
    if (use_nesterov) var -= lr * grad + (lr * momentum) * accum;
    else var -= lr * accum;
  }
};

template <typename T>
class ApplyMomentumKernel : public OpKernel {
 public:
  explicit ApplyMomentumKernel(const Node& node)
      : OpKernel(node), use_nesterov_(node.attr<bool>("use_nesterov")) {}
  void Compute(OpKernelContext& ctx) const override {
    // Inputs: var, accum, lr, grad, momentum.
    MomentumStep<T> step{apply::ReadScalar<T>(ctx, 2), apply::ReadScalar<T>(ctx, 4),
                         use_nesterov_};
    apply::Run<T>(ctx, std::array<int, 1>{1}, 3, step);
  }

 private:
  bool use_nesterov_;
};

REGISTER_KERNEL_FOR_TYPES("ApplyMomentum", "CPU", ApplyMomentumKernel, float, double);

}  // namespace
}  // namespace dflow
