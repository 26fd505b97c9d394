// A parameter-server worker's training loop in the apps (`train --strategy
// ps`): the app's input (its shard's batches and metrics) in, progress lines
// and the chief's checkpoints out, around a dist::PsWorker. The ps tasks hold
// the variables; the chief reads them back to save checkpoints.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/progress.h"
#include "apps/common/workers.h"
#include "dist/training/ps_training.h"
#include "models/checkpoint.h"

namespace dflow::apps {

// What the loop asks of an app.
class PsInput {
 public:
  virtual ~PsInput() = default;
  // Opens shard `shard` of `shards` (this worker's) `shard_step` batches in
  // and prints the plan.
  virtual void Open(int64_t shard_step, int shard, int shards) = 0;
  // The feeds of the next batch.
  virtual FeedList Next() = 0;
  // The images of the last batch and its progress metrics from the step's fetches.
  virtual int64_t images() const = 0;
  virtual Progress::Metrics Metrics(const std::vector<Tensor>& fetched) const = 0;
};

// What a ps worker trains: Adam at `learning_rate` on `loss` over `variables`.
struct PsGraph {
  const Scope& scope;
  Output loss, learning_rate, global_step;
  std::vector<Output> variables;
  std::vector<TensorName> fetches;  // run with every step: what PsInput::Metrics reads, and more
};

struct PsLoopOptions {
  DataParallelSettings parallel;
  int64_t total_steps = 0, checkpoint_every = 0, progress_every = 10;
  int threads = 1, keep = 3;
  std::string checkpoint_dir;              // RUN/checkpoints
  std::optional<std::string> resume_from;  // the checkpoint the chief restores, when resuming
  // A new run's extra initialisation by the chief (--init-from, an added
  // class's old model), or null; `saver` covers every variable.
  std::function<void(Session& session, const Saver& saver)> initialise;
};

// The options of an app's TrainSettings (its parallel, total_steps,
// checkpoint_every, threads, keep and out).
template <class Settings>
PsLoopOptions PsLoopOptionsFor(const Settings& s, std::optional<std::string> resume_from, int64_t progress_every) {
  return {.parallel = s.parallel,
          .total_steps = s.total_steps,
          .checkpoint_every = s.checkpoint_every,
          .progress_every = progress_every,
          .threads = s.threads,
          .keep = s.keep,
          .checkpoint_dir = (std::filesystem::path(s.out) / "checkpoints").string(),
          .resume_from = std::move(resume_from),
          .initialise = {}};
}

// Builds this worker's dist::PsWorker (its --threads, and sync or async by
// --ps-mode) and trains until the global step reaches total_steps; the chief
// saves every checkpoint_every steps and at the end.
void TrainPsWorker(const dist::PsTask& task, const PsGraph& graph, const PsLoopOptions& options, PsInput& input);

}  // namespace dflow::apps
