// SSD on MobileNetV1; see ssd.h.
#include "models/detection/ssd.h"

#include "graph/status.h"
#include "models/detection/losses.h"
#include "models/mobilenet_ssd.h"
#include "ops/ops.h"

namespace dflow::models::detection {
namespace {

// The six maps' sizes as the graph built them (static: the input is square
// and of a known size), each with ratios {2, 3}: the 6 boxes per cell that
// MobileNetSsd's heads predict.
std::vector<SsdLayer> LayersOf(const MobileNetSsd& net, int64_t image_size) {
  std::vector<SsdLayer> layers;
  for (const Output& f : net.features) {
    const Shape& shape = f.shape();
    DFLOW_REQUIRE(shape.rank() == 4 && shape.dim(1) > 0 && shape.dim(1) == shape.dim(2),
                  "SSD: a feature map of ", image_size, "x", image_size,
                  " images has no static square shape: ", shape.ToString());
    layers.push_back({shape.dim(1), {2.0f, 3.0f}});
  }
  return layers;
}

// [N, A * k] -> [N, A, k]
Output PerAnchor(const Scope& s, const Output& flat, int64_t anchors, int64_t k) {
  return ops::Reshape(s, flat, {int64_t{-1}, anchors, k});
}

}  // namespace

SsdNetwork BuildSsdNetwork(const Scope& scope, const SsdOptions& options) {
  DFLOW_REQUIRE(options.num_classes >= 1, "SSD: num_classes must be >= 1, got ", options.num_classes);
  // 64 px is the smallest input whose sixth map (stride 512, rounded up) is
  // reached by every stride-2 layer without collapsing a 1x1 map.
  DFLOW_REQUIRE(options.image_size >= 64, "SSD: image_size must be >= 64, got ", options.image_size);
  Scope s = scope.NewSubScope("ssd");
  SsdNetwork net;
  net.options = options;
  const int64_t size = options.image_size;
  net.images = ops::Placeholder(scope.WithOpName("images"), DType::kFloat32, {-1, size, size, 3});
  Output scaled = ops::Sub(s, ops::Mul(s, net.images, 2.0f), 1.0f);  // [0, 1] -> [-1, 1]
  MobileNetSsd body = BuildMobileNetSsd(s, scaled,
                                        {.num_classes = options.num_classes + 1,
                                         .training = options.training,
                                         .width_multiplier = options.width_multiplier});
  // The heads' outputs are laid out map by map, cell by cell, box by box:
  // the anchors' order (anchors.h).
  net.anchors = SsdAnchors(LayersOf(body, size), options.anchors);
  const int64_t anchors = net.anchors.shape().dim(0);
  net.box_deltas = PerAnchor(s.WithOpName("box_deltas"), body.boxes, anchors, 4);
  net.class_logits = PerAnchor(s.WithOpName("class_logits"), body.classes, anchors,
                               options.num_classes + 1);
  net.variables = body.variables;
  net.backbone_variables = body.backbone_variables;
  net.batch_norm_updates = body.batch_norm_updates;
  return net;
}

SsdLoss BuildSsdLoss(const Scope& scope, const SsdNetwork& net, int64_t neg_pos_ratio) {
  Scope s = scope.NewSubScope("ssd_loss");
  const int64_t anchors = net.anchors.shape().dim(0);
  SsdLoss loss;
  loss.box_targets = ops::Placeholder(scope.WithOpName("box_targets"), DType::kFloat32,
                                      {-1, anchors, 4});
  loss.class_targets = ops::Placeholder(scope.WithOpName("class_targets"), DType::kInt32,
                                        {-1, anchors});
  Output positive = ops::Cast(s, ops::Greater(s, loss.class_targets, 0), DType::kFloat32);
  Output num_positive = ops::Maximum(s, ops::Sum(s, positive, {0, 1}), 1.0f);
  loss.box_loss = ops::Div(s.WithOpName("box_loss"),
                           SmoothL1Loss(s, net.box_deltas, loss.box_targets, positive),
                           num_positive);
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
  ops::CombinedNonMaxSuppressionOutputs nms = ops::CombinedNonMaxSuppression(
      s, ops::ExpandDims(s, boxes, 2), object_scores,
      ops::Const(s, static_cast<int32_t>(options.max_per_class)),
      ops::Const(s, static_cast<int32_t>(options.max_detections)), options.iou_threshold,
      options.score_threshold, {.pad_per_class = false, .clip_boxes = true});
  SsdDetections out;
  out.boxes = ops::Identity(scope.WithOpName("detection_boxes"), nms.nmsed_boxes);
  out.scores = ops::Identity(scope.WithOpName("detection_scores"), nms.nmsed_scores);
  out.valid = ops::Identity(scope.WithOpName("num_detections"), nms.valid_detections);
  // NMS numbers the object columns from 0; they are classes 1.. here, and
  // the padding past each image's valid count is class 0.
  Output slots = ops::Cast(s, ops::Range(s, 0, static_cast<int32_t>(options.max_detections), 1),
                           DType::kInt32);
  Output real = ops::Cast(s, ops::Less(s, slots, ops::ExpandDims(s, nms.valid_detections, -1)),
                          DType::kFloat32);
  out.classes = ops::Mul(scope.WithOpName("detection_classes"),
                         ops::Add(s, nms.nmsed_classes, 1.0f), real);
  return out;
}

}  // namespace dflow::models::detection
