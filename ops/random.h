// Random tensors, seeded TensorFlow-style: a graph-level seed
// (Graph::set_seed) and an op-level seed. With either set, a fresh session
// draws the same sequence; each Run of the op draws new numbers.
#pragma once

#include "graph/scope.h"

namespace dflow::ops {

struct RandomAttrs {
  int64_t seed = 0;  // op-level seed; 0 = derive from the graph seed
};

// Uniform in [0, 1).
Output RandomUniform(const Scope& scope, const Input& shape, DType dtype, RandomAttrs attrs = {});
// Standard normal N(0, 1).
Output RandomStandardNormal(const Scope& scope, const Input& shape, DType dtype,
                            RandomAttrs attrs = {});
// N(0, 1) with values beyond two standard deviations drawn again.
Output TruncatedNormal(const Scope& scope, const Input& shape, DType dtype, RandomAttrs attrs = {});

}  // namespace dflow::ops
