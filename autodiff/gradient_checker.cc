// Symbolic vs numeric Jacobians; see gradient_checker.h.
#include "autodiff/gradient_checker.h"

#include <algorithm>
#include <cmath>

#include "autodiff/gradients.h"
#include "graph/session.h"
#include "ops/state.h"

namespace dflow::autodiff {
namespace {

void SetFromDouble(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::kFloat64) t.data<double>()[i] = v;
  else if (t.dtype() == DType::kFloat32) t.data<float>()[i] = static_cast<float>(v);
  else Fail(Code::kInvalidArgument, "CheckGradients: x of dtype ", DTypeName(t.dtype()),
            " (only float32 and float64 can be perturbed)");
}

FeedList Feeds(const std::vector<Output>& xs, const std::vector<Tensor>& values) {
  FeedList feeds;
  for (size_t k = 0; k < xs.size(); ++k) feeds.emplace_back(xs[k], values[k]);
  return feeds;
}

// jacobian[k][j * n_k + i] = d y[j] / d x_k[i]
using Jacobians = std::vector<std::vector<double>>;

Jacobians Symbolic(Session& session, const std::vector<Output>& xs,
                   const std::vector<Tensor>& values, const Output& dy, const Tensor& y_value,
                   const std::vector<Output>& grads) {
  std::vector<TensorName> fetches;
  for (const Output& g : grads)
    if (g.valid()) fetches.emplace_back(g);
  int64_t ny = y_value.NumElements();
  Jacobians jac(xs.size());
  for (size_t k = 0; k < xs.size(); ++k) jac[k].assign(ny * values[k].NumElements(), 0.0);
  for (int64_t j = 0; j < ny; ++j) {
    Tensor seed = Tensor::Zeros(y_value.dtype(), y_value.shape());
    SetFromDouble(seed, j, 1.0);
    FeedList feeds = Feeds(xs, values);
    feeds.emplace_back(dy, seed);
    std::vector<Tensor> out = fetches.empty() ? std::vector<Tensor>{} : session.Run(feeds, fetches);
    for (size_t k = 0, f = 0; k < xs.size(); ++k) {
      if (!grads[k].valid()) continue;
      const Tensor& g = out[f++];
      DFLOW_REQUIRE(g.shape() == values[k].shape(), "CheckGradients: the gradient of x", k,
                    " has shape ", g.shape().ToString(), " but x", k, " has shape ",
                    values[k].shape().ToString());
      int64_t nx = g.NumElements();
      for (int64_t i = 0; i < nx; ++i) jac[k][j * nx + i] = ReadAsDouble(g, i);
    }
  }
  return jac;
}

Jacobians Numeric(Session& session, const std::vector<Output>& xs,
                  const std::vector<Tensor>& values, const Output& y, int64_t ny, double delta) {
  Jacobians jac(xs.size());
  for (size_t k = 0; k < xs.size(); ++k) {
    int64_t nx = values[k].NumElements();
    jac[k].assign(ny * nx, 0.0);
    for (int64_t i = 0; i < nx; ++i) {
      std::vector<Tensor> plus = values, minus = values;
      plus[k] = values[k].Clone();
      minus[k] = values[k].Clone();
      double x = ReadAsDouble(values[k], i);
      SetFromDouble(plus[k], i, x + delta);
      SetFromDouble(minus[k], i, x - delta);
      // The step actually taken after rounding to the tensor's dtype.
      double step = ReadAsDouble(plus[k], i) - ReadAsDouble(minus[k], i);
      Tensor y_plus = session.Run(Feeds(xs, plus), {y})[0];
      Tensor y_minus = session.Run(Feeds(xs, minus), {y})[0];
      for (int64_t j = 0; j < ny; ++j)
        jac[k][j * nx + i] = (ReadAsDouble(y_plus, j) - ReadAsDouble(y_minus, j)) / step;
    }
  }
  return jac;
}

}  // namespace

GradientCheckResult CheckGradients(const Scope& scope, const std::vector<Output>& xs,
                                   const std::vector<Tensor>& x_values, const Output& y,
                                   GradientCheckOptions options) {
  DFLOW_REQUIRE(xs.size() == x_values.size(), "CheckGradients: ", xs.size(), " xs but ",
                x_values.size(), " values");
  Output dy = ops::Placeholder(scope.WithOpName("check_dy"), y.dtype(), y.shape());
  std::vector<Output> grads = AddGradients(scope, {y}, xs, {dy});
  Session session(scope);
  Tensor y_value = session.Run(Feeds(xs, x_values), {y})[0];
  double delta = options.delta;
  if (delta == 0) delta = y.dtype() == DType::kFloat64 ? 1e-6 : 1e-3;
  Jacobians symbolic = Symbolic(session, xs, x_values, dy, y_value, grads);
  Jacobians numeric = Numeric(session, xs, x_values, y, y_value.NumElements(), delta);
  GradientCheckResult result;
  for (size_t k = 0; k < xs.size(); ++k) {
    int64_t nx = x_values[k].NumElements();
    for (size_t e = 0; e < symbolic[k].size(); ++e) {
      double a = symbolic[k][e], b = numeric[k][e];
      double error = std::abs(a - b) / std::max(1.0, std::abs(b));
      if (std::isnan(a) || std::isnan(b)) error = std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
      if (error > result.max_error) {
        result.max_error = error;
        result.worst = StrCat("d y[", e / nx, "] / d x", k, "[", e % nx, "]: symbolic ", a,
                              " vs numeric ", b);
      }
    }
  }
  return result;
}

}  // namespace dflow::autodiff
