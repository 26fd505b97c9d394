// Between-graph data-parallel training with parameter servers across
// processes (TensorFlow 1's replica_device_setter + SyncReplicasOptimizer).
// Every worker process builds the same graph and hands it, with its
// gradients and optimizer, to a PsWorker; variables, optimizer slots and
// updates go to the ps tasks, which run `ServeParameterServer` until the
// chief (worker 0) tells them to stop. See docs/data_parallel.md.
//
//   PsTask task = PsTaskFromEnvironment();            // DFLOW_CLUSTER, DFLOW_STRATEGY=ps
//   if (task.is_ps()) return ServeParameterServer(task);
//   ...build the model, grads_and_vars = optimizer.ComputeGradients(scope, loss)...
//   PsWorker worker(scope, grads_and_vars, optimizer, task, {.mode = PsMode::kSync, .num_steps = 100});
//   worker.Train([&](int64_t step) { return FeedList{...this worker's batch...}; });
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autodiff/optimizers.h"
#include "dist/cluster.h"
#include "dist/training/replica_device_setter.h"
#include "graph/session.h"

namespace dflow::dist {

class MessageServer;
class WorkerService;

// This process's place in a parameter-server cluster.
struct PsTask {
  ClusterSpec cluster;
  TaskId task;
  bool is_ps() const { return task.job == "ps"; }
  bool is_chief() const { return task.job == "worker" && task.index == 0; }
  int num_workers() const { return cluster.num_tasks("worker"); }
  int num_ps() const { return cluster.num_tasks("ps"); }
};

// From DFLOW_CLUSTER (its "task" names this process) and DFLOW_STRATEGY,
// which must be "ps" or unset; throws kInvalidArgument naming what is wrong
// (no cluster, no task, no worker or ps job, another strategy).
PsTask PsTaskFromEnvironment();

// Serves a ps task (variables, accumulators, updates for every worker's
// graphs) until the chief says stop, or SIGINT/SIGTERM (how `dflow launch`
// ends the ps tasks once the workers are done). Returns the exit code: 1
// when the chief stopped it after an error, else 0. `num_threads` 0: one
// per hardware thread.
int ServeParameterServer(const PsTask& task, int num_threads = 0);

// A trainer program's whole distributed part under DFLOW_STRATEGY=ps
// (`dflow launch -n N --ps P --strategy ps -- PROGRAM ARGS`, or any process
// manager that sets DFLOW_CLUSTER): a ps task serves until the chief stops
// it; a worker runs train_worker(task), which builds the model and trains
// with a PsWorker. Returns the process's exit code; an error is printed to
// stderr with the task's name.
int RunPsTask(const std::function<void(const PsTask& task)>& train_worker, int ps_threads = 0);

enum class PsMode {
  kSync,   // the mean of every worker's gradients per step, one global step
  kAsync,  // every worker's gradients applied as they arrive, staleness recorded
};

struct PsTrainingOptions {
  PsMode mode = PsMode::kSync;
  // Sync: global steps (one per mean applied). Async: updates by all workers
  // together; each worker stops once the count reaches it.
  int64_t num_steps = 100;
  PsStrategy placement = PsStrategy::kRoundRobin;
  // Sync: the chief reports a worker missing once a step waited this long.
  std::chrono::milliseconds step_timeout{10000};
  // For the ps to answer, the chief to initialise, and the first step.
  std::chrono::milliseconds startup_timeout{30000};
  // How long the chief waits for the other workers to finish before it
  // stops the ps tasks anyway (a dead worker in async mode never does).
  std::chrono::milliseconds finish_timeout{30000};
  int num_threads = 1;  // this task's threads; 1 keeps every sum in one order
  std::string bind{};   // this worker's server address; default 127.0.0.1:<task's port>
};

// One step as the worker saw it.
struct PsStepResult {
  int64_t local_step = 0;   // global step the gradients were computed at
  int64_t global_step = 0;  // after the step
  int64_t staleness = 0;    // async: updates applied between read and update
  std::vector<Tensor> fetched;  // the Train call's fetches
};

class PsWorker {
 public:
  // Sync: the feeds of this worker's batch at global step `step`. Async:
  // `step` counts this worker's own steps.
  using BatchFn = std::function<FeedList(int64_t step)>;
  using StepFn = std::function<void(const PsStepResult& step)>;

