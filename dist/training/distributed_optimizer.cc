#include "dist/training/distributed_optimizer.h"

#include "dist/cluster.h"
#include "dist/training/ps_training_graph.h"
#include "ops/ops.h"

namespace dflow::dist {
namespace {

class SingleWorkerStrategy final : public DataParallelStrategy {
 public:
  int worker() const override { return 0; }
  int num_workers() const override { return 1; }
  void BroadcastFromChief(const std::string&, Tensor&) override {}
  std::vector<Tensor> AverageGradients(const std::vector<Tensor>& gradients) override { return gradients; }
  bool AnyWorker(bool flag) override { return flag; }
  void Finish() override {}
};

// The launcher's cluster, when it started this process as a ring worker.
std::optional<ClusterSpec> RingCluster() {
  std::optional<ClusterSpec> cluster = ClusterSpec::FromEnvironment();
  if (!cluster) return std::nullopt;
  RequireStrategy(StrategyFromEnvironment());
  const std::optional<TaskId>& self = cluster->self();
  DFLOW_REQUIRE(self && self->job == "worker", "DistributedOptimizer: the launcher's cluster does not name ",
                "this process as a worker (its task is ", self ? ClusterSpec::TaskPrefix(*self) : "not set", ")");
  return cluster;
}

// This process's task when the launcher started a parameter-server job.
std::optional<PsTask> PsJobTask() {
  if (!ClusterSpec::FromEnvironment() || StrategyFromEnvironment() != "ps") return std::nullopt;
  return PsTaskFromEnvironment();
}

PsTask PsWorkerTask(PsTask task) {
  DFLOW_REQUIRE(!task.is_ps(), "DistributedOptimizer: this process is ", ClusterSpec::TaskPrefix(task.task),
                ", a parameter server, which serves rather than trains: start the program with ",
                "`if (auto ps = dist::ParameterServerTask()) return dist::ServeParameterServer(*ps);` ",
                "(Python: dflow.distribute.serve_if_parameter_server())");
  return task;
}

std::shared_ptr<DataParallelGroup> GroupFromEnvironment(const StrategyOptions& options) {
  std::optional<ClusterSpec> cluster = RingCluster();
  if (!cluster)
    return DataParallelGroup::Create(0, 1, [](std::vector<GradientSpec>) { return MakeSingleWorkerStrategy(); },
                                     options.collective_timeout);
  return DataParallelGroup::Create(
      cluster->self()->index, cluster->num_tasks("worker"),
      [cluster = *cluster, options](std::vector<GradientSpec> specs) {
        return MakeDataParallelStrategy("ring", cluster, std::move(specs), options);
      },
      options.collective_timeout);
}

}  // namespace

std::unique_ptr<DataParallelStrategy> MakeSingleWorkerStrategy() { return std::make_unique<SingleWorkerStrategy>(); }

WorkerPlace WorkerPlaceFromEnvironment() {
  if (std::optional<PsTask> task = PsJobTask()) return {PsWorkerTask(*task).task.index, task->num_workers()};
  std::optional<ClusterSpec> cluster = RingCluster();
  if (!cluster) return {};
  return {cluster->self()->index, cluster->num_tasks("worker")};
}

std::optional<PsTask> ParameterServerTask() {
  std::optional<PsTask> task = PsJobTask();
  if (task && task->is_ps()) return task;
  return std::nullopt;
}

DistributedOptimizer::DistributedOptimizer(autodiff::Optimizer& optimizer, const StrategyOptions& ring,
                                           const PsTrainingOptions& ps)
    : optimizer_(optimizer), ps_options_(ps) {
  if (std::optional<PsTask> task = PsJobTask()) ps_task_ = PsWorkerTask(*task);
  else group_ = GroupFromEnvironment(ring);
}

DistributedOptimizer::DistributedOptimizer(autodiff::Optimizer& optimizer, int worker, int num_workers,
                                           DataParallelGroup::StrategyFactory factory,
                                           std::chrono::milliseconds step_timeout)
    : optimizer_(optimizer), group_(DataParallelGroup::Create(worker, num_workers, std::move(factory), step_timeout)) {}

DistributedOptimizer::DistributedOptimizer(autodiff::Optimizer& optimizer, PsTask task, const PsTrainingOptions& ps)
    : optimizer_(optimizer), ps_task_(PsWorkerTask(std::move(task))), ps_options_(ps) {}

DistributedOptimizer::~DistributedOptimizer() = default;

int DistributedOptimizer::worker() const { return ps_task_ ? ps_task_->task.index : group_->worker(); }

int DistributedOptimizer::num_workers() const { return ps_task_ ? ps_task_->num_workers() : group_->num_workers(); }

bool DistributedOptimizer::AnyWorker(bool flag) {
  if (ps_task_)
    Fail(Code::kUnimplemented, "DistributedOptimizer::AnyWorker needs the ring's collectives; under parameter ",
         "servers every worker stops at the TrainingSession's num_steps");
  return group_->AnyWorker(flag);
}

void DistributedOptimizer::Finish() {
  if (group_) group_->Finish();
}

std::vector<autodiff::GradAndVar> DistributedOptimizer::ComputeGradients(const Scope& scope, const Output& loss,
                                                                         std::vector<Output> var_list) {
  std::vector<autodiff::GradAndVar> grads = optimizer_.ComputeGradients(scope, loss, std::move(var_list));
  if (ps_task_) return grads;
  Scope s = scope.NewSubScope("distributed");
  // Backprop computes the last layers' gradients first: handing them over in
  // that order fills the first bucket first.
  for (auto it = grads.rbegin(); it != grads.rend(); ++it) {
    if (!it->grad.valid()) continue;
    const std::string& var = it->var.node()->name();
    int index = group_->AddGradient({var, it->grad.dtype(), it->var.shape()});
    it->grad = Output(s.WithOpName(var + "/mean_gradient")
                          .AddOp("DataParallelAllReduce", {it->grad},
                                 {{"group", group_->name()}, {"index", int64_t{index}}, {"T", it->grad.dtype()}}));
  }
  return grads;
}

void DistributedOptimizer::RequireNotApplied() const {
  DFLOW_REQUIRE(train_op_ == nullptr, "DistributedOptimizer: ApplyGradients (or Minimize) was already called; ",
                "the workers agree on one set of gradients, so an optimizer applies them once");
}

Node* DistributedOptimizer::ApplyGradients(const Scope& scope, const std::vector<autodiff::GradAndVar>& grads_and_vars) {
  RequireNotApplied();
  if (!ps_task_) return train_op_ = optimizer_.ApplyGradients(scope, grads_and_vars);
  ps_ops_ = BuildPsTrainingOps(scope, grads_and_vars, optimizer_, *ps_task_, ps_options_);
  return train_op_ = ps_ops_->next_step.node();
}

Node* DistributedOptimizer::Minimize(const Scope& scope, const Output& loss, std::vector<Output> var_list) {
  RequireNotApplied();  // before the gradients join the group
  return ApplyGradients(scope, ComputeGradients(scope, loss, std::move(var_list)));
}

Node* DistributedOptimizer::BroadcastVariables(const Scope& scope) {
  Scope s = scope.NewSubScope("broadcast_variables");
  if (ps_task_) return ops::NoOp(s.WithOpName("all"));
  std::vector<Output> assigned;
  for (Node* node : scope.graph().nodes()) {
    if (node->op() != "VariableV2") continue;
    Output var(node);
    Scope after = assigned.empty() ? s : s.WithControlDependencies({assigned.back()});
    Output chief = Output(after.WithOpName(node->name()).AddOp(
        "DataParallelBroadcast", {var}, {{"group", group_->name()}, {"tensor_name", node->name()}, {"T", var.dtype()}}));
    assigned.push_back(ops::Assign(s.WithOpName(node->name() + "/assign"), var, chief));
  }
  DFLOW_REQUIRE(!assigned.empty(), "BroadcastVariables: the graph has no variables yet (build the model and ",
                "Minimize first)");
  return ops::NoOp(s.WithControlDependencies(assigned).WithOpName("all"));
}

}  // namespace dflow::dist
