// The numeric gradient checker: compares the Jacobian that AddGradients
// builds with one estimated by central differences,
//   dy_j/dx_i ~ (y_j(x + h e_i) - y_j(x - h e_i)) / 2h,
// evaluated in float64 arithmetic whatever the graph's dtype. Used by the
// tests of every gradient rule; handy for checking a new rule by hand.
#pragma once

#include <string>
#include <vector>

#include "graph/scope.h"

namespace dflow::autodiff {

struct GradientCheckOptions {
  // Step h; 0 picks 1e-6 for float64 inputs and 1e-3 for float32.
  double delta = 0;
};

struct GradientCheckResult {
  // max over Jacobian entries of |symbolic - numeric| / max(1, |numeric|):
  // an absolute error for small entries, a relative one for large entries.
  double max_error = 0;
  std::string worst;  // where max_error occurred: "d y[j] / d x<k>[i]: 0.5 vs 0.49"
};

// y depends on the Placeholders `xs`, fed `x_values`. Builds the gradient
// graph of y with respect to xs (an x without gradient counts as zeros)
// and runs both Jacobians in a fresh Session. Keep tensors small: the cost
// is (size of y + 2 * size of the xs) Session runs.
GradientCheckResult CheckGradients(const Scope& scope, const std::vector<Output>& xs,
                                   const std::vector<Tensor>& x_values, const Output& y,
                                   GradientCheckOptions options = {});

}  // namespace dflow::autodiff
