// SSD (Liu et al. 2016) on MobileNetV1 (mobilenet_ssd.h) or on
// SqueezeNet 1.1 (squeezenet_ssd.h): the network with its default boxes, the
// training loss (smooth-L1 boxes plus softmax confidence with 3:1
// hard-negative mining) and the post-processing (box decoding, per-class
// NMS), as graph pieces an app assembles. Both backbones feed six maps with
// 6 boxes per cell; only the backbone, its extras and the maps' sizes differ.
//
//   SsdOptions options{.num_classes = 3, .image_size = 160};
//   SsdNetwork net = BuildSsdNetwork(scope, options);        // net.anchors for matching
//   SsdLoss loss = BuildSsdLoss(scope, net);                  // feed its targets
//   SsdDetections out = BuildSsdPostprocess(scope, net);     // fetch for eval/predict
//
// Coordinates are normalised (y1, x1, y2, x2) in [0, 1] of the network's
// square input, as the anchors and the matching (matching.h) use them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "models/detection/anchors.h"
#include "models/compress/pruning.h"
#include "models/detection/box_coding.h"
#include "models/detection/postprocess.h"
#include "models/model_parts.h"

namespace dflow::models::detection {

enum class SsdBackbone {
  kMobileNetV1,  // mobilenet_ssd.h: maps of stride 16, 32, ..., 512
  kSqueezeNet,   // squeezenet_ssd.h: 18, 10, 5, 3, 2, 1 cells at 300
};

struct SsdOptions {
  SsdBackbone backbone = SsdBackbone::kMobileNetV1;
  int64_t num_classes = 1;        // object classes; the softmax adds background as class 0
  int64_t image_size = 300;       // square input, pixels
  double width_multiplier = 1.0;  // MobileNet's alpha (mobilenet_ssd.h); SqueezeNet: 1 only
  // Channels of single layers (a channel-pruned network):
  // MobileNetSsdOptions::channels or SqueezeNetSsdOptions::channels.
  std::map<std::string, int64_t> channels{};
  bool training = true;           // batch-norm mode: batch statistics and moving-average updates
  SsdAnchorOptions anchors{};     // scales s_min, s_max of the default boxes
  BoxVariances variances = kSsdVariances;
  // Model parallelism: the devices of the backbone (with the input scaling),
  // the extras and the heads (with the per-anchor views).
  ModelPartDevices devices{};
};

struct SsdNetwork {
  Output images;          // float32 [N, S, S, 3] in [0, 1], fed
  Output box_deltas;      // float32 [N, A, 4], encoded against `anchors`
  Output class_logits;    // float32 [N, A, num_classes + 1], class 0 background
  Tensor anchors;         // float32 [A, 4], SsdAnchors over the six feature maps
  std::vector<Output> variables;           // every trained weight
  std::vector<Output> backbone_variables;  // the backbone's part (frozen by --freeze backbone)
  std::vector<Output> batch_norm_updates;  // run with each training step
  // The backbone's last feature map (MobileNet's conv13, SqueezeNet's
  // fire8), [N, h, w, C]: what exemplar herding describes an image by.
  Output backbone_features;
  std::vector<Output> feature_maps;  // the six maps the heads read, [N, h, w, C] each
  SsdOptions options;
};

// The default boxes of the network BuildSsdNetwork builds for these
// options, without building it: six maps (MobileNet: ceil(S / 16),
// ceil(S / 32), ..., ceil(S / 512) cells; SqueezeNet: SqueezeNetSsdMapSizes),
// ratios {2, 3}, 6 boxes per cell.
Tensor SsdDefaultBoxes(const SsdOptions& options);

// The network on a placeholder "images" [-1, S, S, 3]; the pixels are
// mapped to [-1, 1] inside the graph. Any image_size from 64 up works.
SsdNetwork BuildSsdNetwork(const Scope& scope, const SsdOptions& options);
// The network on `images` (float32 [N, S, S, 3] in [0, 1]) given by the
// caller: a second network on the same input, e.g. the teacher of
// incremental learning (apps/detect/incremental.h) under its own name scope.
SsdNetwork BuildSsdNetwork(const Scope& scope, const SsdOptions& options, const Output& images);

// The network's prunable layers (MobileNetSsdChannelGroups or
// SqueezeNetSsdChannelGroups), their variables named as BuildSsdNetwork
// names them under its scope.
std::vector<ChannelGroup> SsdChannelGroups(const SsdOptions& options);

struct SsdLoss {
  Output box_targets;    // float32 [N, A, 4], fed: MatchSsd's box_targets
  Output class_targets;  // int32 [N, A], fed: MatchSsd's class_targets
  Output box_loss;       // smooth-L1 (beta 1) over the positives / their number
  Output class_loss;     // SsdConfidenceLoss with 3:1 mining
  Output loss;           // box_loss + class_loss
};
SsdLoss BuildSsdLoss(const Scope& scope, const SsdNetwork& net, int64_t neg_pos_ratio = 3);

struct SsdPostprocessOptions {
  int64_t max_per_class = 100;
  int64_t max_detections = 100;
  float iou_threshold = 0.45f;  // SSD's NMS overlap
  float score_threshold = 0.01f;
};

using SsdDetections = Detections;  // postprocess.h
// Decodes every anchor's box, scores each class by softmax, then
// CombinedNonMaxSuppression per image and class.
SsdDetections BuildSsdPostprocess(const Scope& scope, const SsdNetwork& net,
                                  SsdPostprocessOptions options = {});

}  // namespace dflow::models::detection
