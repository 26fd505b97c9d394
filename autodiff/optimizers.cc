// The optimizer base (gradients, clipping, weight decay, global step) and
// the concrete optimizers, each a thin ApplyDense over its fused apply op.
#include "autodiff/optimizers.h"

#include "autodiff/gradients.h"
#include "autodiff/learning_rate.h"
#include "ops/array.h"
#include "ops/math.h"
#include "ops/reduce.h"
#include "ops/state.h"
#include "ops/training.h"

namespace dflow::autodiff {
namespace {

constexpr std::string_view kSlotMarker = "/slots/";

Output CastTo(const Scope& s, const Output& x, DType dtype) {
  return x.dtype() == dtype ? x : ops::Cast(s, x, dtype);
}

// sum(g^2) over every element, as float64 so mixed dtypes add up.
Output SquaredNorm(const Scope& s, const Output& g) {
  return CastTo(s, ops::Sum(s, ops::Square(s, ops::Reshape(s, g, {-1})), 0), DType::kFloat64);
}

}  // namespace

std::vector<Output> TrainableVariables(const Graph& graph) {
  std::vector<Output> vars;
  for (Node* node : graph.nodes()) {
    if (!node->def().is_variable || !IsDifferentiable(node->output_dtype(0))) continue;
    if (node->name().find(kSlotMarker) != std::string::npos) continue;
    vars.emplace_back(node);
  }
  return vars;
}

std::pair<std::vector<Output>, Output> ClipByGlobalNorm(const Scope& scope,
                                                       const std::vector<Output>& grads,
                                                       double clip_norm) {
  DFLOW_REQUIRE(clip_norm > 0, "ClipByGlobalNorm: clip_norm must be positive, got ", clip_norm);
  Scope s = scope.NewSubScope("clip_by_global_norm");
  std::vector<Input> squares;
  for (const Output& g : grads)
    if (g.valid()) squares.push_back(SquaredNorm(s, g));
  DFLOW_REQUIRE(!squares.empty(), "ClipByGlobalNorm: no gradient to clip");
  Output norm = ops::Sqrt(s.WithOpName("global_norm"), ops::AddN(s, squares));
  Output scale = ops::Div(s, clip_norm, ops::Maximum(s, norm, clip_norm));
  std::vector<Output> clipped;
  for (const Output& g : grads)
    clipped.push_back(g.valid() ? ops::Mul(s, g, CastTo(s, scale, g.dtype())) : Output());
  return {clipped, norm};
}

Optimizer::Optimizer(std::string name, Output learning_rate, OptimizerOptions options)
    : name_(std::move(name)), learning_rate_(learning_rate), options_(options) {
  DFLOW_REQUIRE(learning_rate_.valid() && IsDifferentiable(learning_rate_.dtype()) &&
                    learning_rate_.shape().rank() == 0 && !learning_rate_.shape().unknown_rank(),
                name_, ": the learning rate must be a float scalar");
}

std::vector<GradAndVar> Optimizer::ComputeGradients(const Scope& scope, const Output& loss,
                                                    std::vector<Output> var_list) const {
  if (var_list.empty()) var_list = TrainableVariables(scope.graph());
  DFLOW_REQUIRE(!var_list.empty(), name_, ": there are no variables to train");
  std::vector<Output> grads = AddGradients(scope, {loss}, var_list);
  std::vector<GradAndVar> result;
  bool any = false;
  for (size_t i = 0; i < grads.size(); ++i) {
    result.push_back({grads[i], var_list[i]});
    any = any || grads[i].valid();
  }
  DFLOW_REQUIRE(any, name_, ": no variable in the list gets a gradient from loss '", loss.name(),
                "'");
  return result;
}

Node* Optimizer::ApplyGradients(const Scope& scope, const std::vector<GradAndVar>& grads_and_vars) {
  Scope s = scope.NewSubScope(name_);
  Output step = GetOrCreateGlobalStep(scope);
  std::vector<Output> grads;
  for (const GradAndVar& gv : grads_and_vars) grads.push_back(gv.grad);
  if (options_.clip_global_norm > 0) grads = ClipByGlobalNorm(s, grads, options_.clip_global_norm).first;
  std::vector<Output> applies;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].valid()) continue;
    const Output& var = grads_and_vars[i].var;
    Scope vs = s.NewSubScope(var.node()->name()).WithDevice(var.node()->requested_device());
    Output grad = grads[i];
    if (options_.weight_decay > 0)
      grad = ops::Add(vs, grad, ops::Mul(vs, var, Hyper(vs, options_.weight_decay, var.dtype())));
    applies.push_back(ApplyDense(vs, var, grad, CastTo(vs, learning_rate_, var.dtype()), step));
  }
  Output increment = ops::AssignAdd(s.WithControlDependencies(applies).WithOpName("increment_step"),
                                    step, Tensor::Scalar<int64_t>(1));
  return ops::NoOp(s.WithControlDependencies({increment}).WithOpName("train"));
}

