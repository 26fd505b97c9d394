// Builders for the fused optimizer ops (TensorFlow-1's ApplyAdam and kin):
// one node updates a variable and its slot variables in place and outputs
// the updated variable. `var` and the slots must be Variables; literal
// hyper-parameters take var's dtype.
#pragma once

#include "graph/scope.h"

namespace dflow::ops {

// var -= alpha * delta
Output ApplyGradientDescent(const Scope& scope, const Output& var, const Input& alpha,
                            const Input& delta);

struct ApplyMomentumAttrs {
  bool use_nesterov = false;
};
// accum = accum * momentum + grad; var -= lr * accum
// (nesterov: var -= lr * grad + lr * momentum * accum)
Output ApplyMomentum(const Scope& scope, const Output& var, const Output& accum, const Input& lr,
                     const Input& grad, const Input& momentum, ApplyMomentumAttrs attrs = {});

struct ApplyAdamAttrs {
  bool use_nesterov = false;
};
// lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power)
// m = beta1 * m + (1 - beta1) * grad; v = beta2 * v + (1 - beta2) * grad^2
// var -= lr_t * m / (sqrt(v) + epsilon)
// (nesterov: var -= lr_t * (beta1 * m + (1 - beta1) * grad) / (sqrt(v) + epsilon))
Output ApplyAdam(const Scope& scope, const Output& var, const Output& m, const Output& v,
                 const Input& beta1_power, const Input& beta2_power, const Input& lr,
                 const Input& beta1, const Input& beta2, const Input& epsilon, const Input& grad,
                 ApplyAdamAttrs attrs = {});

// var -= lr * weight_decay * var (decoupled, as PyTorch's AdamW), then ApplyAdam's step.
Output ApplyAdamW(const Scope& scope, const Output& var, const Output& m, const Output& v,
                  const Input& beta1_power, const Input& beta2_power, const Input& lr,
                  const Input& beta1, const Input& beta2, const Input& epsilon,
                  const Input& weight_decay, const Input& grad);

// ms = rho * ms + (1 - rho) * grad^2
// mom = momentum * mom + lr * grad / sqrt(ms + epsilon); var -= mom
Output ApplyRMSProp(const Scope& scope, const Output& var, const Output& ms, const Output& mom,
                    const Input& lr, const Input& rho, const Input& momentum,
                    const Input& epsilon, const Input& grad);

// mg = rho * mg + (1 - rho) * grad; ms = rho * ms + (1 - rho) * grad^2
// mom = momentum * mom + lr * grad / sqrt(ms - mg^2 + epsilon); var -= mom
Output ApplyCenteredRMSProp(const Scope& scope, const Output& var, const Output& mg,
                            const Output& ms, const Output& mom, const Input& lr,
                            const Input& rho, const Input& momentum, const Input& epsilon,
                            const Input& grad);

}  // namespace dflow::ops
