// What the counting app's training paths share (apps/count/train.cc: one
// process or ring all-reduce; train_ps.cc: parameter servers): the run
// directory's checks and plan, each worker's input shard, the model's
// options, and the lines a run prints at its start and end.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/progress.h"
#include "apps/count/run_config.h"
#include "models/data/pipeline.h"
#include "models/density_counter.h"

namespace dflow::count_app {

using apps::Progress;
using apps::PrintSummary;

std::string CheckpointDir(const TrainSettings& settings);

// Worker k of n reads shard k (examples i % n == k); every shard makes the
// same number of batches, so the workers stay in step. Starts after
// `start_step` batches of the shard.
models::PipelineOptions PipelineOptionsFor(const TrainSettings& settings, int64_t start_step, int shard = 0,
                                           int shards = 1);

// What a training process knows before it builds the model.
struct PreparedRun {
  models::TileIndex index;
  std::optional<std::string> latest;                // newest checkpoint; set when resuming
  std::unique_ptr<models::InputPipeline> pipeline;  // a new run's, from step 0; null when resuming
};
// Checks --out and --resume against the run directory, indexes the data,
// plans a new run (its statistics, batches per epoch, total steps) and lets
// worker 0 alone write config.json.
PreparedRun PrepareRun(TrainSettings& settings, bool resume, int worker, int workers);

models::DensityCounterOptions ModelOptions(const TrainSettings& settings);

double BatchMae(const Tensor& predicted, const std::vector<double>& truth);

// "training on T tiles of SxS from I images (...) for N steps".
void PrintPlan(const TrainSettings& settings);

// `--strategy ps` under a cluster (dflow launch sets DFLOW_CLUSTER): a ps
// task serves the variables, a worker trains its shard through a
// dist::PsWorker. Returns the process's exit code (apps/count/train_ps.cc).
int TrainWithParameterServers(TrainSettings settings, bool resume);

}  // namespace dflow::count_app
