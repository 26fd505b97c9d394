// The detector a run trains and serves: the graph of its model (SSD on
// MobileNetV1, models/detection/ssd.h, or RetinaNet on ResNet-18/50,
// models/detection/retinanet.h) built from the run's settings, for training
// (loss, Adam with warm-up and cosine decay, batch-norm updates) or for
// inference (moving batch-norm statistics, decoding and NMS), and a trained
// one restored from a checkpoint with its run's config.json.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "apps/detect/run_config.h"
#include "graph/scope.h"
#include "graph/session.h"
#include "models/compress/pruning.h"
#include "models/data/detection_dataset.h"
#include "models/detection/matching.h"
#include "models/detection/postprocess.h"
#include "models/model_parts.h"

namespace dflow::detect_app {

// What the app uses of a network, whichever model it is.
struct DetectorNetwork {
  Output images;        // float32 [N, S, S, 3] in [0, 1], fed
  Output box_deltas;    // float32 [N, A, 4]
  Output class_logits;  // float32 [N, A, C]
  Tensor anchors;       // float32 [A, 4], normalised (y1, x1, y2, x2)
  std::vector<Output> variables, backbone_variables, batch_norm_updates;
  // float32 [N, C]: the backbone's last map averaged over its cells and
  // scaled to unit length (iCaRL's feature vector, for exemplar herding).
  Output image_features;
  std::vector<Output> feature_maps;  // the maps the heads read: SSD's six, RetinaNet's P3-P7
};

struct DetectorLoss {
  Output box_targets, class_targets;  // fed: the matching's targets
  Output box_loss, class_loss;
  // add-class with distillation: the terms that keep the old classes
  // (models/detection/incremental.h); knowledge distillation of outputs:
  // the student's against the teacher's. Invalid otherwise.
  Output distill_class_loss, distill_box_loss;
  // Knowledge distillation of features (models/detection/feature_imitation.h):
  // the fed imitation mask (float32 [N, A]), the term, and the adapters
  // (trained with the student). Invalid and empty otherwise.
  Output imitation_mask, imitation_loss;
  std::vector<Output> imitation_adapters;
  Output loss;  // the weighted sum of the terms
};

struct DetectorGraph {
  Scope scope = Scope::NewRootScope();
  DetectorNetwork net;
  DetectorLoss loss;                        // training graphs
  models::detection::Detections detections;  // inference graphs
  Output global_step, learning_rate;            // training graphs
  // One optimizer step and the batch-norm updates; with fed gradients the
  // optimizer step alone, reading `gradient_feeds` (each worker runs
  // net.batch_norm_updates with its own `gradients`).
  Node* train = nullptr;
  std::vector<Output> gradients, gradient_feeds;  // fed gradients: one per `trained` variable
  Node* init = nullptr;                         // every variable's initialiser
  // Unstructured pruning: sets every pruned weight to itself times its mask
  // (a "<weight>/prune_mask" variable). Run after each optimizer step, in a
  // Run of its own so that it reads the updated weights. Null otherwise.
  Node* apply_masks = nullptr;
  std::vector<Output> trained;                  // the variables the optimizer updates
};

// An add-class run's teacher: the run's model with its first
// teacher_classes classes.
TrainSettings TeacherSettings(const TrainSettings& settings);

// The name scope of the teacher inside an add-class training graph: its
// variables are "teacher/" + the old run's names.
inline constexpr const char* kTeacherScope = "teacher";

// The names of a graph's variables, in node order.
std::vector<std::string> VariableNames(const Graph& graph);

// The weights unstructured pruning prunes: every variable of the network
// with two or more dimensions (convolution filters, dense kernels).
std::vector<Output> PrunableWeights(const DetectorNetwork& net);

// The suffix of a pruned weight's mask variable.
inline constexpr const char* kPruneMaskSuffix = "/prune_mask";

// The layers whose channels the model can lose, its variables by their
// graph names (models/compress/pruning.h): SSD's SsdChannelGroups (every
// layer of MobileNet or SqueezeNet and the extras), RetinaNet's
// RetinaNetChannelGroups (the ResNet's inner convolutions and the subnets).
std::vector<models::ChannelGroup> ChannelGroups(const TrainSettings& settings);

// The model's default boxes (anchors), without building its graph.
Tensor DefaultBoxes(const TrainSettings& settings);

// The model's matching of default boxes to one image's objects: SSD's, or
// RetinaNet's (0.5 / 0.4 with low-quality matches, as torchvision's).
models::detection::MatchResult MatchObjects(const TrainSettings& settings,
                                            std::span<const float> anchors,
                                            const models::detection::GroundTruth& truth);

// What a training graph's `train` does.
enum class TrainOp {
  kMinimize,      // one process: computes the gradients and applies them
  kFedGradients,  // ring workers: applies the gradients fed to `gradient_feeds` (their mean)
  kNone,          // parameter servers: no optimizer, no `init` (dist::PsWorker adds them)
};

// The training graph; with --freeze backbone the backbone's variables are
// left out of the optimizer's list (no gradients, no slots). An add-class
// run that distills also holds its teacher: the old network on the same
// images, under kTeacherScope, never trained (batch-norm on the batch's
// statistics, as the student's, without moving-average updates).
// `devices` place the network's parts (model parallelism, --split); the
// loss, the optimizer's step counters and whatever else requests nothing go
// where the placer's cost model puts them.
std::unique_ptr<DetectorGraph> BuildTrainingGraph(const TrainSettings& settings,
                                                  TrainOp train_op = TrainOp::kMinimize,
                                                  const models::ModelPartDevices& devices = {});

struct InferenceOptions {
  float score_threshold = 0.01f;  // eval keeps low scores (AP integrates over them)
  int64_t max_detections = 100;
};
std::unique_ptr<DetectorGraph> BuildInferenceGraph(const TrainSettings& settings,
                                                   const InferenceOptions& options);

struct TrainedDetector {
  TrainSettings config;
  std::unique_ptr<DetectorGraph> graph;  // built from a checkpoint's run; null for a graph file
  std::unique_ptr<Session> session;
  std::string checkpoint;  // the file restored, or the graph file loaded
  std::string device;      // the device it runs on; empty: the host CPU
  // The post-processing it was built with: a checkpoint's from the command,
  // a graph file's as export wrote them (its metadata; a file that does not
  // say reads as a threshold of 0, unknown).
  InferenceOptions inference;
  // What Detect feeds and fetches: the images (float32 [N, S, S, 3]) and the
  // decoded detections (boxes, scores, classes, valid counts).
  std::string input;
  std::vector<std::string> outputs;
  bool int8 = false;  // the session runs the network quantized to int8
};

// The graph-file metadata key under which `dflow-detect export` keeps what
// a detector graph needs besides its nodes: the run's config (classes,
// network, size), the input and the outputs.
inline constexpr const char* kGraphMetadataKey = "dflow-detect";
void SetDetectorMetadata(Graph& graph, const TrainedDetector& detector);

// `checkpoint`: a .safetensors file, a checkpoint directory or a run
// directory; its run's config.json says which network and classes it holds.
// kNotFound names a missing checkpoint or config.json; a checkpoint of
// another network or class count is kInvalidArgument saying so.
std::unique_ptr<TrainedDetector> LoadTrainedDetector(const std::string& checkpoint, int threads,
                                                     const std::string& device,
                                                     const InferenceOptions& options);

// A frozen detector graph file written by `dflow-detect export` (float or
// int8; `dflow quantize` keeps its metadata): kInvalidArgument names a
// graph file without the detector's metadata.
std::unique_ptr<TrainedDetector> LoadDetectorGraph(const std::string& path, int threads, const std::string& device);

// The detector a command names (`--checkpoint` or `--graph`, exactly one):
// a checkpoint's inference graph built with `options`, or a graph file as
// exported (its own options).
std::unique_ptr<TrainedDetector> LoadDetector(const std::string& checkpoint, const std::string& graph, int threads,
                                              const std::string& device, const InferenceOptions& options);

// For a graph file that drops scores below its export's --score, when the
// command asks for lower ones (`wanted`; evaluation's is the default
// InferenceOptions' threshold): a line saying that lower scores are neither
// reported nor counted in mAP. Empty otherwise.
std::string ScoreThresholdNote(const TrainedDetector& detector,
                               double wanted = InferenceOptions{}.score_threshold);

// Runs the detector on float32 [B, S, S, 3] images (each a source image of
// (height, width) pixels resized to S x S) and returns their detections in
// the source images' pixels; class k + 1 is reported as category_ids[k].
std::vector<models::Detection> Detect(TrainedDetector& detector, const Tensor& images,
                                      const std::vector<int64_t>& image_ids,
                                      const std::vector<std::array<int64_t, 2>>& sizes,
                                      const std::vector<int64_t>& category_ids);
// Detect's two halves, timed apart by `bench`: the graph's run (network,
// box decoding, NMS) and its outputs turned into detections.
std::vector<Tensor> RunDetector(TrainedDetector& detector, const Tensor& images);
std::vector<models::Detection> ToDetections(const std::vector<Tensor>& out, const std::vector<int64_t>& image_ids,
                                            const std::vector<std::array<int64_t, 2>>& sizes,
                                            const std::vector<int64_t>& category_ids);

}  // namespace dflow::detect_app
