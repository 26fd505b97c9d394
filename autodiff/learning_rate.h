// The global step and learning-rate schedules, computed in the graph from
// the global step variable, so a schedule survives a checkpoint/restore and
// runs wherever the optimizer runs. Each schedule returns a scalar of
// `dtype` (float32 unless asked otherwise).
#pragma once

#include "graph/scope.h"

namespace dflow::autodiff {

// The int64 scalar variable "global_step" (initialised to 0 by
// GlobalVariablesInitializer), created on first use.
Output GetOrCreateGlobalStep(const Scope& scope);

// lr, constant.
Output ConstantLearningRate(const Scope& scope, double lr, DType dtype = DType::kFloat32);

struct StepDecayOptions {
  int64_t decay_steps = 1000;
  double decay_rate = 0.1;
  bool staircase = true;  // decay in steps (floor) rather than continuously
};
// lr * decay_rate ^ (step / decay_steps)
Output StepDecay(const Scope& scope, double lr, const Output& step, StepDecayOptions options,
                 DType dtype = DType::kFloat32);

struct CosineDecayOptions {
  int64_t decay_steps = 1000;
  double alpha = 0;  // the floor, as a fraction of lr
};
// lr * ((1 - alpha) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2 + alpha)
Output CosineDecay(const Scope& scope, double lr, const Output& step, CosineDecayOptions options,
                   DType dtype = DType::kFloat32);

// Scales a schedule by min(1, (step + 1) / warmup_steps): a linear ramp
// over the first warmup_steps steps, then `lr` itself.
Output LinearWarmup(const Scope& scope, const Output& lr, const Output& step,
                    int64_t warmup_steps);

}  // namespace dflow::autodiff
