// The in-graph side of data-parallel training (Horovod's model): the
// `DataParallelAllReduce` and `DataParallelBroadcast` ops
// (ops/collective.cc) reach this process's DataParallelGroup by the name
// in their `group` attr. A DistributedOptimizer (distributed_optimizer.h)
// creates one, adds its gradients and keeps it alive; the group joins the
// other workers (creates its DataParallelStrategy) the first time an op
// needs it, so building a graph connects nothing.
//
// One step's all-reduce ops hand their gradients over as backprop produces
// them (the ring starts a bucket's all-reduce as soon as it is full); when
// the last one is in, the group averages what is left and gives every op its
// mean. A step that computes only some of the gradients (a fetch of one
// averaged gradient, say) fails after the collective timeout naming the
// gradients that never came, instead of hanging; the group then refuses
// further steps, as its strategy may be mid-collective.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dist/training/data_parallel.h"

namespace dflow::dist {

class DataParallelGroup : public std::enable_shared_from_this<DataParallelGroup> {
 public:
  using StrategyFactory = std::function<std::unique_ptr<DataParallelStrategy>(std::vector<GradientSpec>)>;
  // The mean of one gradient, or the error that ended the step.
  using Deliver = std::function<void(Tensor mean, std::optional<Error> error)>;

  // Registers a new group under a process-unique name (Find reaches it while
  // it lives). `factory` makes the strategy from the gradients' specs.
  static std::shared_ptr<DataParallelGroup> Create(int worker, int num_workers, StrategyFactory factory,
                                                   std::chrono::milliseconds step_timeout);
  // The live group `name`; throws kFailedPrecondition when it is gone.
  static std::shared_ptr<DataParallelGroup> Find(const std::string& name);
  ~DataParallelGroup();
  DataParallelGroup(const DataParallelGroup&) = delete;
  DataParallelGroup& operator=(const DataParallelGroup&) = delete;

  const std::string& name() const { return name_; }
  int worker() const { return worker_; }
  int num_workers() const { return num_workers_; }

  // While building: one more gradient; returns its index (the all-reduce op's
  // `index` attr). Throws once the strategy exists (its buckets are fixed).
  int AddGradient(GradientSpec spec);
  // The strategy, made (the workers joined) on first use.
  DataParallelStrategy& strategy();

  // An all-reduce op's gradient of the current step; `deliver` is called
  // once, from whichever thread completes the step.
  void Ready(int index, const Tensor& gradient, Deliver deliver);
  // Every worker's `value` becomes the chief's.
  Tensor Broadcast(const std::string& name, Tensor value);

  // Between steps: true on every worker when `flag` is on any; then the
  // final handshake (DataParallelStrategy::AnyWorker, Finish).
  bool AnyWorker(bool flag);
  void Finish();

 private:
  DataParallelGroup(std::string name, int worker, int num_workers, StrategyFactory factory,
                    std::chrono::milliseconds step_timeout);
  DataParallelStrategy& StrategyLocked();
  void CheckUsable() const;
  std::vector<Deliver> TakePending();
  void FailStep(std::unique_lock<std::mutex>& lock, const Error& error);
  void WatchSteps();
  std::string MissingGradients() const;

  const std::string name_;
  const int worker_, num_workers_;
  const StrategyFactory factory_;
  const std::chrono::milliseconds step_timeout_;

  mutable std::mutex mu_;
  std::condition_variable step_done_;
  std::vector<GradientSpec> specs_;
  std::unique_ptr<DataParallelStrategy> strategy_;
  std::optional<Error> failed_;      // a step failed: the strategy may be mid-collective
  uint64_t step_ = 0;                // steps started so far
  std::chrono::steady_clock::time_point step_started_;
  std::vector<Deliver> pending_;     // this step's, by index (empty: not yet handed over)
  int num_pending_ = 0;
  bool stopping_ = false;
  std::thread watcher_;              // fails a step that waits too long for a gradient
};

}  // namespace dflow::dist
