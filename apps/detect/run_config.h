// A detector training run's settings, kept as RUN/config.json so that the
// run can be resumed, evaluated and used for prediction from its directory
// alone (the classes and their names included).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/common/data_parallel_settings.h"
#include "apps/common/run_files.h"

namespace dflow::detect_app {

using apps::ConfigPath;

inline constexpr const char* kSsdMobileNet = "ssd-mobilenet";
inline constexpr const char* kSsdSqueezeNet = "ssd-squeezenet";
inline constexpr const char* kRetinaNetResNet18 = "retinanet-resnet18";
inline constexpr const char* kRetinaNetResNet50 = "retinanet-resnet50";

bool IsRetinaNet(const std::string& model);
bool IsSsd(const std::string& model);
// The number of feature maps a model's heads read: SSD's six, RetinaNet's
// five (P3-P7).
int64_t HeadMapCount(const std::string& model);
// Adam's rate that trained each model best on generated scenes
// (bench/RESULTS.md): 1e-2 for SSD (batch-norm throughout), 1e-4 for
// RetinaNet (its heads have no normalisation: at 1e-3 the subnets' ReLUs
// died at the end of the warm-up and every anchor got the same scores).
double DefaultLearningRate(const std::string& model);
// Wang et al.'s lambda for the fine-grained form; for the Pearson form,
// whose terms are near 1 per map at the start, 1.
double DefaultImitationWeight(const std::string& imitation_loss);
// 18 or 50 for a RetinaNet model.
int ResNetDepth(const std::string& model);

struct TrainSettings {
  std::string data;  // dataset directory (annotations.json), absolute once recorded
  std::string out;   // run directory
  std::string model = kSsdMobileNet;
  int64_t size = 300;            // square network input, pixels
  double width = 1.0;            // MobileNet's width multiplier
  double min_scale = 0.2;        // SSD's s_min: the smallest default boxes, of the input size
  double max_scale = 0.9;        // SSD's s_max
  int64_t steps = 0;             // total steps; 0: from epochs
  double epochs = 0;
  int64_t batch = 8;
  // Adam; linear warm-up, then cosine decay to 5%. 0: the model's default
  // (DefaultLearningRate), recorded when the run starts.
  double learning_rate = 0;
  int64_t warmup_steps = -1;     // -1: 5% of the run, at most 300
  // ssd: SSD's photometric distortion, expand, IoU crop and flip; light:
  // photometric and flip only (the objects keep their size: for short runs
  // on plentiful data); none: resize only.
  std::string augment = "ssd";
  std::string freeze;            // "backbone": its variables are not trained
  std::string init_from;         // a checkpoint whose backbone starts the run
  std::string init_map;          // JSON {our variable name: name in init_from}
  int threads = 2;               // compute threads
  int decode_threads = 1;        // input pipeline threads (decode, augment, match)
  int prefetch = 3;              // batches prefetched
  int64_t checkpoint_every = 200;  // steps
  int keep = 3;                  // checkpoints kept
  uint64_t seed = 1;
  // Where the graph runs: empty for the CPU. Not recorded: a run may be
  // resumed on another device.
  std::string device;
  apps::DataParallelSettings parallel;  // not recorded (apps/common/workers.h)
  // Incremental learning (apps/detect/incremental.h). add-class: the old
  // model's checkpoint the run started from (its classes are the first
  // teacher_classes), and how it teaches the new model: "output"
  // distillation (a frozen copy in the graph) or "none" (fine-tuning).
  std::string teacher;
  int64_t teacher_classes = 0;
  std::string distill = "output";
  double distill_class_weight = 1.0, distill_box_weight = 1.0;
  // The share of each class's images kept in RUN/memory as exemplars when
  // a session ends or a class is added, chosen at "random" (seeded) or by
  // "herding" on the backbone's features (iCaRL).
  double exemplars = 0.05;
  std::string exemplar_choice = "random";
  // --session runs: the session's number (1, 2, ...) and the global step it
  // started at (its learning-rate schedule starts there). 0: not a session run.
  int64_t session = 0;
  int64_t session_start = 0;
  // Pruning (apps/detect/prune.h): the run started from `pruned_from`
  // pruned by `prune` at `sparsity`: "l1-unstructured" or "l1-global" zero
  // single weights and keep them zero through training (their masks are
  // variables of the run); "channels" removes channels, and `channels`
  // holds the thinner layers' channel counts.
  std::string prune;
  double sparsity = 0;
  std::string pruned_from;
  std::map<std::string, int64_t> channels;
  // Knowledge distillation (apps/detect/distill.h): the teacher's
  // checkpoint, a trained run of the same classes and default boxes, and
  // what the student learns from it: its "output"s, its "feature" maps near
  // the objects (Wang et al. 2019), or "both"; imitation_weight weighs the
  // feature term, distill_class_weight and distill_box_weight the outputs'.
  // The student imitates the first imitation_maps of the maps the heads read
  // (the finest; 0: all of them), with imitation_weight held "constant" or
  // decaying to 0 at the last step along a "cosine". imitation_loss is
  // Wang et al.'s "fine-grained" squared difference near the objects or
  // Cao et al.'s "pearson" form (models/detection/feature_imitation.h);
  // a negative imitation_weight stands for the form's own
  // (DefaultImitationWeight).
  std::string distill_from;
  std::string distillation = "both";
  double imitation_weight = -1;
  std::string imitation_loss = "fine-grained";
  int64_t imitation_maps = 0;
  std::string imitation_schedule = "constant";
  // The output term's soft targets: their temperature, and whether they
  // count on the anchors the teacher sees objects at ("foreground") or on
  // "all" of them.
  double distill_temperature = 1.0;
  std::string distill_anchors = "foreground";
  // The output term's boxes: the teacher's as the target ("mimic", weighted
  // by its confidence) or as an upper bound on the student's error to the
  // ground truth ("bounded", Chen et al. 2017).
  std::string distill_box = "mimic";
  // Recorded when the run starts: the dataset's classes, in label order
  // (label k + 1 is class_names[k], the dataset's category_ids[k]).
  std::vector<std::string> class_names;
  std::vector<int64_t> category_ids;
  int64_t total_steps = 0;
  int64_t batches_per_epoch = 0;
  int64_t train_images = 0, train_objects = 0;
  apps::DatasetIdentity dataset;  // checked on --resume (apps/common/run_files.h)
};

nlohmann::json ToJson(const TrainSettings& settings);
// kInvalidArgument naming `source` and the field for a missing or mistyped
// value, an unknown model, or class lists of different lengths.
TrainSettings TrainSettingsFromJson(const nlohmann::json& json, const std::string& source);
// Refuses an unknown model, and a width multiplier other than 1 for
// ssd-squeezenet; `source` names where the settings came from.
void CheckModel(const TrainSettings& s, const std::string& source);

void WriteConfig(const TrainSettings& settings);
TrainSettings ReadConfig(const std::string& run_dir);

}  // namespace dflow::detect_app
