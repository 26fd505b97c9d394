// Data-parallel training with one process per worker, as a training loop
// sees it: a strategy that makes the workers start equal and turns each
// worker's gradients into their mean over all workers; and one step of a
// graph whose gradients are fetched and whose apply op reads them from
// placeholders. Strategies: "ring" (ring_training.h); parameter servers plug
// in behind the same interface (MakeDataParallelStrategy is the one switch).
//
//   auto strategy = MakeDataParallelStrategy("ring", *ClusterSpec::FromEnvironment(), specs);
//   strategy->SynchronizeVariables(session, variable_names);  // the chief's values everywhere
//   for each step: RunDataParallelStep(session, *strategy, step_graph, this_workers_batch);
//   (or by hand: Session::Run with RunOptions::on_fetch_ready calling
//    strategy->GradientReady, then strategy->AverageReadyGradients())
//   strategy->Finish();
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dist/collectives/gradient_buckets.h"
#include "dist/training/gradient_codec.h"
#include "graph/session.h"

namespace dflow::dist {

class ClusterSpec;

class DataParallelStrategy {
 public:
  virtual ~DataParallelStrategy() = default;
  virtual int worker() const = 0;
  virtual int num_workers() const = 0;
  // Worker 0: initialises, writes checkpoints, decides when to stop.
  bool is_chief() const { return worker() == 0; }

  // Every worker's `value` becomes the chief's (`name` tells the values of
  // one call apart; every worker calls with the same names in the same order).
  virtual void BroadcastFromChief(const std::string& name, Tensor& value) = 0;
  // Every worker's `variables` (resource names in `session`, which must keep
  // its variables in this process) become the chief's: before the first
  // step, and after the chief restored a checkpoint. A session whose
  // variables live on other tasks copies them through its graph instead
  // (Saver::Values and Saver::Assign around BroadcastFromChief).
  void SynchronizeVariables(Session& session, const std::vector<std::string>& variables);
  // This worker's gradients (one per spec, in spec order) in; their mean over
  // all workers out, the same bits on every worker.
  virtual std::vector<Tensor> AverageGradients(const std::vector<Tensor>& gradients) = 0;
  // The same, overlapping backprop: GradientReady hands over gradient
  // `index` (spec order) as soon as it is computed (from an executor thread,
  // via RunOptions::on_fetch_ready: thread-safe, returns quickly), and
  // AverageReadyGradients, once all are handed over, returns the mean as
  // AverageGradients would. These defaults keep the gradients and average
  // them at the end; the ring starts each bucket's all-reduce as soon as the
  // bucket is full.
  virtual void GradientReady(int index, const Tensor& gradient);
  virtual std::vector<Tensor> AverageReadyGradients();
  // True on every worker when `flag` is true on any (a stop request that
  // reached one worker stops all at the same step).
  virtual bool AnyWorker(bool flag) = 0;
  // Waits until every worker got here and everything sent was delivered, so
  // that no worker's exit cuts off another's last step.
  virtual void Finish() = 0;

 private:
  std::mutex ready_mu_;
  std::vector<Tensor> ready_;  // the defaults' handed-over gradients, by index
};

// Which strategy: "ring". "ps" is kUnimplemented here: parameter servers
// apply the updates themselves, so they are not a DataParallelStrategy and
// run through RunPsTask / PsWorker (dist/training/ps_training.h) instead.
// `specs` describe the gradients AverageGradients takes.
// RequireStrategy throws the same errors without connecting anything.
struct StrategyOptions {
  std::chrono::milliseconds startup_timeout{60000};  // for every worker to come up
  std::chrono::milliseconds collective_timeout{60000};
  CodecKind codec = CodecKind::kNone;                // ring: none, fp16 (Horovod's) or 1-bit
  size_t bucket_bytes = size_t{4} << 20;
};
void RequireStrategy(const std::string& name);
// The strategy the launcher asked for: DFLOW_STRATEGY, else "ps" when its
// cluster has parameter servers (DFLOW_NUM_PS, TF_CONFIG's or
// DFLOW_CLUSTER's ps job), else "ring".
std::string StrategyFromEnvironment();
std::unique_ptr<DataParallelStrategy> MakeDataParallelStrategy(const std::string& name,
                                                               const ClusterSpec& cluster,
                                                               std::vector<GradientSpec> specs,
                                                               const StrategyOptions& options = {});

// The names a data-parallel step needs from the graph.
struct ReplicatedStep {
  std::vector<TensorName> gradients;       // fetched: this worker's gradients, in spec order
  std::vector<TensorName> gradient_feeds;  // fed: the averaged gradients, same order
  std::vector<TensorName> apply;           // run with the feeds: the optimizer's update
  std::vector<TensorName> extra_fetches;   // fetched with the gradients (a loss)
  // Run with the gradients, on this worker's batch alone: updates that are
  // not averaged (batch-norm moving statistics).
  std::vector<TensorName> local_targets;
};

// Computes this worker's gradients on `feeds`, averages them through
// `strategy` (each gradient handed over as soon as backprop produced it, so
// averaging overlaps the rest of backprop) and applies them. Returns the
// extra fetches (this worker's).
std::vector<Tensor> RunDataParallelStep(Session& session, DataParallelStrategy& strategy,
                                        const ReplicatedStep& step, const FeedList& feeds);

}  // namespace dflow::dist
