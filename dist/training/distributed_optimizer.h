// Horovod's DistributedOptimizer for dflow graphs: wraps any optimizer so
// that its gradients are averaged over the workers of a data-parallel job
// before they are applied, with the strategy the launcher chose:
// - ring (`dflow launch -n N`): the averaging is in the graph
//   (`DataParallelAllReduce` ops: ring all-reduce of gradient buckets, each
//   started as soon as backprop filled it), so a training step is one
//   Session::Run of the train op; `BroadcastVariables` makes every worker
//   start from the chief's values (Horovod's broadcast_global_variables(0)).
// - parameter servers (`dflow launch -n N --ps P`): the variables and their
//   updates go to the ps tasks (TensorFlow 1's replica_device_setter and
//   SyncReplicasOptimizer, dist/training/ps_training.h), and the steps must
//   run through a TrainingSession, which knows the protocol (the chief
//   initialises, the others wait, every step names its global step).
//
// A TrainingSession (training_session.h) runs either; with the ring a plain
// Session does too:
//
//   if (auto ps = dist::ParameterServerTask()) return dist::ServeParameterServer(*ps);
//   autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(scope, 0.01));
//   dist::DistributedOptimizer optimizer(adam);  // the job `dflow launch` started this process in
//   optimizer.Minimize(scope, loss);
//   dist::TrainingSession session(scope, optimizer, {.num_steps = 600});
//   while (!session.ShouldStop()) session.Run(this_workers_batch(session.next_step()), {loss});
//   session.Close();
//
// The workers build the same graph and run the same steps; each feeds its
// own shard.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "autodiff/optimizers.h"
#include "dist/training/data_parallel_group.h"
#include "dist/training/ps_training.h"

namespace dflow::dist {

class DistributedOptimizer {
 public:
  // Joins the job that the launcher's variables describe (DFLOW_CLUSTER and
  // the others of dist/cluster_environment.h; DFLOW_STRATEGY "ring", "ps"
  // or unset); a process started without a cluster is a job of one worker.
  // `ring` configures the ring, `ps` parameter-server training (its
  // num_steps is the TrainingSession's). The workers connect at the first
  // step or broadcast, not here. A ps task is refused: it serves
  // (ParameterServerTask, ServeParameterServer).
  explicit DistributedOptimizer(autodiff::Optimizer& optimizer, const StrategyOptions& ring = {},
                                const PsTrainingOptions& ps = {});
  // Worker `worker` of `num_workers`, joined by the strategy `factory` makes
  // (threads of one process over an InProcessNetwork, say). A step fails
  // when its gradients do not all reach the all-reduce within `step_timeout`.
  DistributedOptimizer(autodiff::Optimizer& optimizer, int worker, int num_workers,
                       DataParallelGroup::StrategyFactory factory,
                       std::chrono::milliseconds step_timeout = std::chrono::seconds(60));
  // Worker `task` of a parameter-server cluster.
  DistributedOptimizer(autodiff::Optimizer& optimizer, PsTask task, const PsTrainingOptions& ps = {});
  ~DistributedOptimizer();

  // The optimizer's gradients. Ring: each replaced by its mean over the
  // workers (handed to the all-reduce in backprop order: last variable
  // first). Parameter servers: as they are (the ps tasks average them).
  std::vector<autodiff::GradAndVar> ComputeGradients(const Scope& scope, const Output& loss,
                                                     std::vector<Output> var_list = {});
  // The train op. Parameter servers: also places every node of the graph
  // (variables and updates on the ps tasks), so build the model first; one
  // call per optimizer.
  Node* ApplyGradients(const Scope& scope, const std::vector<autodiff::GradAndVar>& grads_and_vars);
  Node* Minimize(const Scope& scope, const Output& loss, std::vector<Output> var_list = {});

  // A NoOp that assigns every variable of the graph as built so far (the
  // model's, optimizer slots, global step, batch-norm statistics) the
  // chief's value, one variable after the other in creation order. Run it
  // after initialising (and the chief's restore), before the first step.
  // (A TrainingSession does both.) Parameter servers hold one copy of each
  // variable, so there it does nothing.
  Node* BroadcastVariables(const Scope& scope);

  bool uses_parameter_servers() const { return ps_task_.has_value(); }
  int worker() const;
  int num_workers() const;
  bool is_chief() const { return worker() == 0; }
  // Between steps: true on every worker when `flag` is true on any (a stop
  // request that reached one worker stops all at the same step). Ring only.
  bool AnyWorker(bool flag);
  // After the last step: waits until every worker got here, so that no
  // worker's exit cuts off another's last step. (Parameter servers: a
  // TrainingSession's Close does this.)
  void Finish();

  // The group the graph's ops name (ring; null under parameter servers); it
  // must outlive every run of them.
  const std::shared_ptr<DataParallelGroup>& group() const { return group_; }
  // What Minimize/ApplyGradients returned; null before.
  Node* train_op() const { return train_op_; }

 private:
  friend class TrainingSession;
  void RequireNotApplied() const;

  autodiff::Optimizer& optimizer_;
  std::shared_ptr<DataParallelGroup> group_;
  std::optional<PsTask> ps_task_;
  PsTrainingOptions ps_options_;
  std::unique_ptr<PsWorker::Ops> ps_ops_;  // until a TrainingSession takes them
  Node* train_op_ = nullptr;
};

// This process's ps task, when the launcher started it as one (a cluster
// with a ps job, this process's task in it); nullopt for a worker or a
// process started without a cluster. A program that trains with a
// DistributedOptimizer starts with
//   if (auto ps = dist::ParameterServerTask()) return dist::ServeParameterServer(*ps);
std::optional<PsTask> ParameterServerTask();

// This process's place in the launcher's job (the variables of
// dist/cluster_environment.h): worker 0 of 1 when none is set.
struct WorkerPlace {
  int worker = 0, num_workers = 1;
};
WorkerPlace WorkerPlaceFromEnvironment();

// A strategy for a job of one worker: the mean of one gradient is itself.
std::unique_ptr<DataParallelStrategy> MakeSingleWorkerStrategy();

}  // namespace dflow::dist
