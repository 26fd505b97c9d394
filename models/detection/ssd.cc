// SSD on MobileNetV1 or SqueezeNet; see ssd.h.
#include "models/detection/ssd.h"

#include "graph/status.h"
#include "models/detection/losses.h"
#include "models/detection/postprocess.h"
#include "models/mobilenet_ssd.h"
#include "models/squeezenet_ssd.h"
#include "ops/ops.h"

namespace dflow::models::detection {
namespace {

std::vector<int64_t> MobileNetMapSizes(int64_t image_size) {
  std::vector<int64_t> sizes;
  int64_t cells = image_size;
  for (int stride = 2; stride <= 512; stride *= 2) {
    cells = (cells + 1) / 2;  // a 3x3 convolution of stride 2, padding 1
    if (stride >= 16) sizes.push_back(cells);
  }
  return sizes;
}

std::vector<SsdLayer> SsdLayers(const SsdOptions& options) {
  const std::vector<int64_t> sizes = options.backbone == SsdBackbone::kSqueezeNet
                                         ? SqueezeNetSsdMapSizes(options.image_size)
                                         : MobileNetMapSizes(options.image_size);
  std::vector<SsdLayer> layers;
  for (int64_t cells : sizes) layers.push_back({cells, {2.0f, 3.0f}});
  return layers;
}

// The maps the graph built must be the ones SsdLayers predicts: the
// default boxes are computed from those.
void CheckFeatureMaps(const std::vector<Output>& features, const std::vector<SsdLayer>& layers) {
  DFLOW_REQUIRE(features.size() == layers.size(), "SSD: ", features.size(),
                " feature maps, expected ", layers.size());
  for (size_t k = 0; k < layers.size(); ++k) {
    const Shape& shape = features[k].shape();
    DFLOW_REQUIRE(shape.rank() == 4 && shape.dim(1) == layers[k].feature_size &&
                      shape.dim(2) == layers[k].feature_size,
                  "SSD: feature map ", k, " is ", shape.ToString(), ", expected ",
                  layers[k].feature_size, "x", layers[k].feature_size, " cells");
  }
}

// [N, A * k] -> [N, A, k]
Output PerAnchor(const Scope& s, const Output& flat, int64_t anchors, int64_t k) {
  return ops::Reshape(s, flat, {int64_t{-1}, anchors, k});
}

// The backbone, its extras and the heads of each SsdBackbone.
MobileNetSsd BuildMobileNetBody(const Scope& s, const Output& images, const SsdOptions& options) {
  return BuildMobileNetSsd(s, images,
                           {.num_classes = options.num_classes + 1,
                            .training = options.training,
                            .width_multiplier = options.width_multiplier,
                            .channels = options.channels,
                            .devices = options.devices});
}

SqueezeNetSsd BuildSqueezeNetBody(const Scope& s, const Output& images, const SsdOptions& options) {
  DFLOW_REQUIRE(options.width_multiplier == 1.0,
                "SSD: the width multiplier is MobileNet's; SqueezeNet takes 1, got ",
                options.width_multiplier);
  return BuildSqueezeNetSsd(
      s, images,
      {.num_classes = options.num_classes + 1,
       .backbone = {.training = options.training},
       .channels = options.channels,
       .devices = options.devices});
}

// Checks the body's maps, then views its outputs per anchor; the first
// `backbone_maps` maps are the backbone's.
template <typename Body>
void AttachBody(const Scope& s, SsdNetwork& net, const Body& body, size_t backbone_maps) {
  // The heads' outputs are laid out map by map, cell by cell, box by box:
  // the anchors' order (anchors.h).
  CheckFeatureMaps(body.features, SsdLayers(net.options));
  net.anchors = SsdDefaultBoxes(net.options);
  const int64_t anchors = net.anchors.shape().dim(0);
  const Scope heads = OnDevice(s, net.options.devices.heads);
  net.box_deltas = PerAnchor(heads.WithOpName("box_deltas"), body.boxes, anchors, 4);
  net.class_logits =
      PerAnchor(heads.WithOpName("class_logits"), body.classes, anchors, net.options.num_classes + 1);
  net.variables = body.variables;
  net.backbone_variables = body.backbone_variables;
  net.batch_norm_updates = body.batch_norm_updates;
  net.backbone_features = body.features[backbone_maps - 1];
  net.feature_maps = body.features;
}

// The options' own checks, before anything is added to the graph.
void CheckSsdOptions(const SsdOptions& options) {
  DFLOW_REQUIRE(options.num_classes >= 1, "SSD: num_classes must be >= 1, got ",
                options.num_classes);
  // 64 px is the smallest input whose sixth MobileNet map (stride 512,
  // rounded up) is reached by every stride-2 layer without collapsing a 1x1
  // map; SqueezeNet's maps are all at least 1x1 there too.
  DFLOW_REQUIRE(options.image_size >= 64, "SSD: image_size must be >= 64, got ",
                options.image_size);
}

}  // namespace

Tensor SsdDefaultBoxes(const SsdOptions& options) {
  return SsdAnchors(SsdLayers(options), options.anchors);
}

SsdNetwork BuildSsdNetwork(const Scope& scope, const SsdOptions& options) {
  CheckSsdOptions(options);
  const int64_t size = options.image_size;
  return BuildSsdNetwork(
      scope, options, ops::Placeholder(scope.WithOpName("images"), DType::kFloat32, {-1, size, size, 3}));
}

SsdNetwork BuildSsdNetwork(const Scope& scope, const SsdOptions& options, const Output& images) {
  CheckSsdOptions(options);
  Scope s = scope.NewSubScope("ssd");
  SsdNetwork net;
  net.options = options;
  net.images = images;
  const Scope backbone = OnDevice(s, options.devices.backbone);
  Output scaled = ops::Sub(backbone, ops::Mul(backbone, net.images, 2.0f), 1.0f);  // [0, 1] -> [-1, 1]
  if (options.backbone == SsdBackbone::kSqueezeNet)
    AttachBody(s, net, BuildSqueezeNetBody(s, scaled, options), 1);  // fire8
  else
    AttachBody(s, net, BuildMobileNetBody(s, scaled, options), 2);  // conv11, conv13
  return net;
}

std::vector<ChannelGroup> SsdChannelGroups(const SsdOptions& options) {
  std::vector<ChannelGroup> groups =
      options.backbone == SsdBackbone::kSqueezeNet
          ? SqueezeNetSsdChannelGroups({.channels = options.channels})
          : MobileNetSsdChannelGroups({.width_multiplier = options.width_multiplier, .channels = options.channels});
  // BuildSsdNetwork builds the body under "ssd".
  PrefixVariables(groups, "ssd/");
  return groups;
}

SsdLoss BuildSsdLoss(const Scope& scope, const SsdNetwork& net, int64_t neg_pos_ratio) {
  Scope s = scope.NewSubScope("ssd_loss");
  DetectionTargets targets = DetectionTargetPlaceholders(scope, s, net.anchors.shape().dim(0));
  SsdLoss loss;
  loss.box_targets = targets.box_targets;
  loss.class_targets = targets.class_targets;
  loss.box_loss = ops::Div(s.WithOpName("box_loss"),
                           SmoothL1Loss(s, net.box_deltas, loss.box_targets, targets.positive),
                           targets.num_positive);
  loss.class_loss = ops::Identity(
      s.WithOpName("class_loss"),
      SsdConfidenceLoss(s, net.class_logits, loss.class_targets, neg_pos_ratio));
  loss.loss = ops::Add(s.WithOpName("loss"), loss.box_loss, loss.class_loss);
  return loss;
}

SsdDetections BuildSsdPostprocess(const Scope& scope, const SsdNetwork& net,
                                  SsdPostprocessOptions options) {
  Scope s = scope.NewSubScope("ssd_postprocess");
  Output anchors = ops::Const(s.WithOpName("anchors"), net.anchors);
  Output boxes = DecodeBoxes(s, net.box_deltas, anchors, net.options.variances);  // [N, A, 4]
  // Class 0 is the background: NMS ranks the object classes only.
  Output probabilities = ops::Softmax(s, net.class_logits);
  Output object_scores = ops::Slice(s, probabilities, {0, 0, 1}, {-1, -1, -1});
  return BuildDetections(s, scope, boxes, object_scores,
                         {.max_per_class = options.max_per_class,
                          .max_detections = options.max_detections,
                          .iou_threshold = options.iou_threshold,
                          .score_threshold = options.score_threshold});
}

}  // namespace dflow::models::detection
