#include "dist/training/distributed_optimizer.h"

#include "dist/cluster.h"
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
  std::string strategy = StrategyFromEnvironment();
  if (strategy == "ps")
    Fail(Code::kUnimplemented, "DistributedOptimizer averages gradients with the ring all-reduce, but this ",
         "process was started for parameter servers (DFLOW_STRATEGY=ps, or ps tasks in the cluster): ",
         "train through dist::PsWorker (dist/training/ps_training.h), or launch without --ps");
  RequireStrategy(strategy);
  const std::optional<TaskId>& self = cluster->self();
  DFLOW_REQUIRE(self && self->job == "worker", "DistributedOptimizer: the launcher's cluster does not name ",
                "this process as a worker (its task is ", self ? ClusterSpec::TaskPrefix(*self) : "not set", ")");
  return cluster;
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
  std::optional<ClusterSpec> cluster = RingCluster();
  if (!cluster) return {};
  return {cluster->self()->index, cluster->num_tasks("worker")};
}

DistributedOptimizer::DistributedOptimizer(autodiff::Optimizer& optimizer, const StrategyOptions& options)
    : optimizer_(optimizer), group_(GroupFromEnvironment(options)) {}

DistributedOptimizer::DistributedOptimizer(autodiff::Optimizer& optimizer, int worker, int num_workers,
                                           DataParallelGroup::StrategyFactory factory,
                                           std::chrono::milliseconds step_timeout)
    : optimizer_(optimizer), group_(DataParallelGroup::Create(worker, num_workers, std::move(factory), step_timeout)) {}

std::vector<autodiff::GradAndVar> DistributedOptimizer::ComputeGradients(const Scope& scope, const Output& loss,
                                                                         std::vector<Output> var_list) {
  std::vector<autodiff::GradAndVar> grads = optimizer_.ComputeGradients(scope, loss, std::move(var_list));
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

Node* DistributedOptimizer::Minimize(const Scope& scope, const Output& loss, std::vector<Output> var_list) {
  return ApplyGradients(scope, ComputeGradients(scope, loss, std::move(var_list)));
}

Node* DistributedOptimizer::BroadcastVariables(const Scope& scope) {
  Scope s = scope.NewSubScope("broadcast_variables");
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
