// The graph side of parameter-server training. Every worker builds the same
// graph (so AssignReplicaDevices puts each variable on the same ps task in
// every process); only what each worker runs differs: the chief's step
// pushes, takes the means, applies them and finishes the step, the others'
// push and wait.
#include "dist/training/ps_training_graph.h"

#include "autodiff/learning_rate.h"
#include "graph/device.h"
#include "ops/ops.h"

namespace dflow::dist {
namespace {

constexpr char kScope[] = "ps_training";
constexpr char kChiefFailed[] = "the chief (worker 0) stopped training after an error (its log says which)";

std::string PsDevice(int ps_task) { return ClusterSpec::TaskPrefix({"ps", ps_task}) + "/device:CPU:0"; }

// The attrs every op of one variable's accumulator carries.
AttrMap AccumulatorAttrs(const Output& var, int num_workers) {
  return {{"shared_name", var.node()->name() + "/grad_accumulator"},
          {"num_required", static_cast<int64_t>(num_workers)},
          {"shape", var.shape()},
          {"T", var.dtype()}};
}

AttrMap With(AttrMap attrs, const std::string& name, AttrValue value) {
  attrs[name] = std::move(value);
  return attrs;
}

// Nodes that must run on a given device whatever the replica setter says.
using Pinned = std::vector<std::pair<Node*, std::string>>;

struct ModeOps {
  Pinned to_variable_ps;  // (node, variable name): on that variable's ps task
  Pinned to_device;       // (node, device)
};

// What BuildSync joins up: per accumulator, its mean, push and attrs.
struct Accumulators {
  std::vector<autodiff::GradAndVar> means;  // (TakeMean, variable)
  std::vector<Output> pushes;
  std::vector<AttrMap> attrs;
};

// One variable's accumulator ops (every worker's graph holds them all), on
// that variable's ps task.
void AddAccumulator(const Scope& s, const autodiff::GradAndVar& gv, const PsTask& task,
                    PsWorker::Ops& ops, ModeOps& pinned, Accumulators& accumulators) {
  AttrMap a = AccumulatorAttrs(gv.var, task.num_workers());
  Node* push = s.AddOp("GradientAccumulatorPush", {ops.local_step, gv.grad},
                       With(a, "worker", static_cast<int64_t>(task.task.index)));
  Node* mean = s.AddOp("GradientAccumulatorTakeMean", {ops.timeout_ms}, a);
  Node* state = s.AddOp("GradientAccumulatorState", {}, a);
  Node* abort = s.AddOp("GradientAccumulatorAbort", {}, With(a, "reason", std::string(kChiefFailed)));
  Node* set_step = s.AddOp("GradientAccumulatorSetGlobalStep", {ops.restored_step}, a);
  for (Node* node : {push, mean, state, abort, set_step})
    pinned.to_variable_ps.push_back({node, gv.var.node()->name()});
  ops.aborts.push_back(abort);
  ops.set_steps.push_back(set_step);
  ops.dropped_stale.push_back(Output(state, 1));
  accumulators.pushes.emplace_back(push);
  accumulators.means.push_back({Output(mean), gv.var});
  accumulators.attrs.push_back(std::move(a));
}

// Sync: per variable, Push(local_step, grad); the chief's TakeMean feeds the
// optimizer; FinishStep of every accumulator after the update (the first
// one's last, so that once its step advanced every variable is updated);
// the others wait on the first accumulator's step.
ModeOps BuildSync(const Scope& s, const std::vector<autodiff::GradAndVar>& grads_and_vars,
                  autodiff::Optimizer& optimizer, const PsTask& task, const Scope& root,
                  PsWorker::Ops& ops) {
  ModeOps pinned;
  ops.timeout_ms = ops::Placeholder(s.WithOpName("timeout_ms"), DType::kInt64, Shape());
  ops.restored_step = ops::Placeholder(s.WithOpName("restored_step"), DType::kInt64, Shape());
  Accumulators acc;
  for (const autodiff::GradAndVar& gv : grads_and_vars)
    if (gv.grad.valid()) AddAccumulator(s, gv, task, ops, pinned, acc);
  DFLOW_REQUIRE(!acc.means.empty(), "PsWorker: no variable has a gradient");
  Node* apply = optimizer.ApplyGradients(root, acc.means);
  std::vector<Output> finished = acc.pushes;
  finished.emplace_back(apply);
  for (size_t i = 1; i < acc.means.size(); ++i) {
    Node* finish = s.WithControlDependencies({Output(apply)}).AddOp("GradientAccumulatorFinishStep", {}, acc.attrs[i]);
    pinned.to_variable_ps.push_back({finish, acc.means[i].var.node()->name()});
    finished.emplace_back(finish);
  }
  Node* finish0 = s.WithControlDependencies(finished).AddOp("GradientAccumulatorFinishStep", {}, acc.attrs[0]);
  Node* wait = s.WithControlDependencies(acc.pushes).AddOp("GradientAccumulatorWaitForStep",
                                                           {ops.local_step, ops.timeout_ms}, acc.attrs[0]);
  for (Node* node : {finish0, wait}) pinned.to_variable_ps.push_back({node, acc.means[0].var.node()->name()});
  ops.initial_step = Output(ops.dropped_stale[0].node(), 0);
  ops.next_step = Output(task.is_chief() ? finish0 : wait);
  return pinned;
}

// Async: the optimizer's update straight from this worker's gradients, then
// the staleness log on ps 0 records it.
ModeOps BuildAsync(const Scope& s, const std::vector<autodiff::GradAndVar>& grads_and_vars,
                   autodiff::Optimizer& optimizer, const PsTask& task, const Scope& root,
                   PsWorker::Ops& ops) {
  ModeOps pinned;
  const std::string log = StrCat(kScope, "/staleness");
  Node* read = s.AddOp("StalenessLogGlobalStep", {}, {{"shared_name", log}});
  Node* apply = optimizer.ApplyGradients(root, grads_and_vars);
  Node* record = s.WithControlDependencies({Output(apply)})
                     .AddOp("StalenessLogRecord", {Output(read)},
                            {{"shared_name", log}, {"worker", static_cast<int64_t>(task.task.index)}});
  for (Node* node : {read, record}) pinned.to_device.push_back({node, PsDevice(0)});
  ops.initial_step = Output(read);
  ops.staleness = Output(record, 0);
  ops.next_step = Output(record, 1);
  return pinned;
}

// workers_done on ps 0, set by the chief's last start-up step (after a
// restore), so the other workers also wait for it; one stop variable per
// ps task.
void BuildControl(const Scope& s, const PsTask& task, PsWorker::Ops& ops, ModeOps& pinned) {
  ops.workers_done = ops::Variable(s.WithOpName("workers_done"), Shape(), DType::kInt64);
  ops.ready = ops::Assign(s.WithOpName("ready"), ops.workers_done, Tensor::Scalar<int64_t>(0)).node();
  ops.finish = ops::AssignAdd(s.WithOpName("worker_finished"), ops.workers_done,
                              Tensor::Scalar<int64_t>(1)).node();
  ops.initialized.push_back(ops::IsVariableInitialized(s, ops.workers_done));
  ops.variable_names.push_back(ops.workers_done.node()->name() + " (the chief's start-up)");
  for (Node* node : {ops.workers_done.node(), ops.ready, ops.finish, ops.initialized.back().node()})
    pinned.to_device.push_back({node, PsDevice(0)});
  ops.stop_code = ops::Placeholder(s.WithOpName("stop_code"), DType::kInt64, Shape());
  for (int k = 0; k < task.num_ps(); ++k) {
    Output stop = ops::Variable(Scope::ForGraph(s.graph_ptr()).WithOpName(PsStopVariableName(k)),
                                Shape(), DType::kInt64);
    Node* assign = ops::Assign(s.WithOpName(StrCat("stop_ps_", k)), stop, ops.stop_code).node();
    ops.stops.push_back(assign);
    for (Node* node : {stop.node(), assign}) pinned.to_device.push_back({node, PsDevice(k)});
  }
}

}  // namespace

std::string PsStopVariableName(int ps_task) { return StrCat(kScope, "/stop_ps_", ps_task, "_variable"); }

std::unique_ptr<PsWorker::Ops> BuildPsTrainingOps(const Scope& scope,
                                                  const std::vector<autodiff::GradAndVar>& grads_and_vars,
                                                  autodiff::Optimizer& optimizer, const PsTask& task,
                                                  const PsTrainingOptions& options) {
  DFLOW_REQUIRE(task.task.job == "worker", "PsWorker: task ", ClusterSpec::TaskPrefix(task.task),
                " is not a worker (a ps task runs ServeParameterServer)");
  DFLOW_REQUIRE(task.num_ps() >= 1 && task.num_workers() >= 1,
                "PsWorker: the cluster needs a 'ps' and a 'worker' job, it has ", task.num_ps(),
                " ps and ", task.num_workers(), " worker task(s)");
  auto ops = std::make_unique<PsWorker::Ops>();
  Scope s = scope.NewSubScope(kScope);
  ops->local_step = ops::Placeholder(s.WithOpName("local_step"), DType::kInt64, Shape());
  ModeOps pinned = options.mode == PsMode::kSync
                       ? BuildSync(s, grads_and_vars, optimizer, task, scope, *ops)
                       : BuildAsync(s, grads_and_vars, optimizer, task, scope, *ops);
  // Every variable so far (model, slots, global step) must be initialised
  // before a worker starts.
  ops->global_step = autodiff::GetOrCreateGlobalStep(scope);  // the optimizer's
  for (Node* node : scope.graph().nodes())
    if (node->op() == "VariableV2") ops->variables.emplace_back(node);
  for (const Output& var : ops->variables) {
    ops->initialized.push_back(ops::IsVariableInitialized(s, var));
    ops->variable_names.push_back(var.node()->name());
  }
  BuildControl(s, task, *ops, pinned);
  ops->init = ops::GlobalVariablesInitializer(s.WithOpName("init"));
  std::map<std::string, std::string> placed = AssignReplicaDevices(
      scope.graph(), {.num_ps_tasks = task.num_ps(),
                      .worker_device = ClusterSpec::TaskPrefix(task.task),
                      .strategy = options.placement});
  for (auto& [node, variable] : pinned.to_variable_ps) node->set_requested_device(placed.at(variable));
  for (auto& [node, device] : pinned.to_device) node->set_requested_device(device);
  return ops;
}

}  // namespace dflow::dist
