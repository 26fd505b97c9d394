// Horovod's DistributedOptimizer for dflow graphs: wraps any optimizer so
// that its gradients are averaged over the workers of a data-parallel job
// before they are applied. The averaging is in the graph
// (`DataParallelAllReduce` ops: ring all-reduce of gradient buckets, each
// started as soon as backprop filled it), so a training step is one
// Session::Run of the train op; `BroadcastVariables` makes every worker
// start from the chief's values (Horovod's broadcast_global_variables(0)).
//
//   autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(scope, 0.01));
//   dist::DistributedOptimizer optimizer(adam);  // the job `dflow launch` started this process in
//   Node* train = optimizer.Minimize(scope, loss);
//   Node* init = ops::GlobalVariablesInitializer(scope);
//   Node* sync = optimizer.BroadcastVariables(scope);
//   Session session(scope);
//   session.Run({}, {}, {init});   // (the chief may restore a checkpoint here)
//   session.Run({}, {}, {sync});
//   for (...) session.Run(this_workers_batch, {loss}, {train});
//   optimizer.Finish();
//
// The workers build the same graph and run the same steps; each feeds its
// own shard. Parameter servers keep the variables elsewhere and apply the
// updates there: that strategy runs through dist::PsWorker (ps_training.h).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "autodiff/optimizers.h"
#include "dist/training/data_parallel_group.h"

namespace dflow::dist {

class DistributedOptimizer {
 public:
  // Joins the job that the launcher's variables describe (DFLOW_CLUSTER and
  // the others of dist/cluster_environment.h; DFLOW_STRATEGY "ring" or
  // unset); a process started without a cluster is a job of one worker.
  // The workers connect at the first step or broadcast, not here.
  explicit DistributedOptimizer(autodiff::Optimizer& optimizer, const StrategyOptions& options = {});
  // Worker `worker` of `num_workers`, joined by the strategy `factory` makes
  // (threads of one process over an InProcessNetwork, say). A step fails
  // when its gradients do not all reach the all-reduce within `step_timeout`.
  DistributedOptimizer(autodiff::Optimizer& optimizer, int worker, int num_workers,
                       DataParallelGroup::StrategyFactory factory,
                       std::chrono::milliseconds step_timeout = std::chrono::seconds(60));

  // The optimizer's gradients, each replaced by its mean over the workers
  // (handed to the all-reduce in backprop order: last variable first).
  std::vector<autodiff::GradAndVar> ComputeGradients(const Scope& scope, const Output& loss,
                                                     std::vector<Output> var_list = {});
  Node* ApplyGradients(const Scope& scope, const std::vector<autodiff::GradAndVar>& grads_and_vars) {
    return optimizer_.ApplyGradients(scope, grads_and_vars);
  }
  Node* Minimize(const Scope& scope, const Output& loss, std::vector<Output> var_list = {});

  // A NoOp that assigns every variable of the graph as built so far (the
  // model's, optimizer slots, global step, batch-norm statistics) the
  // chief's value, one variable after the other in creation order. Run it
  // after initialising (and the chief's restore), before the first step.
  Node* BroadcastVariables(const Scope& scope);

  int worker() const { return group_->worker(); }
  int num_workers() const { return group_->num_workers(); }
  bool is_chief() const { return worker() == 0; }
  // Between steps: true on every worker when `flag` is true on any (a stop
  // request that reached one worker stops all at the same step).
  bool AnyWorker(bool flag) { return group_->AnyWorker(flag); }
  // After the last step: waits until every worker got here, so that no
  // worker's exit cuts off another's last step.
  void Finish() { group_->Finish(); }

  // The group the graph's ops name; it must outlive every run of them.
  const std::shared_ptr<DataParallelGroup>& group() const { return group_; }

 private:
  autodiff::Optimizer& optimizer_;
  std::shared_ptr<DataParallelGroup> group_;
};

// This process's place in the launcher's job (the variables of
// dist/cluster_environment.h): worker 0 of 1 when none is set.
struct WorkerPlace {
  int worker = 0, num_workers = 1;
};
WorkerPlace WorkerPlaceFromEnvironment();

// A strategy for a job of one worker: the mean of one gradient is itself.
std::unique_ptr<DataParallelStrategy> MakeSingleWorkerStrategy();

}  // namespace dflow::dist
