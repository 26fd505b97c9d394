// Optimizers, TensorFlow-1 style: Minimize(loss) adds the gradient graph
// (AddGradients) and one fused apply op per variable (ops/training.h), and
// returns a train op to run each step. Slot variables (momentum, Adam's
// moments) are created next to their variable as "<var>/slots/<Name>_<slot>",
// initialised to zeros by GlobalVariablesInitializer; the global step
// counts the steps applied and drives the learning-rate schedule.
//
//   auto loss = ...;
//   autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(s, 1e-3));
//   Node* train = adam.Minimize(s, loss);               // every trainable variable
//   Node* fine_tune = adam.Minimize(s, loss, {w2, b2});  // the rest stays frozen
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/scope.h"

namespace dflow::autodiff {

struct GradAndVar {
  Output grad;  // invalid when no gradient reaches the variable
  Output var;
};

// Every float variable that is not an optimizer slot or the global step.
std::vector<Output> TrainableVariables(const Graph& graph);

// Scales every gradient by clip_norm / max(global_norm, clip_norm), where
// global_norm = sqrt(sum of squares of all gradients); returns the clipped
// gradients (invalid ones stay invalid) and global_norm.
std::pair<std::vector<Output>, Output> ClipByGlobalNorm(const Scope& scope,
                                                       const std::vector<Output>& grads,
                                                       double clip_norm);

// Data-parallel training (dist/training/data_parallel.h): each worker fetches
// `gradients`, and `apply` updates the variables from `feeds`, one
// placeholder "<var>/mean_gradient" per variable for the workers' mean.
struct FedGradients {
  std::vector<Output> gradients, feeds;  // in the variables' order
  Node* apply = nullptr;
};

struct OptimizerOptions {
  // L2 penalty added to each gradient: grad + weight_decay * var (AdamW
  // instead decays the weights directly; see AdamWOptimizer).
  double weight_decay = 0;
  // Clip the gradients by their global norm first (0: no clipping).
  double clip_global_norm = 0;
};

class Optimizer {
 public:
  // `learning_rate` is a scalar float Output: a constant or a schedule.
  Optimizer(std::string name, Output learning_rate, OptimizerOptions options);
  virtual ~Optimizer() = default;

  // Gradients of `loss` with respect to `var_list` (default: the trainable
  // variables). Throws naming the loss when no variable gets a gradient.
  std::vector<GradAndVar> ComputeGradients(const Scope& scope, const Output& loss,
                                           std::vector<Output> var_list = {}) const;
  // One apply op per (grad, var) with a gradient, then global_step += 1;
  // returns a NoOp "train" that runs them all.
  Node* ApplyGradients(const Scope& scope, const std::vector<GradAndVar>& grads_and_vars);
  Node* Minimize(const Scope& scope, const Output& loss, std::vector<Output> var_list = {});
  // Minimize split at the gradients, which the caller averages over the
  // workers; throws naming a variable no gradient reaches.
  FedGradients MinimizeWithFedGradients(const Scope& scope, const Output& loss,
                                        std::vector<Output> var_list = {});

  const std::string& name() const { return name_; }

 protected:
  // Adds the apply op of one variable; `lr` has var's dtype and `step`
  // (int64) is the global step before this update.
  virtual Output ApplyDense(const Scope& scope, const Output& var, const Output& grad,
                            const Output& lr, const Output& step) = 0;
  // A zero-initialised variable shaped like `var`, "<var>/slots/<name>_<slot>".
  Output Slot(const Scope& scope, const Output& var, const std::string& slot) const;
  // A hyper-parameter as a scalar of var's dtype.
  static Output Hyper(const Scope& scope, double value, DType dtype);

 private:
  std::string name_;
  Output learning_rate_;
  OptimizerOptions options_;
};

// var -= lr * grad
class GradientDescentOptimizer : public Optimizer {
 public:
  explicit GradientDescentOptimizer(Output learning_rate, OptimizerOptions options = {});

 protected:
  Output ApplyDense(const Scope&, const Output&, const Output&, const Output&,
                    const Output&) override;
};

// accum = momentum * accum + grad; var -= lr * accum (or Nesterov's form)
class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(Output learning_rate, double momentum, bool use_nesterov = false,
                    OptimizerOptions options = {});

 protected:
  Output ApplyDense(const Scope&, const Output&, const Output&, const Output&,
                    const Output&) override;

 private:
  double momentum_;
  bool use_nesterov_;
};

struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double epsilon = 1e-8;
  double weight_decay = 0;  // AdamW only: decoupled, var -= lr * weight_decay * var
};

// Adam (Kingma & Ba) with bias correction from the global step:
// beta^t with t = step + 1, so a restored run continues exactly.
class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(Output learning_rate, AdamOptions adam = {},
                         OptimizerOptions options = {});

 protected:
  AdamOptimizer(std::string name, Output learning_rate, AdamOptions adam,
                OptimizerOptions options);
  Output ApplyDense(const Scope&, const Output&, const Output&, const Output&,
                    const Output&) override;
  AdamOptions adam_;
};

// Adam with decoupled weight decay (Loshchilov & Hutter; PyTorch's AdamW).
class AdamWOptimizer : public AdamOptimizer {
 public:
  explicit AdamWOptimizer(Output learning_rate, AdamOptions adam = {.weight_decay = 0.01},
                          OptimizerOptions options = {});

 protected:
  Output ApplyDense(const Scope&, const Output&, const Output&, const Output&,
                    const Output&) override;
};

struct RMSPropOptions {
  double rho = 0.9;
  double momentum = 0;
  double epsilon = 1e-10;
  bool centered = false;  // normalise by the variance instead of the second moment
};

class RMSPropOptimizer : public Optimizer {
 public:
  explicit RMSPropOptimizer(Output learning_rate, RMSPropOptions rms = {},
                            OptimizerOptions options = {});

 protected:
  Output ApplyDense(const Scope&, const Output&, const Output&, const Output&,
                    const Output&) override;

 private:
  RMSPropOptions rms_;
};

}  // namespace dflow::autodiff
