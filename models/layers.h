// Layers: small functions that add a layer's variables (with initialisers
// that GlobalVariablesInitializer runs) and its ops under a name scope.
#pragma once

#include <cstdint>

#include "graph/scope.h"

namespace dflow::models {

enum class Activation { kNone, kRelu, kTanh, kSigmoid };

struct DenseOptions {
  Activation activation = Activation::kNone;
  int64_t seed = 0;  // op-level seed of the kernel initialiser (0: from the graph seed)
};

struct DenseLayer {
  Output kernel;  // [in, units], He-normal (truncated) initialised
  Output bias;    // [units], zeros
  Output output;  // activation(x kernel + bias)
};

// A fully connected layer over the last dim of x ([batch, in], `in` known
// while building), named "<scope>/kernel", "<scope>/bias", ...
DenseLayer Dense(const Scope& scope, const Output& x, int64_t units, DenseOptions options = {});

Output Activate(const Scope& scope, const Output& x, Activation activation);

}  // namespace dflow::models