Node* Optimizer::Minimize(const Scope& scope, const Output& loss, std::vector<Output> var_list) {
  return ApplyGradients(scope, ComputeGradients(scope, loss, std::move(var_list)));
}

FedGradients Optimizer::MinimizeWithFedGradients(const Scope& scope, const Output& loss,
                                                std::vector<Output> var_list) {
  FedGradients fed;
  std::vector<GradAndVar> applied;
  for (const GradAndVar& g : ComputeGradients(scope, loss, std::move(var_list))) {
    DFLOW_REQUIRE(g.grad.node(), name_, ": no gradient of '", loss.name(), "' reaches ", g.var.node()->name());
    fed.gradients.push_back(g.grad);
    fed.feeds.push_back(ops::Placeholder(scope.WithOpName(g.var.node()->name() + "/mean_gradient"),
                                         g.var.dtype(), g.var.shape()));
    applied.push_back({fed.feeds.back(), g.var});
  }
  fed.apply = ApplyGradients(scope, applied);
  return fed;
}

Output Optimizer::Slot(const Scope& scope, const Output& var, const std::string& slot) const {
  const Shape& shape = var.shape();
  DFLOW_REQUIRE(shape.IsFullyDefined(), name_, ": variable '", var.name(), "' has shape ",
                shape.ToString(), "; slots need a fully known shape");
  Scope root = Scope::ForGraph(scope.graph_ptr()).WithDevice(var.node()->requested_device());
  std::string name = scope.graph().UniqueName(var.node()->name() + std::string(kSlotMarker) +
                                              name_ + "_" + slot);
  Output dims = ops::Const(root.WithOpName(name + "/shape"),
                           Tensor::FromVector<int64_t>(shape.dims()));
  Output zeros = ops::Fill(root.WithOpName(name + "/zeros"), dims, Hyper(root, 0, var.dtype()));
  return ops::Variable(root.WithOpName(name), zeros);
}

Output Optimizer::Hyper(const Scope& scope, double value, DType dtype) {
  return ops::Const(scope, Tensor::Scalar(value).CastTo(dtype));
}

GradientDescentOptimizer::GradientDescentOptimizer(Output learning_rate, OptimizerOptions options)
    : Optimizer("GradientDescent", learning_rate, options) {}

Output GradientDescentOptimizer::ApplyDense(const Scope& s, const Output& var, const Output& grad,
                                            const Output& lr, const Output&) {
  return ops::ApplyGradientDescent(s, var, lr, grad);
}

MomentumOptimizer::MomentumOptimizer(Output learning_rate, double momentum, bool use_nesterov,
                                     OptimizerOptions options)
    : Optimizer("Momentum", learning_rate, options), momentum_(momentum),
      use_nesterov_(use_nesterov) {}

