// dflow-detect train: trains an SSD detector on a detection dataset, with
// periodic atomic checkpoints, exact resume and RUN/config.json; with
// --workers, data-parallel over a ring all-reduce (apps/common/workers.h).
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>

#include "apps/common/progress.h"
#include "apps/common/workers.h"
#include "apps/detect/commands.h"
#include "apps/detect/detector.h"
#include "dist/training/data_parallel.h"
#include "models/checkpoint.h"
#include "models/data/detection_pipeline.h"
#include "models/detection/matching.h"

namespace dflow::detect_app {
namespace {

namespace fs = std::filesystem;

// Set by SIGINT/SIGTERM: the loop saves a checkpoint and stops.
std::atomic<bool> g_stop_requested{false};
void RequestStop(int) { g_stop_requested = true; }

std::string CheckpointDir(const TrainSettings& s) { return (fs::path(s.out) / "checkpoints").string(); }

// A new run records the dataset's classes (label k + 1 is category k) and
// size; a resumed one checks that the data still has the classes it learned.
void RecordDataset(TrainSettings& s, const models::DetectionDataset& data, bool resume) {
  std::vector<std::string> names;
  std::vector<int64_t> ids;
  for (const models::DetectionCategory& c : data.categories) {
    names.push_back(c.name);
    ids.push_back(c.id);
  }
  if (resume) {
    DFLOW_REQUIRE(names == s.class_names, "train --resume: the classes of ", s.data,
                  " are not the ones the run learned (", ConfigPath(s.out), ")");
    return;
  }
  DFLOW_REQUIRE(!names.empty(), "train: ", s.data, " has no categories");
  s.class_names = names;
  s.category_ids = ids;
  s.train_images = static_cast<int64_t>(data.images.size());
  s.train_objects = static_cast<int64_t>(data.annotations.size());
}

// Worker k of n reads shard k; every shard makes the same number of
// batches (drop_remainder), so the workers stay in step.
models::DetectionPipelineOptions PipelineOptionsFor(const TrainSettings& s, const Tensor& anchors,
                                                    int64_t start_step, int shard, int shards) {
  models::DetectionPipelineOptions o;
  o.image_size = s.size;
  o.batch_size = s.batch;
  o.augment = s.augment != "none";
  if (s.augment == "light") {
    o.augment_options.expand_probability = 0;
    o.augment_options.crop = false;
  }
  o.num_parallel_calls = s.decode_threads;
  o.prefetch_batches = s.prefetch;
  o.seed = s.seed;
  o.start_step = start_step;
  o.shard_index = shard;
  o.num_shards = shards;
  o.num_anchors = anchors.shape().dim(0);
  std::vector<float> boxes(anchors.data<float>(), anchors.data<float>() + anchors.NumElements());
  o.encode = [boxes = std::move(boxes)](const models::detection::GroundTruth& truth) {
    return models::detection::MatchSsd(boxes, truth);
  };
  return o;
}

int64_t TotalSteps(const TrainSettings& s) {
  DFLOW_REQUIRE(s.steps > 0 || s.epochs > 0, "train: give --steps or --epochs");
  if (s.steps > 0) return s.steps;
  return static_cast<int64_t>(std::ceil(s.epochs * static_cast<double>(s.batches_per_epoch)));
}

// --init-from: the backbone's variables from another checkpoint, renamed
// by --map (a JSON object {variable here: tensor there}).
void InitBackbone(Session& session, const DetectorGraph& g, const TrainSettings& s) {
  RestoreOptions restore;
  for (const Output& v : g.net.backbone_variables) restore.only.push_back(v.node()->name());
  if (!s.init_map.empty()) {
    nlohmann::json map = apps::ReadJsonFile(s.init_map);
    DFLOW_REQUIRE(map.is_object(), s.init_map, ": expected a JSON object {variable: tensor name}");
    for (const auto& [ours, theirs] : map.items()) {
      DFLOW_REQUIRE(theirs.is_string(), s.init_map, ": the name for \"", ours, "\" is not a string");
      restore.name_map[ours] = theirs.get<std::string>();
    }
  }
  Saver(g.scope, g.net.backbone_variables).Restore(session, apps::ResolveCheckpoint(s.init_from), restore);
  std::cout << "backbone (" << g.net.backbone_variables.size() << " variables) from " << s.init_from
            << "\n";
}

struct TrainLoop {
  const TrainSettings& settings;
  const DetectorGraph& graph;
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
  // This worker's total, box and class loss; with workers, the gradients are
  // averaged first and each worker updates its own batch-norm statistics.
  std::vector<Tensor> Step(const models::DetectionBatch& batch) const {
    const DetectorGraph& g = graph;
    FeedList feeds = {{g.net.images, batch.images},
                      {g.loss.box_targets, batch.box_targets},
                      {g.loss.class_targets, batch.class_targets}};
    std::vector<TensorName> losses = {g.loss.loss, g.loss.box_loss, g.loss.class_loss};
    if (!strategy) return session.Run(feeds, losses, {g.train});
    dist::ReplicatedStep names{.gradients = {g.gradients.begin(), g.gradients.end()},
                               .gradient_feeds = {g.gradient_feeds.begin(), g.gradient_feeds.end()},
                               .apply = {g.train},
                               .extra_fetches = losses,
                               .local_targets = {g.net.batch_norm_updates.begin(), g.net.batch_norm_updates.end()}};
    return dist::RunDataParallelStep(session, *strategy, apps::InBackpropOrder(std::move(names)), feeds);
  }

