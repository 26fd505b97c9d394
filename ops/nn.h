// Builders for neural-network activations (Relu, Relu6, LeakyRelu, Elu,
// Softplus), BiasAdd and Dropout. The ops are declared in ops/nn.cc; Softmax
// and its losses live in ops/softmax.h, pooling in ops/pool.h.
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

// output[..., c] = value[..., c] + bias[c]: bias (rank 1) over the last dim
// of value (rank >= 2), which must have bias's length.
Output BiasAdd(const Scope& scope, const Input& value, const Input& bias);
// BiasAdd's gradient for the bias: out_backprop summed over all but the last dim.
Output BiasAddGrad(const Scope& scope, const Input& out_backprop);

struct DropoutAttrs {
  int64_t seed = 0;  // op-level seed of the RandomUniform mask (see ops/random.h)
};
// Inverted dropout, composed of existing ops (so autodiff needs no rule):
//   keep = RandomUniform(shape(x)) >= rate;  y = x * keep / (1 - rate).
// Each element survives with probability 1 - rate, and E[y] = x. rate must
// be in [0, 1); rate 0 returns x itself. A fresh mask is drawn every Run.
Output Dropout(const Scope& scope, const Input& x, double rate, DropoutAttrs attrs = {});

}  // namespace dflow::ops
