// RUN/config.json of a detector; see run_config.h.
#include "apps/detect/run_config.h"

#include "graph/status.h"

namespace dflow::detect_app {
namespace {

// One list of fields serves both directions (apps/common/run_files.h); the
// incremental-learning fields came later, and older runs lack them.
constexpr auto kForEachField = [](auto& json, auto& s, auto visit) {
  visit(json, "data", s.data);
  visit(json, "out", s.out);
  visit(json, "model", s.model);
  visit(json, "size", s.size);
  visit(json, "width", s.width);
  visit(json, "min_scale", s.min_scale);
  visit(json, "max_scale", s.max_scale);
  visit(json, "steps", s.steps);
  visit(json, "epochs", s.epochs);
  visit(json, "batch", s.batch);
  visit(json, "learning_rate", s.learning_rate);
  visit(json, "warmup_steps", s.warmup_steps);
  visit(json, "augment", s.augment);
  visit(json, "freeze", s.freeze);
  visit(json, "init_from", s.init_from);
  visit(json, "init_map", s.init_map);
  visit(json, "threads", s.threads);
  visit(json, "decode_threads", s.decode_threads);
  visit(json, "prefetch", s.prefetch);
  visit(json, "checkpoint_every", s.checkpoint_every);
  visit(json, "keep", s.keep);
  visit(json, "seed", s.seed);
  visit(json, "teacher", s.teacher, apps::kAddedLater);
  visit(json, "teacher_classes", s.teacher_classes, apps::kAddedLater);
  visit(json, "distill", s.distill, apps::kAddedLater);
  visit(json, "distill_class_weight", s.distill_class_weight, apps::kAddedLater);
  visit(json, "distill_box_weight", s.distill_box_weight, apps::kAddedLater);
  visit(json, "exemplars", s.exemplars, apps::kAddedLater);
  visit(json, "exemplar_choice", s.exemplar_choice, apps::kAddedLater);
  visit(json, "session", s.session, apps::kAddedLater);
  visit(json, "session_start", s.session_start, apps::kAddedLater);
  visit(json, "prune", s.prune, apps::kAddedLater);
  visit(json, "sparsity", s.sparsity, apps::kAddedLater);
  visit(json, "pruned_from", s.pruned_from, apps::kAddedLater);
  visit(json, "channels", s.channels, apps::kAddedLater);
  visit(json, "distill_from", s.distill_from, apps::kAddedLater);
  visit(json, "distillation", s.distillation, apps::kAddedLater);
  visit(json, "imitation_weight", s.imitation_weight, apps::kAddedLater);
  visit(json, "imitation_maps", s.imitation_maps, apps::kAddedLater);
  visit(json, "imitation_schedule", s.imitation_schedule, apps::kAddedLater);
  visit(json, "imitation_loss", s.imitation_loss, apps::kAddedLater);
  visit(json, "distill_temperature", s.distill_temperature, apps::kAddedLater);
  visit(json, "distill_anchors", s.distill_anchors, apps::kAddedLater);
  visit(json, "distill_box", s.distill_box, apps::kAddedLater);
  visit(json, "class_names", s.class_names);
  visit(json, "category_ids", s.category_ids);
  visit(json, "total_steps", s.total_steps);
  visit(json, "batches_per_epoch", s.batches_per_epoch);
  visit(json, "train_images", s.train_images);
  visit(json, "train_objects", s.train_objects);
  visit(json, "dataset", s.dataset, apps::kAddedLater);  // unrecorded in older runs
};

}  // namespace

int64_t HeadMapCount(const std::string& model) { return IsRetinaNet(model) ? 5 : 6; }

bool IsRetinaNet(const std::string& model) {
  return model == kRetinaNetResNet18 || model == kRetinaNetResNet50;
}

bool IsSsd(const std::string& model) { return model == kSsdMobileNet || model == kSsdSqueezeNet; }

double DefaultLearningRate(const std::string& model) { return IsRetinaNet(model) ? 1e-4 : 1e-2; }

double DefaultImitationWeight(const std::string& imitation_loss) {
  return imitation_loss == "pearson" ? 1.0 : 0.01;
}

int ResNetDepth(const std::string& model) { return model == kRetinaNetResNet50 ? 50 : 18; }

void CheckModel(const TrainSettings& s, const std::string& source) {
  DFLOW_REQUIRE(IsSsd(s.model) || IsRetinaNet(s.model), source, ": unknown model \"", s.model,
                "\" (this dflow-detect knows ", kSsdMobileNet, ", ", kSsdSqueezeNet, ", ",
                kRetinaNetResNet18, " and ", kRetinaNetResNet50, ")");
  // Thinning is MobileNet's; SqueezeNet's channels are the paper's.
  DFLOW_REQUIRE(s.model != kSsdSqueezeNet || s.width == 1.0, source,
                ": the width multiplier is MobileNet's; SqueezeNet takes 1, got ", s.width);
}

nlohmann::json ToJson(const TrainSettings& settings) {
  return apps::FieldsToJson(settings, kForEachField);
}

TrainSettings TrainSettingsFromJson(const nlohmann::json& json, const std::string& source) {
  TrainSettings s = apps::FieldsFromJson<TrainSettings>(json, source, kForEachField);
  CheckModel(s, source);
  DFLOW_REQUIRE(s.augment == "ssd" || s.augment == "light" || s.augment == "none", source,
                ": \"augment\" must be ssd, light or none, got \"", s.augment, "\"");
  DFLOW_REQUIRE(s.distill == "output" || s.distill == "none", source,
                ": \"distill\" must be output or none, got \"", s.distill, "\"");
  DFLOW_REQUIRE(s.exemplar_choice == "random" || s.exemplar_choice == "herding", source,
                ": \"exemplar_choice\" must be random or herding, got \"", s.exemplar_choice, "\"");
  DFLOW_REQUIRE(s.exemplars >= 0 && s.exemplars <= 1, source,
                ": \"exemplars\" is a share of each class's images, within [0, 1], got ", s.exemplars);
  DFLOW_REQUIRE(s.teacher.empty() || (s.teacher_classes >= 1 &&
                                      s.teacher_classes < static_cast<int64_t>(s.class_names.size())),
                source, ": a teacher of ", s.teacher_classes, " classes cannot teach ",
                s.class_names.size());
  DFLOW_REQUIRE(s.prune.empty() || s.prune == "l1-unstructured" || s.prune == "l1-global" || s.prune == "channels",
                source, ": \"prune\" must be l1-unstructured, l1-global or channels, got \"", s.prune, "\"");
  DFLOW_REQUIRE(s.distillation == "output" || s.distillation == "feature" || s.distillation == "both", source,
                ": \"distillation\" must be output, feature or both, got \"", s.distillation, "\"");
  DFLOW_REQUIRE(s.imitation_loss == "fine-grained" || s.imitation_loss == "pearson", source,
                ": \"imitation_loss\" must be fine-grained or pearson, got \"", s.imitation_loss, "\"");
  DFLOW_REQUIRE(s.distill_temperature > 0, source, ": \"distill_temperature\" must be above 0, got ",
                s.distill_temperature);
  DFLOW_REQUIRE(s.distill_anchors == "foreground" || s.distill_anchors == "all", source,
                ": \"distill_anchors\" must be foreground or all, got \"", s.distill_anchors, "\"");
  DFLOW_REQUIRE(s.distill_box == "mimic" || s.distill_box == "bounded", source,
                ": \"distill_box\" must be mimic or bounded, got \"", s.distill_box, "\"");
  DFLOW_REQUIRE(s.sparsity >= 0 && s.sparsity <= 1, source, ": \"sparsity\" must be within [0, 1], got ",
                s.sparsity);
  DFLOW_REQUIRE(s.class_names.size() == s.category_ids.size(), source, ": ",
                s.class_names.size(), " class_names but ", s.category_ids.size(), " category_ids");
  return s;
}

void WriteConfig(const TrainSettings& settings) { apps::WriteConfigJson(settings.out, ToJson(settings)); }

TrainSettings ReadConfig(const std::string& run_dir) {
  std::string path = ConfigPath(run_dir);
  return TrainSettingsFromJson(apps::ReadJsonFile(path), path);
}

}  // namespace dflow::detect_app
