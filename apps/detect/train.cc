// dflow-detect train: trains an SSD detector on a detection dataset, with
// periodic atomic checkpoints, exact resume and RUN/config.json.
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <iostream>

#include "apps/common/progress.h"
#include "apps/detect/commands.h"
#include "apps/detect/detector.h"
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

models::DetectionPipelineOptions PipelineOptionsFor(const TrainSettings& s, const Tensor& anchors,
                                                    int64_t start_step) {
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

  std::string Checkpoint(int64_t step) const {
    return saver.Save(session, (fs::path(CheckpointDir(settings)) / "model").string(), step);
  }

  void Run(models::DetectionPipeline& pipeline, int64_t start) {
    const DetectorGraph& g = graph;
    apps::Progress progress(start, settings.total_steps, 20);
    auto loop_start = std::chrono::steady_clock::now();
    double waiting = 0;
    int64_t step = start;
    bool stopped = false;
    while (step < settings.total_steps && !(stopped = g_stop_requested.load())) {
      auto wait_start = std::chrono::steady_clock::now();
      std::optional<models::DetectionBatch> batch = pipeline.Next();
      waiting += std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
      std::vector<Tensor> out = session.Run({{g.net.images, batch->images},
                                             {g.loss.box_targets, batch->box_targets},
                                             {g.loss.class_targets, batch->class_targets}},
                                            {g.loss.loss, g.loss.box_loss, g.loss.class_loss},
                                            {g.train});
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
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
    double wait_fraction = seconds > 0 ? waiting / seconds : 0;
    std::cout << (stopped ? "stopped" : "finished") << " at step " << step << ": "
              << progress.images_per_second() << " img/s, waited for input "
              << 100 * wait_fraction << "% of the time\ncheckpoint " << path << "\n";
    std::cout << nlohmann::json{{"step", step},
                                {"img_per_s", progress.images_per_second()},
                                {"input_wait_fraction", wait_fraction},
                                {"checkpoint", path}}
                     .dump()
              << "\n";
  }
};

}  // namespace

int Train(TrainSettings settings, bool resume) {
  CheckSessionDevice(settings.device);  // before the run directory is written
  bool exists = fs::exists(ConfigPath(settings.out));
  DFLOW_REQUIRE(resume || !exists, "train: ", settings.out,
                " already holds a run; pass --resume to continue it or choose another --out");
  if (resume && !exists)
    Fail(Code::kNotFound, "train --resume: ", ConfigPath(settings.out), " does not exist");
  std::optional<std::string> latest = LatestCheckpoint(CheckpointDir(settings));
  if (resume && !latest) Fail(Code::kNotFound, "train --resume: no checkpoint in ", CheckpointDir(settings));
  models::DetectionDataset data = LoadDataset(settings.data);
  RecordDataset(settings, data, resume);

  // The pipeline checks every image and box before the run directory is written.
  const Tensor anchors = models::detection::SsdDefaultBoxes(SsdOptionsFor(settings, true));
  auto pipeline = std::make_unique<models::DetectionPipeline>(
      data, settings.data, PipelineOptionsFor(settings, anchors, 0));
  if (!resume) settings.batches_per_epoch = pipeline->batches_per_epoch();
  settings.total_steps = TotalSteps(settings);  // a resumed run may be made longer
  std::unique_ptr<DetectorGraph> graph = BuildTrainingGraph(settings);  // the schedule reads total_steps
  const DetectorGraph& trained = *graph;
  Saver saver(trained.scope, SaverOptions{.max_to_keep = settings.keep});
  SessionOptions session_options;
  session_options.num_threads = settings.threads;
  session_options.device = settings.device;
  Session session(trained.scope, session_options);
  int64_t start = 0;
  if (resume) {
    saver.Restore(session, *latest);
    start = session.Run({trained.global_step})[0].scalar<int64_t>();
    std::cout << "resuming " << *latest << " at step " << start << "\n";
    pipeline = std::make_unique<models::DetectionPipeline>(
        std::move(data), settings.data, PipelineOptionsFor(settings, anchors, start));
  } else {
    session.Run({}, {}, {trained.init});
    if (!settings.init_from.empty()) InitBackbone(session, trained, settings);
  }
  WriteConfig(settings);
  std::cout << "training " << settings.model << " " << settings.size << "x" << settings.size
            << " (width " << settings.width << ", " << settings.class_names.size() << " classes, "
            << trained.net.anchors.shape().dim(0) << " default boxes) on " << settings.train_images
            << " images with " << settings.train_objects << " objects ("
            << settings.batches_per_epoch << " batches of " << settings.batch << " per epoch) for "
            << settings.total_steps << " steps\n";
  std::signal(SIGINT, RequestStop);
  std::signal(SIGTERM, RequestStop);
  TrainLoop loop{settings, trained, session, saver};
  loop.Run(*pipeline, start);
  return g_stop_requested ? 130 : 0;
}

}  // namespace dflow::detect_app
