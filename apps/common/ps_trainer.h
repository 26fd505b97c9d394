// A parameter-server worker's training loop in the apps (`train --strategy
// ps`): the app's input (its shard's batches and metrics) in, progress lines
// and the chief's checkpoints out, around a dist::PsWorker. The ps tasks hold
// the variables; the chief reads them back to save checkpoints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/progress.h"
#include "dist/training/ps_training.h"
#include "models/checkpoint.h"

namespace dflow::apps {

// What the loop asks of an app.
class PsInput {
 public:
  virtual ~PsInput() = default;
  // Opens this worker's shard `shard_step` batches in and prints the plan.
  virtual void Open(int64_t shard_step) = 0;
  // The feeds of the next batch.
  virtual FeedList Next() = 0;
  // The images of the last batch and its progress metrics from the step's fetches.
  virtual int64_t images() const = 0;
  virtual Progress::Metrics Metrics(const std::vector<Tensor>& fetched) const = 0;
};

struct PsLoopOptions {
  dist::PsMode mode = dist::PsMode::kSync;
  int64_t total_steps = 0, checkpoint_every = 0, progress_every = 10;
  std::string checkpoint_prefix;          // RUN/checkpoints/model
  std::optional<std::string> resume_from;  // the chief's checkpoint, when resuming
  Output global_step;
  std::vector<TensorName> fetches;  // what Metrics reads
};

// dist::PsMode of --ps-mode ("sync" or "async").
dist::PsMode PsModeOf(const std::string& name);

// Trains until the global step reaches total_steps; the chief saves every
// checkpoint_every steps and at the end.
void RunPsLoop(dist::PsWorker& worker, const Saver& saver, const dist::PsTask& task,
               const PsLoopOptions& options, PsInput& input);

}  // namespace dflow::apps
