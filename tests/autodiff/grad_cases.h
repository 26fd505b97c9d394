// The numeric gradient check cases, one or more per differentiable op. The
// registry walk (test_grad_rules.cc) fails for any op with a gradient rule
// and no case here, so a new rule cannot land unchecked.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/scope.h"

namespace dflow::testing {

struct GradCase {
  std::string op;  // the op whose rule this checks
  std::vector<Shape> shapes;  // one per float input, fed through Placeholders
  std::function<Output(const Scope&, const std::vector<Output>&)> build;
  double lo = -1, hi = 1;  // inputs drawn uniformly from [lo, hi)
  // Push values to |v| >= 0.2, away from kinks and poles at 0.
  bool away_from_zero = false;
};

const std::vector<GradCase>& GradCases();

}  // namespace dflow::testing
