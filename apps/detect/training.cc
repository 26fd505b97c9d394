// The training paths' shared parts; see training.h.
#include "apps/detect/training.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "apps/detect/commands.h"
#include "apps/detect/distill.h"
#include "apps/detect/incremental.h"
#include "models/checkpoint.h"
#include "models/data/text_numbers.h"
#include "models/detection/feature_imitation.h"
#include "models/detection/matching.h"

namespace dflow::detect_app {
namespace {

namespace fs = std::filesystem;

// A new run records the dataset's classes (label k + 1 is category k); a
// run whose classes are set (resumed, a session, a class added) checks that
// the data holds only classes it knows.
void RecordClasses(TrainSettings& s, const models::DetectionDataset& data) {
  std::vector<std::string> names;
  std::vector<int64_t> ids;
  for (const models::DetectionCategory& c : data.categories) {
    names.push_back(c.name);
    ids.push_back(c.id);
  }
  if (!s.class_names.empty()) {
    for (const std::string& name : names)
      DFLOW_REQUIRE(std::find(s.class_names.begin(), s.class_names.end(), name) != s.class_names.end(),
                    "train: ", s.data, " has the class \"", name, "\", which the run (",
                    ConfigPath(s.out), ") does not learn");
    return;
  }
  DFLOW_REQUIRE(!names.empty(), "train: ", s.data, " has no categories");
  s.class_names = names;
  s.category_ids = ids;
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
  // A pruned run may take no steps: the pruned model without fine-tuning.
  DFLOW_REQUIRE(s.steps > 0 || s.epochs > 0 || !s.pruned_from.empty(), "train: give --steps or --epochs");
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

// The loss terms a training graph has, named as the progress line shows them.
std::vector<std::pair<const char*, Output>> LossTerms(const DetectorGraph& g) {
  std::vector<std::pair<const char*, Output>> terms{
      {"loss", g.loss.loss}, {"box", g.loss.box_loss}, {"class", g.loss.class_loss}};
  if (g.loss.distill_class_loss.valid()) {
    terms.emplace_back("distill_cls", g.loss.distill_class_loss);
    terms.emplace_back("distill_box", g.loss.distill_box_loss);
  }
  if (g.loss.imitation_loss.valid()) terms.emplace_back("imitation", g.loss.imitation_loss);
  return terms;
}

}  // namespace

std::string CheckpointDir(const TrainSettings& s) { return (fs::path(s.out) / "checkpoints").string(); }

PreparedRun PrepareRun(TrainSettings& settings, bool resume, int worker, int workers,
                       const models::DatasetPart* exemplars) {
  PreparedRun run;
  CheckModel(settings, "train");
  run.latest = CheckRunDir(settings, resume, worker);
  // A new run, or a new session of one, plans its steps over its data.
  const bool new_plan = !resume || settings.batches_per_epoch == 0;
  if (new_plan) {  // resumable from anywhere
    settings.data = apps::AbsolutePath(settings.data);
    if (!settings.init_from.empty()) settings.init_from = apps::AbsolutePath(settings.init_from);
    if (!settings.init_map.empty()) settings.init_map = apps::AbsolutePath(settings.init_map);
    // The teacher's checkpoint file, fixed when the run starts (its run may train on).
    if (!settings.distill_from.empty())
      settings.distill_from = apps::AbsolutePath(apps::ResolveCheckpoint(settings.distill_from));
  }
  run.data = LoadDataset(settings.data);
  apps::DatasetIdentity identity = IdentifyDetections(run.data);
  if (!new_plan) apps::CheckSameDataset(settings.dataset, identity, settings.data, ConfigPath(settings.out));
  settings.dataset = identity;
  run.root = settings.data;
  RecordClasses(settings, run.data);
  AddExemplars(settings, exemplars, run);
  if (new_plan) {
    settings.train_images = static_cast<int64_t>(run.data.images.size());
    settings.train_objects = static_cast<int64_t>(run.data.annotations.size());
  }
  if (settings.learning_rate <= 0) settings.learning_rate = DefaultLearningRate(settings.model);
  if (settings.imitation_weight < 0) settings.imitation_weight = DefaultImitationWeight(settings.imitation_loss);
  run.anchors = DefaultBoxes(settings);
  run.pipeline = OpenPipeline(settings, run, 0, worker, workers);
  if (new_plan) settings.batches_per_epoch = run.pipeline->batches_per_epoch();
  // A resumed run may be made longer; a session's steps follow the last one's.
  settings.total_steps = settings.session_start + TotalSteps(settings);
  if (!settings.distill_from.empty()) DistillationTeacherSettings(settings);  // checked before anything is written
  if (worker == 0) WriteConfig(settings);
  return run;
}

std::unique_ptr<models::DetectionPipeline> OpenPipeline(const TrainSettings& settings, const PreparedRun& run,
                                                        int64_t start_step, int shard, int shards) {
  return std::make_unique<models::DetectionPipeline>(
      run.data, run.root, PipelineOptionsFor(settings, run.anchors, start_step, shard, shards));
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
  FeedList feeds{{g.net.images, batch.images},
                 {g.loss.box_targets, batch.box_targets},
                 {g.loss.class_targets, batch.class_targets}};
  if (g.loss.imitation_mask.valid()) {
    const Tensor& anchors = g.net.anchors;
    feeds.push_back({g.loss.imitation_mask,
                     models::detection::ImitationMask({anchors.data<float>(), static_cast<size_t>(anchors.NumElements())},
                                                      batch.boxes)});
  }
  return feeds;
}

std::vector<TensorName> LossFetches(const DetectorGraph& g) {
  std::vector<TensorName> fetches;
  for (const auto& [name, term] : LossTerms(g)) fetches.emplace_back(term);
  return fetches;
}

apps::Progress::Metrics LossMetrics(const DetectorGraph& g, const std::vector<Tensor>& fetched) {
  apps::Progress::Metrics metrics;
  const auto terms = LossTerms(g);
  for (size_t i = 0; i < terms.size(); ++i) metrics.push_back({terms[i].first, fetched[i].scalar<float>()});
  return metrics;
}

void PrintPlan(const TrainSettings& s, const DetectorGraph& g) {
  std::string width = s.model != kSsdMobileNet ? "" : "width " + models::FormatNumber(s.width) + ", ";
  std::cout << "training " << s.model << " " << s.size << "x" << s.size << " (" << width
            << s.class_names.size() << " classes, " << g.net.anchors.shape().dim(0) << " default boxes) on "
            << s.train_images << " images with " << s.train_objects << " objects (" << s.batches_per_epoch
            << " batches of " << s.batch << " per epoch) for " << s.total_steps << " steps\n";
}

}  // namespace dflow::detect_app
