// Aggregating workers' gradients on a parameter server, in process (the
// worker server hosts these for remote workers). Synchronous mode is
// TensorFlow's SyncReplicasOptimizer with its ConditionalAccumulators: each
// worker pushes the gradients it computed from the parameters of global step
// s; gradients computed at an older step are stale and dropped; once N have
// arrived the chief takes their mean, applies it, and finishes the step: the
// global step advances by one, which releases the workers. Asynchronous mode applies
// every gradient as it arrives and records how stale it was.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

#include "dist/collectives/gradient_buckets.h"
#include "dist/collectives/point_to_point.h"

namespace dflow::dist {

struct AccumulatorStats {
  int64_t accepted = 0;       // gradient sets taken into a mean
  int64_t dropped_stale = 0;  // computed at an older global step
};

class SyncGradientAccumulator {
 public:
  // `variables` lists the gradients of one push (name, float dtype, shape).
  SyncGradientAccumulator(std::vector<GradientSpec> variables, int replicas_to_aggregate);

  // Worker `worker`'s gradients (one per variable), computed from the
  // parameters of global step `local_step`. Returns false and drops them when
  // they are stale (local_step < global_step, or the chief already took this
  // step's mean). A second push by one worker for one step replaces its
  // first: a worker restarted in the middle of a step computes that step
  // again, from the same parameters. Throws on a step from the future, or
  // gradients whose count, dtype or shape differ from `variables` (naming
  // the variable).
  bool Push(int worker, int64_t local_step, std::vector<Tensor> gradients);

  // Waits until at least replicas_to_aggregate pushes for the current step
  // are in and returns their mean per variable (summed in worker order, so
  // the result does not depend on arrival order). Later pushes for this step
  // are stale. Throws kUnavailable at `deadline`, naming the workers heard
  // from, and kFailedPrecondition when the last step was not finished.
  std::vector<Tensor> TakeMean(Deadline deadline);
  // After the chief applied the mean: the global step advances by one and
  // the workers waiting in WaitForStepAfter are released.
  void FinishStep();

  // Blocks until the global step exceeds `step` and returns it (a worker
  // waits here after pushing, TF's sync token). kUnavailable at `deadline`.
  int64_t WaitForStepAfter(int64_t step, Deadline deadline) const;

  int64_t global_step() const;
  AccumulatorStats stats() const;

  // A run restored from a checkpoint continues at `step` (>= 0); only
  // between steps (no push pending, no mean taken), else kFailedPrecondition.
  void SetGlobalStep(int64_t step);

  // Training stopped: every waiter and every later call fails with
  // kCancelled and `reason` (the chief after an error, so that the workers
  // waiting for the next step hear why at once).
  void Abort(std::string reason);

 private:
  void CheckGradients(int worker, const std::vector<Tensor>& gradients) const;
  void ThrowIfAborted() const;  // under mu_

  std::vector<GradientSpec> variables_;
  int replicas_to_aggregate_;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  int64_t global_step_ = 0;
  bool taken_ = false;  // this step's mean was taken; FinishStep comes next
  std::map<int, std::vector<Tensor>> pending_;  // this step's pushes by worker
  AccumulatorStats stats_;
  std::string aborted_;  // why, once aborted
};

// Asynchronous mode's book-keeping: every gradient is applied on arrival and
// the global step advances by one per update; staleness is how many updates
// happened between the worker reading the parameters and its update.
struct StalenessStats {
  int64_t updates = 0;
  int64_t max_staleness = 0;
  double mean_staleness = 0;
  std::map<int64_t, int64_t> histogram;  // staleness -> updates
};

class StalenessLog {
 public:
  // Records an update computed at `local_step`; returns its staleness
  // (global step - local_step) and advances the global step. Throws on a
  // step from the future.
  int64_t RecordUpdate(int worker, int64_t local_step);
  int64_t global_step() const;
  StalenessStats stats() const;
  // The same, for one worker.
  StalenessStats stats(int worker) const;

 private:
  static void Add(StalenessStats& stats, int64_t staleness);

  mutable std::mutex mu_;
  int64_t global_step_ = 0;
  StalenessStats all_;
  std::map<int, StalenessStats> by_worker_;
};

}  // namespace dflow::dist