  void Run(models::DetectionPipeline& pipeline, int64_t start) {
    apps::Progress progress(start, settings.total_steps, 20);
    auto loop_start = std::chrono::steady_clock::now();
    double waiting = 0;
    int64_t step = start;
    bool stopped = false;
    while (step < settings.total_steps && !(stopped = StopRequested())) {
      auto wait_start = std::chrono::steady_clock::now();
      std::optional<models::DetectionBatch> batch = pipeline.Next();
      waiting += std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
      std::vector<Tensor> out = Step(*batch);
      ++step;
      progress.Update(step, batch->images.shape().dim(0),
                      {{"loss", out[0].scalar<float>()},
                       {"box", out[1].scalar<float>()},
                       {"class", out[2].scalar<float>()}});
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
    apps::PrintSummary(stopped, step, progress, seconds > 0 ? waiting / seconds : 0,
                       chief() ? std::optional<std::string>(path) : std::nullopt);
  }
};

// Checks --out and --resume against the run directory; returns the newest
// checkpoint. With workers, the chief may have written config.json already.
std::optional<std::string> CheckRunDir(const TrainSettings& settings, bool resume, int worker) {
  bool exists = fs::exists(ConfigPath(settings.out));
  DFLOW_REQUIRE(resume || !exists || worker > 0, "train: ", settings.out,
                " already holds a run; pass --resume to continue it or choose another --out");
  if (resume && !exists)
    Fail(Code::kNotFound, "train --resume: ", ConfigPath(settings.out), " does not exist");
  std::optional<std::string> latest = LatestCheckpoint(CheckpointDir(settings));
  if (resume && !latest) Fail(Code::kNotFound, "train --resume: no checkpoint in ", CheckpointDir(settings));
  return latest;
}

// The variables a run starts from: the chief restores the latest checkpoint
// (resume) or initialises them (and the backbone from --init-from); then
// every worker takes the chief's, optimizer slots, batch-norm statistics and
// global step included. Returns the step the run resumes after (0: new).
int64_t StartVariables(Session& session, const DetectorGraph& g, const Saver& saver, const TrainSettings& s,
                       const std::optional<std::string>& resume_from, dist::DataParallelStrategy* strategy) {
  const bool chief = !strategy || strategy->is_chief();
  if (resume_from && chief) {
    saver.Restore(session, *resume_from);
  } else {
    session.Run({}, {}, {g.init});
    if (!resume_from && !s.init_from.empty()) InitBackbone(session, g, s);
  }
  if (strategy) strategy->SynchronizeVariables(session, session.resources().VariableNames());
  if (!resume_from) return 0;
  int64_t start = session.Run({g.global_step})[0].scalar<int64_t>();
  std::cout << "resuming " << (chief ? *resume_from : "the chief's checkpoint") << " at step " << start << "\n";
  return start;
}

void PrintPlan(const TrainSettings& s, const DetectorGraph& g) {
  std::cout << "training " << s.model << " " << s.size << "x" << s.size << " (width " << s.width << ", "
            << s.class_names.size() << " classes, " << g.net.anchors.shape().dim(0) << " default boxes) on "
            << s.train_images << " images with " << s.train_objects << " objects (" << s.batches_per_epoch
            << " batches of " << s.batch << " per epoch) for " << s.total_steps << " steps\n";
}

}  // namespace

int Train(TrainSettings settings, bool resume) {
  CheckSessionDevice(settings.device);  // before the run directory is written
  std::optional<dist::ClusterSpec> cluster = apps::TrainingCluster(settings.parallel);
  if (cluster) apps::RequireCpuWhenDistributed(settings.device);
  const int worker = apps::WorkerIndex(cluster), workers = apps::NumWorkers(cluster);
  std::optional<std::string> latest = CheckRunDir(settings, resume, worker);
  models::DetectionDataset data = LoadDataset(settings.data);
  RecordDataset(settings, data, resume);

  // The pipeline checks every image and box before the run directory is written.
  const Tensor anchors = models::detection::SsdDefaultBoxes(SsdOptionsFor(settings, true));
  auto pipeline = std::make_unique<models::DetectionPipeline>(
      data, settings.data, PipelineOptionsFor(settings, anchors, 0, worker, workers));
  if (!resume) settings.batches_per_epoch = pipeline->batches_per_epoch();
  settings.total_steps = TotalSteps(settings);  // a resumed run may be made longer
  // The schedule reads total_steps.
  std::unique_ptr<DetectorGraph> graph = BuildTrainingGraph(settings, cluster.has_value());
  const DetectorGraph& trained = *graph;
  Saver saver(trained.scope, SaverOptions{.max_to_keep = settings.keep});
  SessionOptions session_options;
  session_options.num_threads = settings.threads;
  session_options.device = settings.device;
  Session session(trained.scope, session_options);
  std::unique_ptr<dist::DataParallelStrategy> strategy;
  if (cluster) strategy = apps::MakeStrategy(settings.parallel, *cluster, trained.trained);
  const int64_t start =
      StartVariables(session, trained, saver, settings, resume ? latest : std::nullopt, strategy.get());
  if (resume)
    pipeline = std::make_unique<models::DetectionPipeline>(
        std::move(data), settings.data, PipelineOptionsFor(settings, anchors, start, worker, workers));
  if (worker == 0) WriteConfig(settings);
  PrintPlan(settings, trained);
  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);
  TrainLoop loop{settings, trained, session, saver, strategy.get()};
  loop.Run(*pipeline, start);
  return g_stop_requested ? 130 : 0;
}

}  // namespace dflow::detect_app
