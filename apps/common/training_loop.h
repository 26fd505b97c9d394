// The step loop both apps train with (dflow-count, dflow-detect): steps
// start+1 .. total, a periodic checkpoint, a stop request on any worker
// stopping every worker at one step, and, in an elastic job, a regroup when
// the workers change (dist/training/elastic.h): every worker takes rank 0's
// variables and reads its new rank's share of the data from the step they go
// on from. It times the steady state (from the second step on: the first
// builds the executor) and the share of it spent waiting for input.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "apps/common/data_parallel_settings.h"
#include "apps/common/progress.h"
#include "apps/common/workers.h"
#include "dist/cluster.h"
#include "dist/training/data_parallel.h"
#include "dist/training/elastic.h"

namespace dflow::apps {

// The workers of a run: a fixed cluster, an elastic job (whose ranks are
// known once it joins: until then it prepares as the launcher's index), or
// this process alone (index 0 of 1).
struct TrainingWorkers {
  std::optional<dist::ClusterSpec> cluster;
  std::optional<dist::ElasticWorker> elastic;
  int index = 0, count = 1;
  // Whether the gradients are averaged across processes (fed to the update).
  bool distributed() const { return cluster.has_value() || elastic.has_value(); }
};
// Throws as TrainingCluster and ElasticTrainingWorker (apps/common/workers.h) do.
TrainingWorkers FindTrainingWorkers(const DataParallelSettings& settings, const std::string& device);

// A stop by Ctrl-C: after StopOnSignals, SIGINT and SIGTERM only record the
// request; the loop then saves a checkpoint and ends at the next step, and
// the app exits 130.
void StopOnSignals();
bool StopSignalled();
// With workers, true on every worker at the same step once any of them was
// signalled (DataParallelStrategy::AnyWorker); `strategy` null: this process.
bool StopRequested(dist::DataParallelStrategy* strategy);

struct TrainingLoopResult {
  int64_t step = 0;      // the last step done
  bool stopped = false;  // a stop request ended the run early
  double seconds = 0;    // of the steady state
  double input_wait_fraction = 0;
};

// `Pipeline::Next()` returns an optional batch.
template <typename Pipeline>
struct TrainingLoop {
  using Batch = typename std::decay_t<decltype(*std::declval<Pipeline&>().Next())>;
  int64_t total_steps = 0, checkpoint_every = 0;
  dist::DataParallelStrategy* strategy = nullptr;  // null: single-process
  std::function<bool()> stop_requested;           // with workers: agreed by all (AnyWorker)
  // The input from a step on, for the strategy's current rank and workers.
  std::function<std::unique_ptr<Pipeline>(int64_t start)> input;
  // Runs `batch` as step `step` (1-based) and reports its progress.
  std::function<void(int64_t step, const Batch& batch)> run_step;
  std::function<void(int64_t step)> checkpoint;
  // After a dist::MembershipChanged: joins the next round and returns the
  // step to go on after (apps::Regroup).
  std::function<int64_t(int64_t completed_step, const std::string& why)> regroup;

  TrainingLoopResult Run(int64_t start) const {
    using Clock = std::chrono::steady_clock;
    std::unique_ptr<Pipeline> pipeline = input(start);
    TrainingLoopResult r{.step = start};
    auto loop_start = Clock::now();
    double waiting = 0;
    for (;;) {
      try {
        while (r.step < total_steps && !(r.stopped = stop_requested())) {
          auto wait_start = Clock::now();
          std::optional<Batch> batch = pipeline->Next();
          waiting += std::chrono::duration<double>(Clock::now() - wait_start).count();
          run_step(++r.step, *batch);
          if (r.step % checkpoint_every == 0 && r.step < total_steps) checkpoint(r.step);
          if (r.step == start + 1) {  // the first step builds the executor: time the steady state
            loop_start = Clock::now();
            waiting = 0;
          }
        }
        if (strategy) strategy->Finish();
        break;
      } catch (const dist::MembershipChanged& change) {  // an elastic job: go on in the next round
        r.step = regroup(r.step, change.message());
        pipeline = input(r.step);
      }
    }
    r.seconds = std::chrono::duration<double>(Clock::now() - loop_start).count();
    r.input_wait_fraction = r.seconds > 0 ? waiting / r.seconds : 0;
    return r;
  }
};

// An app's training run around TrainingLoop: the progress line every
// `report_every` steps (the chief also records each step in
// RUN/metrics.jsonl), checkpoints CHECKPOINT_DIR/model-STEP written by the
// chief alone (every `checkpoint_every` steps and at the end), a regroup on
// `global_step` when an elastic job's workers change, and the summary.
template <typename Pipeline>
struct AppTrainingRun {
  using Batch = typename TrainingLoop<Pipeline>::Batch;
  int64_t total_steps = 0, checkpoint_every = 0, report_every = 10;
  std::string out, checkpoint_dir;
  Session* session = nullptr;
  const Saver* saver = nullptr;
  Output global_step;
  dist::DataParallelStrategy* strategy = nullptr;  // null: single-process
  // This worker's input from a step on, for its rank in the current ring
  // (an elastic job reshards at every change of membership).
  std::function<std::unique_ptr<Pipeline>(int64_t start)> input;
  // Runs `batch` as step `step` (1-based) and reports it to `progress`.
  std::function<void(int64_t step, const Batch& batch, Progress& progress)> run_step;

  bool chief() const { return !strategy || strategy->is_chief(); }
  // Only the chief writes checkpoints; the others return "".
  std::string Checkpoint(int64_t step) const {
    if (!chief()) return "";
    return saver->Save(*session, (std::filesystem::path(checkpoint_dir) / "model").string(), step);
  }

  // Runs steps start+1 .. total_steps.
  TrainingLoopResult Run(int64_t start) const {
    Progress progress(start, total_steps, report_every);
    if (chief()) progress.RecordTo(MetricsFile(out));
    TrainingLoop<Pipeline> loop{
        .total_steps = total_steps,
        .checkpoint_every = checkpoint_every,
        .strategy = strategy,
        .stop_requested = [&] { return StopRequested(strategy); },
        .input = input,
        .run_step = [&](int64_t step, const Batch& batch) { run_step(step, batch, progress); },
        .checkpoint = [&](int64_t step) { Checkpoint(step); },
        .regroup = [&](int64_t step, const std::string& why) {
          return Regroup(*strategy, *session, *saver, global_step, step, why);
        }};
    const TrainingLoopResult r = loop.Run(start);
    progress.Finish();
    std::string path = Checkpoint(r.step);
    PrintSummary(r.stopped, r.step, progress, r.input_wait_fraction,
                 chief() ? std::optional<std::string>(path) : std::nullopt);
    return r;
  }
};

}  // namespace dflow::apps
