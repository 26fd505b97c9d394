// GPU OpKernels of the fused optimizer ops (float32): ApplyGradientDescent,
// ApplyMomentum, ApplyAdam. The checks and the variable locking are the CPU
// kernels' (ops/cpu/apply_util.h); the step runs in apply.cu. The locks are
// held while the step is enqueued: a later writer enqueues after it on the
// same stream, so the updates stay ordered.
#include "ops/cpu/apply_util.h"
#include "ops/cuda/kernel_util.h"
#include "ops/cuda/launch.h"

namespace dflow {
namespace {

// Runs launch(var, slots, grad) with var and its K slots locked, unshared
// and shape-checked; the scalar inputs are checked to be scalars. Sets
// output 0 to the updated var.
template <size_t K, typename Launch>
void RunApply(OpKernelContext& ctx, const std::array<int, K>& slot_inputs, int grad_input,
              const std::vector<int>& scalar_inputs, const Launch& launch) {
  for (int input : scalar_inputs) apply::RequireScalar(ctx, input);
  std::vector<int> refs = {0};
  refs.insert(refs.end(), slot_inputs.begin(), slot_inputs.end());
  std::vector<Variable*> found = apply::RefVariables(ctx, refs);
  std::array<Variable*, K + 1> vars;
  std::copy(found.begin(), found.end(), vars.begin());
  const Tensor& grad = ctx.input(grad_input);
  auto update = [&](const std::array<Tensor*, K + 1>& values) {
    const Shape& var_shape = values[0]->shape();
    for (size_t k = 1; k <= K; ++k) apply::RequireVarShape(ctx, refs[k], values[k]->shape(), var_shape);
    apply::RequireVarShape(ctx, grad_input, grad.shape(), var_shape);
    std::array<float*, K> slots;
    for (size_t k = 0; k < K; ++k) slots[k] = values[k + 1]->template data<float>();
    launch(values[0]->template data<float>(), slots, grad.data<float>(), values[0]->NumElements());
    cuda::CheckLaunch(ctx, ctx.node().op().c_str());
  };
  std::array<Tensor*, K + 1> values{};
  apply::UpdateAll(vars, values, update);
  ctx.set_output(0, vars[0]->Read());
}

const float* Scalar(const OpKernelContext& ctx, int input) { return ctx.input(input).data<float>(); }

// Inputs: var, alpha, delta.
class GpuApplyGradientDescent : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    cudaStream_t stream = cuda::Stream(ctx);
    RunApply(ctx, std::array<int, 0>{}, 2, {1},
             [&](float* var, const std::array<float*, 0>&, const float* delta, int64_t n) {
               cuda::LaunchApplyGradientDescent(stream, var, Scalar(ctx, 1), delta, n);
             });
  }
};

// Inputs: var, accum, lr, grad, momentum.
class GpuApplyMomentum : public OpKernel {
 public:
  explicit GpuApplyMomentum(const Node& node)
      : OpKernel(node), use_nesterov_(node.attr<bool>("use_nesterov")) {}
  void Compute(OpKernelContext& ctx) const override {
    cudaStream_t stream = cuda::Stream(ctx);
    RunApply(ctx, std::array<int, 1>{1}, 3, {2, 4},
             [&](float* var, const std::array<float*, 1>& slots, const float* grad, int64_t n) {
               cuda::LaunchApplyMomentum(stream, var, slots[0], Scalar(ctx, 2), grad,
                                         Scalar(ctx, 4), use_nesterov_, n);
             });
  }

 private:
  bool use_nesterov_;
};

// Inputs: var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad.
class GpuApplyAdam : public OpKernel {
 public:
  explicit GpuApplyAdam(const Node& node)
      : OpKernel(node), use_nesterov_(node.attr<bool>("use_nesterov")) {}
  void Compute(OpKernelContext& ctx) const override {
    cudaStream_t stream = cuda::Stream(ctx);
    cuda::AdamHyper hyper{Scalar(ctx, 3), Scalar(ctx, 4), Scalar(ctx, 5),
                          Scalar(ctx, 6), Scalar(ctx, 7), Scalar(ctx, 8)};
    RunApply(ctx, std::array<int, 2>{1, 2}, 9, {3, 4, 5, 6, 7, 8},
             [&](float* var, const std::array<float*, 2>& slots, const float* grad, int64_t n) {
               cuda::LaunchApplyAdam(stream, var, slots[0], slots[1], grad, hyper, use_nesterov_, n);
             });
  }

 private:
  bool use_nesterov_;
};

// Inputs: var, ms, mom, lr, rho, momentum, epsilon, grad.
class GpuApplyRMSProp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    cudaStream_t stream = cuda::Stream(ctx);
    cuda::RMSPropHyper hyper{Scalar(ctx, 3), Scalar(ctx, 4), Scalar(ctx, 5), Scalar(ctx, 6)};
    RunApply(ctx, std::array<int, 2>{1, 2}, 7, {3, 4, 5, 6},
             [&](float* var, const std::array<float*, 2>& slots, const float* grad, int64_t n) {
               cuda::LaunchApplyRMSProp(stream, var, slots[0], slots[1], grad, hyper, n);
             });
  }
};

template <typename T> using GpuGradientDescent = GpuApplyGradientDescent;
template <typename T> using GpuRMSProp = GpuApplyRMSProp;
template <typename T> using GpuMomentum = GpuApplyMomentum;
template <typename T> using GpuAdam = GpuApplyAdam;

REGISTER_KERNEL_FOR_TYPES("ApplyGradientDescent", "GPU", GpuGradientDescent, float);
REGISTER_KERNEL_FOR_TYPES("ApplyMomentum", "GPU", GpuMomentum, float);
REGISTER_KERNEL_FOR_TYPES("ApplyAdam", "GPU", GpuAdam, float);
REGISTER_KERNEL_FOR_TYPES("ApplyRMSProp", "GPU", GpuRMSProp, float);

}  // namespace
}  // namespace dflow
