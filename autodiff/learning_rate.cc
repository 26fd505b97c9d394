// Global step and learning-rate schedules; see learning_rate.h.
#include "autodiff/learning_rate.h"

#include <numbers>

#include "ops/array.h"
#include "ops/math.h"
#include "ops/state.h"

namespace dflow::autodiff {
namespace {

constexpr char kGlobalStep[] = "global_step";

// The step as a float of `dtype`.
Output StepAs(const Scope& s, const Output& step, DType dtype) {
  return step.dtype() == dtype ? step : ops::Cast(s, step, dtype);
}

Output Scalar(const Scope& s, double value, DType dtype) {
  return ops::Const(s, Tensor::Scalar(value).CastTo(dtype));
}

}  // namespace

Output GetOrCreateGlobalStep(const Scope& scope) {
  if (Node* existing = scope.graph().FindNode(kGlobalStep)) {
    DFLOW_REQUIRE(existing->def().is_variable && existing->output_dtype(0) == DType::kInt64,
                  "node 'global_step' exists but is not an int64 variable (it is ",
                  existing->Describe(), ")");
    return Output(existing);
  }
  Scope root = Scope::ForGraph(scope.graph_ptr()).WithDevice(scope.device());
  return ops::Variable(root.WithOpName(kGlobalStep), Tensor::Scalar<int64_t>(0));
}

Output ConstantLearningRate(const Scope& scope, double lr, DType dtype) {
  return Scalar(scope.WithOpName("learning_rate"), lr, dtype);
}

Output StepDecay(const Scope& scope, double lr, const Output& step, StepDecayOptions options,
                 DType dtype) {
  DFLOW_REQUIRE(options.decay_steps > 0, "StepDecay: decay_steps must be positive, got ",
                options.decay_steps);
  Scope s = scope.NewSubScope("step_decay");
  Output progress = ops::Div(s, StepAs(s, step, dtype), Scalar(s, options.decay_steps, dtype));
  if (options.staircase) progress = ops::Floor(s, progress);
  return ops::Mul(s, Scalar(s, lr, dtype), ops::Pow(s, Scalar(s, options.decay_rate, dtype), progress));
}

Output CosineDecay(const Scope& scope, double lr, const Output& step, CosineDecayOptions options,
                   DType dtype) {
  DFLOW_REQUIRE(options.decay_steps > 0, "CosineDecay: decay_steps must be positive, got ",
                options.decay_steps);
  Scope s = scope.NewSubScope("cosine_decay");
  Output total = Scalar(s, options.decay_steps, dtype);
  Output progress = ops::Div(s, ops::Minimum(s, StepAs(s, step, dtype), total), total);
  Output cosine = ops::Mul(s, ops::Add(s, ops::Cos(s, ops::Mul(s, progress, std::numbers::pi)), 1.0), 0.5);
  Output decayed = ops::Add(s, ops::Mul(s, cosine, 1 - options.alpha), options.alpha);
  return ops::Mul(s, decayed, Scalar(s, lr, dtype));
}

Output LinearWarmup(const Scope& scope, const Output& lr, const Output& step,
                    int64_t warmup_steps) {
  DFLOW_REQUIRE(warmup_steps > 0, "LinearWarmup: warmup_steps must be positive, got ",
                warmup_steps);
  Scope s = scope.NewSubScope("warmup");
  Output ramp = ops::Div(s, ops::Add(s, StepAs(s, step, lr.dtype()), 1.0),
                         Scalar(s, warmup_steps, lr.dtype()));
  return ops::Mul(s, lr, ops::Minimum(s, ramp, 1.0));
}

}  // namespace dflow::autodiff
