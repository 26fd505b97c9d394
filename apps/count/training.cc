#include "apps/count/training.h"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "models/checkpoint.h"

namespace dflow::count_app {
namespace {

namespace fs = std::filesystem;

struct DatasetStats {
  double mean_count = 0, count_per_pixel = 0;
};

DatasetStats Stats(const models::TileIndex& index) {
  double points = 0, pixels = 0;
  for (size_t i = 0; i < index.images.size(); ++i) {
    points += static_cast<double>(index.images[i].points.size());
    pixels += static_cast<double>(index.sizes[i].height * index.sizes[i].width);
  }
  return {points / static_cast<double>(index.images.size()), points / pixels};
}

// The settings of a new run: records the dataset's statistics and the
// length of an epoch.
void PlanNewRun(TrainSettings& s, const models::TileIndex& index, int64_t batches_per_epoch) {
  DatasetStats stats = Stats(index);
  s.train_images = static_cast<int64_t>(index.images.size());
  s.train_tiles = static_cast<int64_t>(index.tiles.size());
  s.train_mean_count = stats.mean_count;
  s.train_count_per_pixel = stats.count_per_pixel;
  s.batches_per_epoch = batches_per_epoch;
}

// The dataset as the run sees it: every image's file (relative to the
// dataset) and points, in the order training reads them.
apps::DatasetIdentity IdentifyPoints(const std::string& dir, const std::vector<models::AnnotatedImage>& images) {
  std::vector<std::string> lines;
  for (const models::AnnotatedImage& image : images) {
    std::ostringstream line;
    line.precision(17);
    line << fs::path(image.path).lexically_relative(dir).generic_string();
    for (const models::Point& p : image.points) line << " " << p.x << "," << p.y;
    lines.push_back(line.str());
  }
  return apps::IdentifyDataset(static_cast<int64_t>(images.size()), lines);
}

// The run's tiles. A new run records the dataset's absolute path (so that
// it resumes from any directory) and identity; a resumed one checks it.
models::TileIndex IndexDataset(TrainSettings& settings, bool resume) {
  if (!resume) settings.data = apps::AbsolutePath(settings.data);
  std::vector<models::AnnotatedImage> images = models::ReadPointsDataset(settings.data);
  apps::DatasetIdentity identity = IdentifyPoints(settings.data, images);
  if (resume) apps::CheckSameDataset(settings.dataset, identity, settings.data, ConfigPath(settings.out));
  settings.dataset = identity;
  return models::IndexTiles(std::move(images), settings.tile);
}

int64_t TotalSteps(const TrainSettings& s) {
  DFLOW_REQUIRE(s.steps > 0 || s.epochs > 0, "train: give --steps or --epochs");
  if (s.steps > 0) return s.steps;
  return static_cast<int64_t>(std::ceil(s.epochs * static_cast<double>(s.batches_per_epoch)));
}

}  // namespace

std::string CheckpointDir(const TrainSettings& s) { return (fs::path(s.out) / "checkpoints").string(); }

models::PipelineOptions PipelineOptionsFor(const TrainSettings& s, int64_t start_step, int shard, int shards) {
  models::PipelineOptions o;
  o.batch_size = s.batch;
  o.sigma = s.sigma;
  o.balance_bins = s.balance;
  o.bins = models::ParseCountBins(s.bins);
  o.flip = s.flip;
  o.num_parallel_calls = s.decode_threads;
  o.prefetch_batches = s.prefetch;
  o.seed = s.seed;
  o.start_step = start_step;
  o.shard_index = shard;
  o.num_shards = shards;
  return o;
}

PreparedRun PrepareRun(TrainSettings& settings, bool resume, int worker, int workers) {
  bool exists = fs::exists(ConfigPath(settings.out));
  DFLOW_REQUIRE(resume || !exists || worker > 0, "train: ", settings.out,
                " already holds a run; pass --resume to continue it or choose another --out");
  if (resume && !exists)
    Fail(Code::kNotFound, "train --resume: ", ConfigPath(settings.out), " does not exist");
  PreparedRun run;
  run.latest = apps::LatestExistingCheckpoint(CheckpointDir(settings));
  if (resume && !run.latest)
    Fail(Code::kNotFound, "train --resume: no checkpoint in ", CheckpointDir(settings));
  run.index = IndexDataset(settings, resume);
  if (!resume) {
    run.pipeline = std::make_unique<models::InputPipeline>(run.index,
                                                           PipelineOptionsFor(settings, 0, worker, workers));
    PlanNewRun(settings, run.index, run.pipeline->batches_per_epoch());
  }
  settings.total_steps = TotalSteps(settings);
  if (worker == 0) WriteConfig(settings);
  return run;
}

models::DensityCounterOptions ModelOptions(const TrainSettings& settings) {
  return {.tile_size = settings.tile,
          .learning_rate = settings.learning_rate,
          .decay_steps = settings.total_steps,
          .density_scale = settings.density_scale};
}

double BatchMae(const Tensor& predicted, const std::vector<double>& truth) {
  double sum = 0;
  for (size_t i = 0; i < truth.size(); ++i) sum += std::abs(predicted.data<float>()[i] - truth[i]);
  return sum / static_cast<double>(truth.size());
}

void PrintPlan(const TrainSettings& settings) {
  std::cout << "training on " << settings.train_tiles << " tiles of " << settings.tile << "x"
            << settings.tile << " from " << settings.train_images << " images ("
            << settings.batches_per_epoch << " batches of " << settings.batch
            << " per epoch) for " << settings.total_steps << " steps"
            << (settings.device.empty() ? "" : " on " + settings.device) << "\n";
}

}  // namespace dflow::count_app
