// The training paths' shared parts; see training.h.
#include "apps/detect/training.h"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "apps/detect/commands.h"
#include "models/checkpoint.h"
#include "models/data/text_numbers.h"
#include "models/detection/matching.h"

namespace dflow::detect_app {
namespace {

namespace fs = std::filesystem;

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

// The dataset as the run sees it: its images, objects and classes in order.
apps::DatasetIdentity IdentifyDetections(const models::DetectionDataset& data) {
  std::vector<std::string> lines;
  auto line = [&lines](auto... fields) {
    std::ostringstream out;
    out.precision(17);
    ((out << fields << " "), ...);
    lines.push_back(out.str());
  };
  for (const models::DetectionImage& i : data.images) line("image", i.id, i.file_name, i.width, i.height);
  for (const models::DetectionObject& o : data.annotations)
    line("object", o.image_id, o.category_id, o.bbox[0], o.bbox[1], o.bbox[2], o.bbox[3]);
  for (const models::DetectionCategory& c : data.categories) line("class", c.id, c.name);
  return apps::IdentifyDataset(static_cast<int64_t>(data.images.size()), lines);
}

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
  o.encode = [s, boxes = std::move(boxes)](const models::detection::GroundTruth& truth) {
    return MatchObjects(s, boxes, truth);
  };
  return o;
}

int64_t TotalSteps(const TrainSettings& s) {
  DFLOW_REQUIRE(s.steps > 0 || s.epochs > 0, "train: give --steps or --epochs");
  if (s.steps > 0) return s.steps;
  return static_cast<int64_t>(std::ceil(s.epochs * static_cast<double>(s.batches_per_epoch)));
}

std::optional<std::string> CheckRunDir(const TrainSettings& settings, bool resume, int worker) {
  bool exists = fs::exists(ConfigPath(settings.out));
  DFLOW_REQUIRE(resume || !exists || worker > 0, "train: ", settings.out,
                " already holds a run; pass --resume to continue it or choose another --out");
  if (resume && !exists)
    Fail(Code::kNotFound, "train --resume: ", ConfigPath(settings.out), " does not exist");
  std::optional<std::string> latest = apps::LatestExistingCheckpoint(CheckpointDir(settings));
  if (resume && !latest) Fail(Code::kNotFound, "train --resume: no checkpoint in ", CheckpointDir(settings));
  return latest;
}

}  // namespace

std::string CheckpointDir(const TrainSettings& s) { return (fs::path(s.out) / "checkpoints").string(); }

PreparedRun PrepareRun(TrainSettings& settings, bool resume, int worker, int workers) {
  PreparedRun run;
  CheckModel(settings, "train");
  run.latest = CheckRunDir(settings, resume, worker);
  if (!resume) {  // resumable from anywhere
    settings.data = apps::AbsolutePath(settings.data);
    if (!settings.init_from.empty()) settings.init_from = apps::AbsolutePath(settings.init_from);
    if (!settings.init_map.empty()) settings.init_map = apps::AbsolutePath(settings.init_map);
  }
  run.data = LoadDataset(settings.data);
  apps::DatasetIdentity identity = IdentifyDetections(run.data);
  if (resume) apps::CheckSameDataset(settings.dataset, identity, settings.data, ConfigPath(settings.out));
  settings.dataset = identity;
  RecordDataset(settings, run.data, resume);
  if (settings.learning_rate <= 0) settings.learning_rate = DefaultLearningRate(settings.model);
  run.anchors = DefaultBoxes(settings);
  run.pipeline = OpenPipeline(settings, run, 0, worker, workers);
  if (!resume) settings.batches_per_epoch = run.pipeline->batches_per_epoch();
  settings.total_steps = TotalSteps(settings);  // a resumed run may be made longer
  if (worker == 0) WriteConfig(settings);
  return run;
}

std::unique_ptr<models::DetectionPipeline> OpenPipeline(const TrainSettings& settings, const PreparedRun& run,
                                                        int64_t start_step, int shard, int shards) {
  return std::make_unique<models::DetectionPipeline>(
      run.data, settings.data, PipelineOptionsFor(settings, run.anchors, start_step, shard, shards));
}

// --map is a JSON object {variable here: tensor there}.
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

FeedList BatchFeeds(const DetectorGraph& g, const models::DetectionBatch& batch) {
  return {{g.net.images, batch.images},
          {g.loss.box_targets, batch.box_targets},
          {g.loss.class_targets, batch.class_targets}};
}

std::vector<TensorName> LossFetches(const DetectorGraph& g) {
  return {g.loss.loss, g.loss.box_loss, g.loss.class_loss};
}

apps::Progress::Metrics LossMetrics(const std::vector<Tensor>& fetched) {
  return {{"loss", fetched[0].scalar<float>()},
          {"box", fetched[1].scalar<float>()},
          {"class", fetched[2].scalar<float>()}};
}

void PrintPlan(const TrainSettings& s, const DetectorGraph& g) {
  std::string width = s.model != kSsdMobileNet ? "" : "width " + models::FormatNumber(s.width) + ", ";
  std::cout << "training " << s.model << " " << s.size << "x" << s.size << " (" << width
            << s.class_names.size() << " classes, " << g.net.anchors.shape().dim(0) << " default boxes) on "
            << s.train_images << " images with " << s.train_objects << " objects (" << s.batches_per_epoch
            << " batches of " << s.batch << " per epoch) for " << s.total_steps << " steps\n";
}

}  // namespace dflow::detect_app
