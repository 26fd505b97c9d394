// dflow-count train: trains the density counter on a point-annotated
// dataset, with periodic atomic checkpoints, exact resume and RUN/config.json.
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/count/commands.h"
#include "apps/count/progress.h"
#include "apps/count/workers.h"
#include "dist/data_parallel.h"
#include "graph/session.h"
#include "models/checkpoint.h"
#include "models/data/pipeline.h"
#include "models/density_counter.h"

namespace dflow::count_app {
namespace {

namespace fs = std::filesystem;

// Set by SIGINT/SIGTERM: the loop saves a checkpoint and stops.
std::atomic<bool> g_stop_requested{false};
void RequestStop(int) { g_stop_requested = true; }

std::string CheckpointDir(const TrainSettings& s) { return (fs::path(s.out) / "checkpoints").string(); }

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

// Worker k of n reads shard k (examples i % n == k); every shard makes the
// same number of batches, so the workers stay in step.
models::PipelineOptions PipelineOptionsFor(const TrainSettings& s, int64_t start_step, int shard = 0,
                                           int shards = 1) {
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

// The settings of a new run: checks them, records the dataset's statistics
// and the length of the run.
void PlanNewRun(TrainSettings& s, const models::TileIndex& index, int64_t batches_per_epoch) {
  DatasetStats stats = Stats(index);
  s.train_images = static_cast<int64_t>(index.images.size());
  s.train_tiles = static_cast<int64_t>(index.tiles.size());
  s.train_mean_count = stats.mean_count;
  s.train_count_per_pixel = stats.count_per_pixel;
  s.batches_per_epoch = batches_per_epoch;
}

int64_t TotalSteps(const TrainSettings& s) {
  DFLOW_REQUIRE(s.steps > 0 || s.epochs > 0, "train: give --steps or --epochs");
  if (s.steps > 0) return s.steps;
  return static_cast<int64_t>(std::ceil(s.epochs * static_cast<double>(s.batches_per_epoch)));
}

double BatchMae(const Tensor& predicted, const std::vector<double>& truth) {
  double sum = 0;
  for (size_t i = 0; i < truth.size(); ++i) sum += std::abs(predicted.data<float>()[i] - truth[i]);
  return sum / static_cast<double>(truth.size());
}

struct TrainLoop {
  const TrainSettings& settings;
  const models::DensityCounter& model;
  Session& session;
  const Saver& saver;
  dist::DataParallelStrategy* strategy = nullptr;  // null: single-process

  bool chief() const { return !strategy || strategy->is_chief(); }
  // Only the chief writes checkpoints; the others return "".
  std::string Checkpoint(int64_t step) const {
    if (!chief()) return "";
    return saver.Save(session, (fs::path(CheckpointDir(settings)) / "model").string(), step);
  }
  // With workers, a stop request on any of them stops all at the same step.
  bool StopRequested() const { return strategy ? strategy->AnyWorker(g_stop_requested) : g_stop_requested.load(); }
  // Loss and counts of one step; with workers, the gradients are averaged first.
  std::vector<Tensor> Step(const models::Batch& batch) const {
    FeedList feeds = {{model.images, batch.images}, {model.target, batch.density}};
    if (!strategy) return session.Run(feeds, {model.loss, model.counts}, {model.train});
    // Backprop order (last layer first), as the specs: the first buckets fill first.
    dist::ReplicatedStep names{.gradients = {model.gradients.rbegin(), model.gradients.rend()},
                               .gradient_feeds = {model.gradient_feeds.rbegin(), model.gradient_feeds.rend()},
                               .apply = {model.train},
                               .extra_fetches = {model.loss, model.counts}};
    return dist::RunDataParallelStep(session, *strategy, names, feeds);
  }

  // Runs steps start+1 .. total; returns the last step done.
  int64_t Run(models::InputPipeline& pipeline, int64_t start) {
    Progress progress(start, settings.total_steps, 10);
    auto loop_start = std::chrono::steady_clock::now();
    double waiting = 0;
    int64_t step = start;
    bool stopped = false;
    while (step < settings.total_steps && !(stopped = StopRequested())) {
      auto wait_start = std::chrono::steady_clock::now();
      std::optional<models::Batch> batch = pipeline.Next();
      waiting += std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
      std::vector<Tensor> out = Step(*batch);
      ++step;
      progress.Update(step, static_cast<int64_t>(batch->counts.size()), out[0].scalar<float>(),
                      BatchMae(out[1], batch->counts));
      if (step % settings.checkpoint_every == 0 && step < settings.total_steps) Checkpoint(step);
      if (step == start + 1) {  // the first step builds the executor: time the steady state
        loop_start = std::chrono::steady_clock::now();
        waiting = 0;
      }
    }
    progress.Finish();
    std::string path = Checkpoint(step);
    if (strategy) strategy->Finish();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
    double wait_fraction = seconds > 0 ? waiting / seconds : 0;
    std::cout << (stopped ? "stopped" : "finished") << " at step " << step << ": "
              << progress.images_per_second() << " img/s, waited for input "
              << 100 * wait_fraction << "% of the time\n";
    nlohmann::json summary = {{"step", step},
                              {"img_per_s", progress.images_per_second()},
                              {"input_wait_fraction", wait_fraction}};
    if (chief()) {
      std::cout << "checkpoint " << path << "\n";
      summary["checkpoint"] = path;
    }
    std::cout << summary.dump() << "\n";
    return step;
  }
};

}  // namespace

int Train(TrainSettings settings, bool resume) {
  // With workers, only the chief (worker 0) writes the run directory.
  std::optional<dist::ClusterSpec> cluster = TrainingCluster(settings);
  const int worker = cluster ? cluster->self()->index : 0;
  const int workers = cluster ? cluster->num_tasks("worker") : 1;
  bool exists = fs::exists(ConfigPath(settings.out));
  DFLOW_REQUIRE(resume || !exists || worker > 0, "train: ", settings.out,
                " already holds a run; pass --resume to continue it or choose another --out");
  if (resume && !exists)
    Fail(Code::kNotFound, "train --resume: ", ConfigPath(settings.out), " does not exist");
  models::TileIndex index =
      models::IndexTiles(models::ReadPointsDataset(settings.data), settings.tile);
  std::optional<std::string> latest = LatestCheckpoint(CheckpointDir(settings));
  if (resume && !latest)
    Fail(Code::kNotFound, "train --resume: no checkpoint in ", CheckpointDir(settings));

  std::unique_ptr<models::InputPipeline> pipeline;
  if (!resume) {
    pipeline = std::make_unique<models::InputPipeline>(index, PipelineOptionsFor(settings, 0, worker, workers));
    PlanNewRun(settings, index, pipeline->batches_per_epoch());
  }
  settings.total_steps = TotalSteps(settings);
  if (worker == 0) WriteConfig(settings);

  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(static_cast<int64_t>(settings.seed));
  models::DensityCounter model = models::BuildDensityCounter(
      scope, {.tile_size = settings.tile,
              .learning_rate = settings.learning_rate,
              .decay_steps = settings.total_steps,
              .density_scale = settings.density_scale,
              .fed_gradients = cluster.has_value()});
  Saver saver(scope, SaverOptions{.max_to_keep = settings.keep});
  SessionOptions session_options;
  session_options.num_threads = settings.threads;
  Session session(scope, session_options);
  std::unique_ptr<dist::DataParallelStrategy> strategy;
  if (cluster) {
    std::vector<dist::GradientSpec> specs;
    for (auto v = model.variables.rbegin(); v != model.variables.rend(); ++v)  // backprop order
      specs.push_back({v->node()->name(), v->dtype(), v->shape()});
    strategy = dist::MakeDataParallelStrategy(StrategyName(settings), *cluster, std::move(specs));
  }
  int64_t start = 0;
  if (resume && worker == 0) {
    saver.Restore(session, *latest);
  } else {
    session.Run({}, {}, {model.init});
  }
  // Every worker starts from the chief's variables (optimizer slots and global step included).
  if (strategy) strategy->SynchronizeVariables(session, session.resources().VariableNames());
  if (resume) {
    start = session.Run({model.global_step})[0].scalar<int64_t>();
    std::cout << "resuming " << (worker == 0 ? *latest : "the chief's checkpoint") << " at step " << start << "\n";
    pipeline = std::make_unique<models::InputPipeline>(index, PipelineOptionsFor(settings, start, worker, workers));
  }
  std::cout << "training on " << settings.train_tiles << " tiles of " << settings.tile << "x"
            << settings.tile << " from " << settings.train_images << " images ("
            << settings.batches_per_epoch << " batches of " << settings.batch
            << " per epoch) for " << settings.total_steps << " steps\n";
  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);
  TrainLoop loop{settings, model, session, saver, strategy.get()};
  loop.Run(*pipeline, start);
  return g_stop_requested ? 130 : 0;
}

}  // namespace dflow::count_app
