// Builders for neural-network activations (Relu, Relu6, LeakyRelu, Elu,
// Softplus). The ops are declared in ops/nn.cc; Softmax and its losses live in
// ops/softmax.h.
#pragma once

#include "graph/scope.h"

namespace dflow::ops {

Output Relu(const Scope& scope, const Input& features);
// gradients where features > 0, else 0 (Relu's backward pass).
Output ReluGrad(const Scope& scope, const Input& gradients, const Input& features);
Output Relu6(const Scope& scope, const Input& features);

struct LeakyReluAttrs {
  double alpha = 0.2;  // slope for negative inputs
};
Output LeakyRelu(const Scope& scope, const Input& features, LeakyReluAttrs attrs = {});
Output Elu(const Scope& scope, const Input& features);
Output Softplus(const Scope& scope, const Input& features);

}  // namespace dflow::ops