Output MomentumOptimizer::ApplyDense(const Scope& s, const Output& var, const Output& grad,
                                     const Output& lr, const Output&) {
  return ops::ApplyMomentum(s, var, Slot(s, var, "accum"), lr, grad,
                            Hyper(s, momentum_, var.dtype()), {.use_nesterov = use_nesterov_});
}

AdamOptimizer::AdamOptimizer(Output learning_rate, AdamOptions adam, OptimizerOptions options)
    : AdamOptimizer("Adam", learning_rate, adam, options) {}

AdamOptimizer::AdamOptimizer(std::string name, Output learning_rate, AdamOptions adam,
                             OptimizerOptions options)
    : Optimizer(std::move(name), learning_rate, options), adam_(adam) {}

namespace {

// beta1^t and beta2^t for t = step + 1 (the step being taken).
std::pair<Output, Output> BetaPowers(const Scope& s, const Output& step, const AdamOptions& adam,
                                     DType dtype) {
  Output t = ops::Cast(s, ops::Add(s, step, Tensor::Scalar<int64_t>(1)), dtype);
  auto power = [&](double beta) {
    return ops::Pow(s, ops::Const(s, Tensor::Scalar(beta).CastTo(dtype)), t);
  };
  return {power(adam.beta1), power(adam.beta2)};
}

}  // namespace

Output AdamOptimizer::ApplyDense(const Scope& s, const Output& var, const Output& grad,
                                 const Output& lr, const Output& step) {
  DType dtype = var.dtype();
  auto [beta1_power, beta2_power] = BetaPowers(s, step, adam_, dtype);
  return ops::ApplyAdam(s, var, Slot(s, var, "m"), Slot(s, var, "v"), beta1_power, beta2_power,
                        lr, Hyper(s, adam_.beta1, dtype), Hyper(s, adam_.beta2, dtype),
                        Hyper(s, adam_.epsilon, dtype), grad);
}

AdamWOptimizer::AdamWOptimizer(Output learning_rate, AdamOptions adam, OptimizerOptions options)
    : AdamOptimizer("AdamW", learning_rate, adam, options) {}

Output AdamWOptimizer::ApplyDense(const Scope& s, const Output& var, const Output& grad,
                                  const Output& lr, const Output& step) {
  DType dtype = var.dtype();
  auto [beta1_power, beta2_power] = BetaPowers(s, step, adam_, dtype);
  return ops::ApplyAdamW(s, var, Slot(s, var, "m"), Slot(s, var, "v"), beta1_power, beta2_power,
                         lr, Hyper(s, adam_.beta1, dtype), Hyper(s, adam_.beta2, dtype),
                         Hyper(s, adam_.epsilon, dtype), Hyper(s, adam_.weight_decay, dtype),
                         grad);
}

RMSPropOptimizer::RMSPropOptimizer(Output learning_rate, RMSPropOptions rms,
                                   OptimizerOptions options)
    : Optimizer("RMSProp", learning_rate, options), rms_(rms) {}

// Slots start at zero, as PyTorch's RMSprop (TensorFlow 1 starts ms at one).
Output RMSPropOptimizer::ApplyDense(const Scope& s, const Output& var, const Output& grad,
                                    const Output& lr, const Output&) {
  DType dtype = var.dtype();
  Output rho = Hyper(s, rms_.rho, dtype), momentum = Hyper(s, rms_.momentum, dtype);
  Output epsilon = Hyper(s, rms_.epsilon, dtype);
  if (rms_.centered)
    return ops::ApplyCenteredRMSProp(s, var, Slot(s, var, "mg"), Slot(s, var, "ms"),
                                     Slot(s, var, "mom"), lr, rho, momentum, epsilon, grad);
  return ops::ApplyRMSProp(s, var, Slot(s, var, "ms"), Slot(s, var, "mom"), lr, rho, momentum,
                           epsilon, grad);
}

}  // namespace dflow::autodiff