  // Adds the training ops of `options.mode` to the scope's graph, gives
  // every node its device (AssignReplicaDevices: variables and their
  // updates on the ps tasks, the rest on this worker), starts this worker
  // task's server and opens a session over the ps tasks and this task.
  PsWorker(const Scope& scope, const std::vector<autodiff::GradAndVar>& grads_and_vars,
           autodiff::Optimizer& optimizer, PsTask task, PsTrainingOptions options);
  // The training ops, built beforehand (BuildPsTrainingOps, which is what
  // DistributedOptimizer does under the ps strategy).
  struct Ops;
  PsWorker(const Scope& scope, std::unique_ptr<Ops> ops, PsTask task, PsTrainingOptions options);
  ~PsWorker();
  PsWorker(const PsWorker&) = delete;
  PsWorker& operator=(const PsWorker&) = delete;

  // The chief initialises the variables; the other workers wait until the
  // ps reports them initialised (startup_timeout). Then every worker trains
  // until the global step reaches num_steps, calling on_step after each
  // step with `fetches` (a loss, say). At the end the chief waits for the
  // others (finish_timeout), calls on_finished (read or checkpoint the
  // final variables there: the ps tasks still serve) and stops the ps
  // tasks; if it fails, it stops them with an error and rethrows. The other
  // workers call on_finished as they leave.
  void Train(const BatchFn& batches, const std::vector<TensorName>& fetches = {},
             const StepFn& on_step = {}, const std::function<void()>& on_finished = {});

  // Train's parts, for a caller that runs the steps itself (TrainingSession):
  // Start, then Step while !Done(), then FinishSteps; the chief stops the ps
  // tasks with StopParameterServers. An error in any of them goes through
  // Failed, which says where it happened and lets the ps tasks go.
  void Start();
  // One step on `feeds` (this worker's batch for next_step()).
  PsStepResult Step(FeedList feeds, const std::vector<TensorName>& fetches);
  bool Done() const { return global_step_ >= options_.num_steps; }
  // Sync: the global step the next gradients are computed at. Async: this
  // worker's own steps so far.
  int64_t next_step() const { return options_.mode == PsMode::kSync ? global_step_ : own_steps_; }
  int64_t global_step() const { return global_step_; }
  // Tells the chief this worker is done; the chief waits (finish_timeout)
  // for every worker to say so.
  void FinishSteps();
  // 1: stop cleanly. 2: after an error, also failing the waiting workers.
  void StopParameterServers(int64_t code);
  // Rethrows `error` naming this task (and, for another worker, that the
  // chief finishes each step); the chief first stops the ps tasks (code 2).
  [[noreturn]] void Failed(const Error& error);

  // The chief restores a checkpoint at start, after the initialiser:
  // `restore` assigns the variables through session() (a Saver's Restore
  // over variables()); sync mode's accumulators then continue at the
  // restored global step, so a resumed run takes the same steps, bit for bit.
  // (Async mode's staleness log counts from 0 again.)
  void RestoreWith(std::function<void(Session& session)> restore) { restore_ = std::move(restore); }

  // The session over the ps tasks and this worker (to read variables).
  Session& session() { return *session_; }
  // The variables the chief initialises, what a checkpoint holds: the
  // model's, the optimizer's slots and global step.
  const std::vector<Output>& variables() const;
  // Sync: stale gradient pushes the accumulators dropped, over all variables.
  int64_t DroppedStale();

  // Ops: the training ops it added (defined in dist/training/ps_training_graph.h).

 private:
  void StartServer();
  void Initialise();
  void WaitUntilInitialised();
  // The names of the variables the ps tasks do not hold yet ("" when all).
  std::string UninitialisedVariables();
  PsStepResult StepSync(FeedList feeds, const std::vector<TensorName>& fetches);
  PsStepResult StepAsync(const FeedList& feeds, const std::vector<TensorName>& fetches);
  void WaitForOtherWorkers();

  PsTask task_;
  PsTrainingOptions options_;
  std::unique_ptr<Ops> ops_;
  std::unique_ptr<WorkerService> service_;
  std::unique_ptr<MessageServer> server_;
  std::unique_ptr<Session> session_;
  std::function<void(Session&)> restore_;
  int64_t global_step_ = 0, own_steps_ = 0;
  bool first_step_ = true;
};

}  // namespace dflow::dist
