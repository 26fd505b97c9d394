// The detector's graphs; see detector.h.
#include "apps/detect/detector.h"

#include <algorithm>
#include <set>

#include "apps/detect/distill.h"
#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "models/checkpoint.h"
#include "models/detection/feature_imitation.h"
#include "models/detection/incremental.h"
#include "models/detection/retinanet.h"
#include "models/detection/ssd.h"
#include "ops/ops.h"

namespace dflow::detect_app {
namespace {

namespace detection = models::detection;

std::vector<Output> TrainedVariables(const TrainSettings& s, const DetectorNetwork& net) {
  if (s.freeze.empty()) return net.variables;
  DFLOW_REQUIRE(s.freeze == "backbone", "train: --freeze takes \"backbone\", got \"", s.freeze, "\"");
  std::set<const Node*> backbone;
  for (const Output& v : net.backbone_variables) backbone.insert(v.node());
  std::vector<Output> trained;
  for (const Output& v : net.variables)
    if (!backbone.count(v.node())) trained.push_back(v);
  return trained;
}

// The step within the run's schedules: a session run (train --session)
// starts its own at its first step.
Output ScheduleStep(const Scope& scope, const TrainSettings& s, const Output& global_step) {
  return s.session_start == 0 ? global_step : ops::Sub(scope, global_step, s.session_start);
}

// Linear warm-up, then cosine decay to 5% at the last step.
Output LearningRate(const Scope& scope, const TrainSettings& s, const Output& global_step) {
  const int64_t steps = s.total_steps - s.session_start;
  int64_t warmup = s.warmup_steps >= 0 ? s.warmup_steps : std::min<int64_t>(300, steps / 20);
  Output step = ScheduleStep(scope, s, global_step);
  Output lr = autodiff::CosineDecay(scope, s.learning_rate, step,
                                    {.decay_steps = std::max<int64_t>(1, steps), .alpha = 0.05});
  return warmup > 0 ? autodiff::LinearWarmup(scope, lr, step, warmup) : lr;
}

detection::SsdOptions SsdOptionsFor(const TrainSettings& s, bool training,
                                    const models::ModelPartDevices& devices = {}) {
  DFLOW_REQUIRE(!s.class_names.empty(), "the run has no classes");
  // --width reaches SqueezeNet too, which refuses any value but 1.
  detection::SsdOptions options{.backbone = s.model == kSsdSqueezeNet
                                                ? detection::SsdBackbone::kSqueezeNet
                                                : detection::SsdBackbone::kMobileNetV1,
                                .num_classes = static_cast<int64_t>(s.class_names.size()),
                                .image_size = s.size,
                                .width_multiplier = s.width,
                                .training = training};
  options.channels = s.channels;
  options.anchors.min_scale = static_cast<float>(s.min_scale);
  options.anchors.max_scale = static_cast<float>(s.max_scale);
  options.devices = devices;
  return options;
}

detection::RetinaNetOptions RetinaNetOptionsFor(const TrainSettings& s, bool training,
                                                const models::ModelPartDevices& devices = {}) {
  DFLOW_REQUIRE(!s.class_names.empty(), "the run has no classes");
  return {.num_classes = static_cast<int64_t>(s.class_names.size()),
          .image_size = s.size,
          .depth = ResNetDepth(s.model),
          .training = training,
          .channels = s.channels,
          .devices = devices};
}

// The backbone's map [N, h, w, C] as unit-length [N, C] vectors.
Output ImageFeatures(const Scope& scope, const Output& map) {
  Scope s = scope.NewSubScope("image_features");
  Output mean = ops::Mean(s, map, ops::Range(s, 1, 3, 1));
  Output norm = ops::Sqrt(s, ops::Add(s, ops::Sum(s, ops::Square(s, mean), -1, {.keep_dims = true}), 1e-12f));
  return ops::Div(s, mean, norm);
}

template <typename Network>
DetectorNetwork NetworkView(const Scope& scope, const Network& net) {
  DetectorNetwork view{net.images,    net.box_deltas,         net.class_logits,       net.anchors,
                       net.variables, net.backbone_variables, net.batch_norm_updates, ImageFeatures(scope, net.backbone_features),
                       {}};
  if constexpr (requires { net.feature_maps; }) view.feature_maps = net.feature_maps;
  return view;
}

template <typename Loss>
DetectorLoss LossView(const Loss& loss) {
  return {.box_targets = loss.box_targets,
          .class_targets = loss.class_targets,
          .box_loss = loss.box_loss,
          .class_loss = loss.class_loss,
          .distill_class_loss = {},
          .distill_box_loss = {},
          .imitation_mask = {},
          .imitation_loss = {},
          .imitation_adapters = {},
          .loss = loss.loss};
}

// The model's network on `images` (a placeholder made here when invalid).
DetectorNetwork BuildNetwork(const Scope& scope, const TrainSettings& s, bool training, const Output& images,
                             const models::ModelPartDevices& devices) {
  if (IsRetinaNet(s.model)) {
    detection::RetinaNetOptions options = RetinaNetOptionsFor(s, training, devices);
    return NetworkView(scope, images.valid() ? detection::BuildRetinaNetNetwork(scope, options, images)
                                      : detection::BuildRetinaNetNetwork(scope, options));
  }
  detection::SsdOptions options = SsdOptionsFor(s, training, devices);
  return NetworkView(scope, images.valid() ? detection::BuildSsdNetwork(scope, options, images)
                                    : detection::BuildSsdNetwork(scope, options));
}

// The teacher's outputs distilled into the student's (models/detection/
// incremental.h) over the teacher's `columns` class columns: the two terms
// are recorded in the loss, and returned weighted as the settings say.
std::vector<Input> AddOutputDistillation(DetectorGraph& g, const TrainSettings& s, const DetectorNetwork& teacher,
                                         int64_t columns, bool soft_targets, const Scope& w) {
  const bool retinanet = IsRetinaNet(s.model);
  detection::DistillationLoss distill = detection::BuildDistillationLoss(
      g.scope, {.teacher_logits = teacher.class_logits,
                .teacher_boxes = teacher.box_deltas,
                .student_logits = g.net.class_logits,
                .student_boxes = g.net.box_deltas,
                .old_columns = columns + (retinanet ? 0 : 1),
                .scores = retinanet ? detection::ClassScores::kSigmoid
                                    : detection::ClassScores::kSoftmaxWithBackground,
                .soft_targets = soft_targets,
                .temperature = soft_targets ? s.distill_temperature : 1.0,
                .soft_targets_everywhere = soft_targets && s.distill_anchors == "all"});
  g.loss.distill_class_loss = distill.class_loss;
  g.loss.distill_box_loss = distill.box_loss;
  if (soft_targets && s.distill_box == "bounded") {
    const Scope bounded = g.scope.NewSubScope("distillation");
    g.loss.distill_box_loss = detection::TeacherBoundedRegressionLoss(
        bounded, {.student_boxes = g.net.box_deltas,
                  .teacher_boxes = teacher.box_deltas,
                  .box_targets = g.loss.box_targets,
                  .positive = ops::Cast(bounded, ops::Greater(bounded, g.loss.class_targets, 0), DType::kFloat32)});
  }
  return {ops::Mul(w, distill.class_loss, static_cast<float>(s.distill_class_weight)),
          ops::Mul(w, g.loss.distill_box_loss, static_cast<float>(s.distill_box_weight))};
}

// Incremental learning's loss: the new model's own loss plus the weighted
// distillation of the teacher's class scores and boxes. The teacher
// normalises with the batch's statistics, as the student does while it
// trains, so that the two agree exactly before the first step (its moving
// averages are never updated: its batch_norm_updates are not run). Its
// parts go where the student's do.
void AddDistillation(DetectorGraph& g, const TrainSettings& s, const models::ModelPartDevices& devices) {
  Scope teacher_scope = g.scope.NewSubScope(kTeacherScope);
  DetectorNetwork teacher = BuildNetwork(teacher_scope, TeacherSettings(s), true, g.net.images, devices);
  Scope w = g.scope.NewSubScope("incremental_loss");
  std::vector<Input> terms = AddOutputDistillation(g, s, teacher, s.teacher_classes, false, w);
  terms.insert(terms.begin(), g.loss.loss);
  g.loss.loss = ops::AddN(w.WithOpName("loss"), terms);
}

// The feature imitation term, weighted: the student's first
// `imitation_maps` maps of those the heads read (SSD's six, RetinaNet's
// P3-P7) against the teacher's. The anchors are laid out over all of them
// map by map, cell by cell (6 a cell for SSD, 9 for RetinaNet), so the
// first maps' anchors lead the mask.
Output AddFeatureImitation(DetectorGraph& g, const TrainSettings& s, const DetectorNetwork& teacher, const Scope& w) {
  const std::vector<Output>& maps = g.net.feature_maps;
  const int64_t anchors = g.net.anchors.shape().dim(0);
  int64_t cells = 0;
  for (const Output& map : maps) cells += map.shape().dim(1) * map.shape().dim(2);
  DFLOW_REQUIRE(cells > 0 && anchors % cells == 0, "train --distill feature: ", anchors,
                " anchors do not spread evenly over the ", cells, " cells of the feature maps");
  const auto imitated = static_cast<size_t>(s.imitation_maps);
  DFLOW_REQUIRE(imitated <= maps.size(), "feature imitation of ", imitated, " maps: the heads read ", maps.size());
  const auto end = static_cast<std::ptrdiff_t>(imitated > 0 ? imitated : maps.size());
  const bool pearson = s.imitation_loss == "pearson";
  // Only the fine-grained form reads a mask, fed by the training loop.
  if (!pearson)
    g.loss.imitation_mask = ops::Placeholder(g.scope.WithOpName("imitation_mask"), DType::kFloat32, {-1, anchors});
  detection::FeatureImitation imitation = detection::BuildFeatureImitationLoss(
      g.scope, {.student_maps = {maps.begin(), maps.begin() + end},
                .teacher_maps = {teacher.feature_maps.begin(), teacher.feature_maps.begin() + end},
                .anchor_mask = g.loss.imitation_mask,
                .anchors_per_cell = anchors / cells,
                .form = pearson ? detection::ImitationLoss::kPearson : detection::ImitationLoss::kFineGrained});
  g.loss.imitation_loss = imitation.loss;
  g.loss.imitation_adapters = imitation.adapter_variables;
  if (s.imitation_schedule == "constant")
    return ops::Mul(w, imitation.loss, static_cast<float>(s.imitation_weight));
  // Decaying along a cosine: the teacher guides the start, the labels alone
  // the end.
  const Output step = ScheduleStep(w, s, autodiff::GetOrCreateGlobalStep(g.scope));
  const Output weight = autodiff::CosineDecay(w.NewSubScope("imitation_weight"), s.imitation_weight, step,
                                              {.decay_steps = std::max<int64_t>(1, s.total_steps - s.session_start)});
  return ops::Mul(w, imitation.loss, weight);
}

// Knowledge distillation: the teacher (another trained run of the same
// classes and default boxes) runs on the student's images in inference
// mode, under kTeacherScope, never trained; its outputs and/or feature maps
// teach the student. Its parts go where the student's do.
void AddKnowledgeDistillation(DetectorGraph& g, const TrainSettings& s, const models::ModelPartDevices& devices) {
  const TrainSettings teacher_settings = DistillationTeacherSettings(s);
  DetectorNetwork teacher =
      BuildNetwork(g.scope.NewSubScope(kTeacherScope), teacher_settings, false, g.net.images, devices);
  Scope w = g.scope.NewSubScope("distillation_loss");
  std::vector<Input> terms{g.loss.loss};
  if (s.distillation != "feature") {
    std::vector<Input> outputs =
        AddOutputDistillation(g, s, teacher, static_cast<int64_t>(s.class_names.size()), true, w);
    terms.insert(terms.end(), outputs.begin(), outputs.end());
  }
  if (s.distillation != "output") terms.push_back(AddFeatureImitation(g, s, teacher, w));
  g.loss.loss = ops::AddN(w.WithOpName("loss"), terms);
}

// The network and its loss (training) or post-processing (inference).
void BuildModel(DetectorGraph& g, const TrainSettings& s, bool training, const InferenceOptions& inference,
                const models::ModelPartDevices& devices = {}) {
  if (IsRetinaNet(s.model)) {
    detection::RetinaNetNetwork net =
        detection::BuildRetinaNetNetwork(g.scope, RetinaNetOptionsFor(s, training, devices));
    g.net = NetworkView(g.scope, net);
    if (training)
      g.loss = LossView(detection::BuildRetinaNetLoss(g.scope, net));
    else
      g.detections = detection::BuildRetinaNetPostprocess(
          g.scope, net,
          {.max_per_class = inference.max_detections, .max_detections = inference.max_detections,
           .score_threshold = inference.score_threshold});
    return;
  }
  detection::SsdNetwork net = detection::BuildSsdNetwork(g.scope, SsdOptionsFor(s, training, devices));
  g.net = NetworkView(g.scope, net);
  if (training)
    g.loss = LossView(detection::BuildSsdLoss(g.scope, net));
  else
    g.detections = detection::BuildSsdPostprocess(
        g.scope, net,
        {.max_per_class = inference.max_detections, .max_detections = inference.max_detections,
         .score_threshold = inference.score_threshold});
}

// Unstructured pruning's masks, one per prunable weight, and the op that
// applies them.
Node* AddPruneMasks(const Scope& scope, const DetectorNetwork& net) {
  std::vector<Output> applied;
  for (const Output& w : PrunableWeights(net)) {
    Tensor ones(DType::kFloat32, w.shape());
    std::fill_n(ones.data<float>(), ones.NumElements(), 1.0f);
    const std::string name = w.node()->name() + kPruneMaskSuffix;
    Output mask = ops::Variable(scope.WithOpName(name), ones);
    applied.push_back(ops::Assign(scope.WithOpName(name + "/apply"), w, ops::Mul(scope, w, mask)));
  }
  return ops::NoOp(scope.WithControlDependencies(applied).WithOpName("apply_prune_masks"));
}

}  // namespace

std::vector<std::string> VariableNames(const Graph& graph) {
  std::vector<std::string> names;
  for (const Node* node : graph.nodes())
    if (node->op() == "VariableV2") names.push_back(node->name());
  return names;
}

std::vector<Output> PrunableWeights(const DetectorNetwork& net) {
  std::vector<Output> weights;
  for (const Output& v : net.variables)
    if (v.shape().rank() >= 2) weights.push_back(v);
  return weights;
}

std::vector<models::ChannelGroup> ChannelGroups(const TrainSettings& s) {
  if (IsRetinaNet(s.model)) return detection::RetinaNetChannelGroups(RetinaNetOptionsFor(s, false));
  return detection::SsdChannelGroups(SsdOptionsFor(s, false));
}

TrainSettings TeacherSettings(const TrainSettings& s) {
  DFLOW_REQUIRE(!s.teacher.empty() && s.teacher_classes >= 1 &&
                    s.teacher_classes < static_cast<int64_t>(s.class_names.size()),
                "the run has no teacher of fewer classes (", ConfigPath(s.out), ")");
  TrainSettings teacher = s;
  teacher.class_names.resize(static_cast<size_t>(s.teacher_classes));
  teacher.category_ids.resize(static_cast<size_t>(s.teacher_classes));
  teacher.teacher.clear();
  teacher.teacher_classes = 0;
  return teacher;
}

Tensor DefaultBoxes(const TrainSettings& s) {
  if (IsRetinaNet(s.model)) return detection::RetinaNetDefaultAnchors(RetinaNetOptionsFor(s, true));
  return detection::SsdDefaultBoxes(SsdOptionsFor(s, true));
}

detection::MatchResult MatchObjects(const TrainSettings& s, std::span<const float> anchors,
                                    const detection::GroundTruth& truth) {
  if (IsRetinaNet(s.model))
    return detection::MatchRetinaNet(anchors, truth, {.allow_low_quality_matches = true});
  return detection::MatchSsd(anchors, truth);
}

std::unique_ptr<DetectorGraph> BuildTrainingGraph(const TrainSettings& s, TrainOp train_op,
                                                  const models::ModelPartDevices& devices) {
  auto g = std::make_unique<DetectorGraph>();
  Scope& scope = g->scope;
  scope.graph().set_seed(static_cast<int64_t>(s.seed));
  BuildModel(*g, s, true, {}, devices);
  if (!s.teacher.empty() && s.distill == "output") AddDistillation(*g, s, devices);
  if (!s.distill_from.empty()) AddKnowledgeDistillation(*g, s, devices);
  g->trained = TrainedVariables(s, g->net);
  g->trained.insert(g->trained.end(), g->loss.imitation_adapters.begin(), g->loss.imitation_adapters.end());
  g->global_step = autodiff::GetOrCreateGlobalStep(scope);
  g->learning_rate = LearningRate(scope.NewSubScope("learning_rate"), s, g->global_step);
  const bool masked = s.prune == "l1-unstructured" || s.prune == "l1-global";
  if (masked) g->apply_masks = AddPruneMasks(scope, g->net);
  if (train_op == TrainOp::kNone) return g;
  autodiff::AdamOptimizer adam(g->learning_rate);
  if (train_op == TrainOp::kFedGradients) {
    autodiff::FedGradients fed = adam.MinimizeWithFedGradients(scope, g->loss.loss, g->trained);
    g->gradients = fed.gradients;
    g->gradient_feeds = fed.feeds;
    g->train = fed.apply;
  } else {
    std::vector<Output> step(g->net.batch_norm_updates);
    step.emplace_back(adam.Minimize(scope, g->loss.loss, g->trained));
    g->train = ops::NoOp(scope.WithControlDependencies(step).WithOpName("train"));
  }
  g->init = ops::GlobalVariablesInitializer(scope.WithOpName("init"));
  return g;
}

std::unique_ptr<DetectorGraph> BuildInferenceGraph(const TrainSettings& s,
                                                   const InferenceOptions& options) {
  auto g = std::make_unique<DetectorGraph>();
  BuildModel(*g, s, false, options);
  g->init = ops::GlobalVariablesInitializer(g->scope.WithOpName("init"));
  return g;
}

std::unique_ptr<TrainedDetector> LoadTrainedDetector(const std::string& checkpoint, int threads,
                                                     const std::string& device,
                                                     const InferenceOptions& options) {
  auto trained = std::make_unique<TrainedDetector>();
  trained->checkpoint = apps::ResolveCheckpoint(checkpoint);
  std::string run = apps::RunDirOf(trained->checkpoint);
  if (run.empty())
    Fail(Code::kNotFound, trained->checkpoint, " is not inside a dflow-detect run directory (",
         "RUN/checkpoints/ next to RUN/config.json): the run's config.json says which network ",
         "and classes it holds");
  trained->config = ReadConfig(run);
  trained->device = device;
  trained->inference = options;
  trained->graph = BuildInferenceGraph(trained->config, options);
  const detection::Detections& d = trained->graph->detections;
  trained->input = trained->graph->net.images.name();
  trained->outputs = {d.boxes.name(), d.scores.name(), d.classes.name(), d.valid.name()};
  SessionOptions session_options;
  session_options.num_threads = threads;
  if (!device.empty()) session_options.devices = {device};
  trained->session = std::make_unique<Session>(trained->graph->scope, session_options);
  Saver saver(trained->graph->scope);  // the network's variables: weights and batch-norm statistics
  try {
    saver.Restore(*trained->session, trained->checkpoint);
  } catch (const Error& e) {
    if (e.code() == Code::kDataLoss) throw;
    Fail(Code::kInvalidArgument, trained->checkpoint, " does not hold the ", trained->config.model,
         " network of ", run, "/config.json (", trained->config.class_names.size(),
         " classes, size ", trained->config.size, ", width ", trained->config.width, "): ",
         e.message());
  }
  return trained;
}

std::vector<Tensor> RunDetector(TrainedDetector& detector, const Tensor& images) {
  const std::vector<TensorName> fetches(detector.outputs.begin(), detector.outputs.end());
  return detector.session->Run({{detector.input, images}}, fetches);
}

std::vector<models::Detection> Detect(TrainedDetector& detector, const Tensor& images,
                                      const std::vector<int64_t>& image_ids,
                                      const std::vector<std::array<int64_t, 2>>& sizes,
                                      const std::vector<int64_t>& category_ids) {
  return ToDetections(RunDetector(detector, images), image_ids, sizes, category_ids);
}

std::vector<models::Detection> ToDetections(const std::vector<Tensor>& out, const std::vector<int64_t>& image_ids,
                                            const std::vector<std::array<int64_t, 2>>& sizes,
                                            const std::vector<int64_t>& category_ids) {
  const int64_t slots = out[1].shape().dim(1);
  std::vector<models::Detection> detections;
  for (size_t i = 0; i < image_ids.size(); ++i) {
    const double h = static_cast<double>(sizes[i][0]), w = static_cast<double>(sizes[i][1]);
    for (int32_t k = 0; k < out[3].data<int32_t>()[i]; ++k) {
      const int64_t slot = static_cast<int64_t>(i) * slots + k;
      const float* box = out[0].data<float>() + slot * 4;  // normalised y1, x1, y2, x2
      const auto label = static_cast<size_t>(out[2].data<float>()[slot]);
      models::Detection det;
      det.image_id = image_ids[i];
      det.category_id = category_ids.at(label - 1);
      det.bbox = {box[1] * w, box[0] * h, (box[3] - box[1]) * w, (box[2] - box[0]) * h};
      det.score = out[1].data<float>()[slot];
      detections.push_back(det);
    }
  }
  return detections;
}

}  // namespace dflow::detect_app
