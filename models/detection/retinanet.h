// RetinaNet (Lin et al. 2017, "Focal Loss for Dense Object Detection") on a
// ResNet-18 or -50 with an FPN: the network with its anchors, the training
// loss (sigmoid focal loss plus smooth-L1 boxes) and the post-processing
// (box decoding, per-class NMS), as graph pieces an app assembles, as ssd.h.
//
//   RetinaNetOptions options{.num_classes = 3, .image_size = 320};
//   RetinaNetNetwork net = BuildRetinaNetNetwork(scope, options);  // net.anchors: MatchRetinaNet
//   RetinaNetLoss loss = BuildRetinaNetLoss(scope, net);            // feed its targets
//   Detections out = BuildRetinaNetPostprocess(scope, net);         // fetch for eval/predict
//
// The network (section 4): ResNet C3-C5; FPN laterals (1x1 to 256) with a
// top-down path (nearest upsampling to the finer map's size, added) and
// 3x3 output convolutions give P3-P5; P6 is a 3x3/2 convolution on C5 (the
// paper's and Detectron's choice; torchvision's retinanet_resnet50_fpn reads
// P5, see p6_from_p5), P7 a ReLU and a 3x3/2 convolution on P6. Two heads,
// each 4 x (3x3 conv 256 + ReLU) and a 3x3 conv to A * K class logits or
// A * 4 box deltas (A = 9 anchors per cell), run over P3-P7 with the same
// weights at every level.
//
// Variable names under `<scope>/retinanet/` and torchvision's (>= 0.13):
//   resnet/...                  backbone.body... (resnet.h)
//   fpn/lateral<l>/{filter,bias}  backbone.fpn.inner_blocks.<l-3>.0.{weight,bias}
//   fpn/output<l>/...           backbone.fpn.layer_blocks.<l-3>.0...
//   fpn/p6/..., fpn/p7/...      backbone.fpn.extra_blocks.p6..., p7...
//   class_head/conv<i>/...      head.classification_head.conv.<i-1>.0...
//   class_head/predict/...      head.classification_head.cls_logits...
//   box_head/conv<i>/..., box_head/predict/...  head.regression_head.conv..., bbox_reg...
// torchvision's backbone batch norm is frozen (its gammas and betas are
// buffers there, variables here).
//
// Coordinates are normalised (y1, x1, y2, x2) in [0, 1] of the network's
// square input, as SSD's; box deltas use unit variances (kUnitVariances).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/scope.h"
#include "models/compress/pruning.h"
#include "models/detection/anchors.h"
#include "models/detection/losses.h"
#include "models/detection/postprocess.h"
#include "models/model_parts.h"

namespace dflow::models::detection {

struct RetinaNetOptions {
  int64_t num_classes = 1;   // object classes K; no background class (sigmoids)
  int64_t image_size = 512;  // square input, pixels
  int depth = 50;            // ResNet-18 or -50
  bool training = true;      // batch-norm mode: batch statistics and moving-average updates
  bool p6_from_p5 = false;   // P6 on P5 (256 channels) as torchvision's, not on C5
  // Output channels of single layers (a channel-pruned network): the
  // ResNet's inner convolutions as "resnet/layer<i>/block<j>/conv<k>"
  // (ResNetOptions::channels), the subnets' "class_head/conv1" ..
  // "class_head/conv4" and "box_head/conv1" .. "box_head/conv4" (256 each).
  std::map<std::string, int64_t> channels{};
  // Levels 3..7 and normalised coordinates are what the network builds.
  RetinaNetAnchorOptions anchors{.normalized = true};
  // Model parallelism: the devices of the ResNet (with the input
  // normalisation), the feature pyramid and the class and box subnets.
  ModelPartDevices devices{};
};

struct RetinaNetNetwork {
  Output images;        // float32 [N, S, S, 3] in [0, 1], fed
  Output box_deltas;    // float32 [N, A, 4], encoded against `anchors`, unit variances
  Output class_logits;  // float32 [N, A, num_classes], one sigmoid per class
  Tensor anchors;       // float32 [A, 4], RetinaNetAnchors(S, S): P3..P7, row-major, 9 a cell
  std::vector<Output> variables;           // every trained weight
  std::vector<Output> backbone_variables;  // the ResNet part (frozen by --freeze backbone)
  std::vector<Output> batch_norm_updates;  // run with each training step
  Output backbone_features;                // C5, [N, h, w, C]: what exemplar herding describes an image by
  std::vector<Output> feature_maps;        // P3..P7, [N, h, w, 256] each: what feature imitation reads
  RetinaNetOptions options;
};

// The anchors of the network BuildRetinaNetNetwork builds for these options,
// without building it: levels 3..7 of ceil(S / 2^l)^2 cells, 9 per cell.
Tensor RetinaNetDefaultAnchors(const RetinaNetOptions& options);

// The network on a placeholder "images" [-1, S, S, 3]; the pixels are
// normalised with ImageNet's mean and standard deviation inside the graph.
// Any image_size from 32 up works.
RetinaNetNetwork BuildRetinaNetNetwork(const Scope& scope, const RetinaNetOptions& options);
// The network on `images` given by the caller (float32 [N, S, S, 3] in [0, 1]).
RetinaNetNetwork BuildRetinaNetNetwork(const Scope& scope, const RetinaNetOptions& options,
                                       const Output& images);

// The layers whose output channels can be pruned, each with the variables
// its channels index (named as BuildRetinaNetNetwork names them under its
// scope): the ResNet's inner convolutions (ResNetChannelGroups) and the
// first four layers of each subnet, read by the next one. What joins a
// residual or FPN sum keeps its channels, as do the predictions.
std::vector<ChannelGroup> RetinaNetChannelGroups(const RetinaNetOptions& options);

struct RetinaNetLossOptions {
  FocalLossOptions focal{};         // alpha 0.25, gamma 2 (section 3.2)
  float smooth_l1_beta = 1.0f / 9;  // Detectron's; 0: plain L1 as torchvision's
};

struct RetinaNetLoss {
  Output box_targets;    // float32 [N, A, 4], fed: MatchRetinaNet's box_targets
  Output class_targets;  // int32 [N, A], fed: MatchRetinaNet's class_targets (1..K, 0, -1)
  Output box_loss;       // smooth-L1 over the positives / max(1, their number)
  Output class_loss;     // focal loss over all but the ignored anchors / max(1, positives)
  Output loss;           // box_loss + class_loss
};
RetinaNetLoss BuildRetinaNetLoss(const Scope& scope, const RetinaNetNetwork& net,
                                 RetinaNetLossOptions options = {});

// Decodes every anchor's box, scores each class by its sigmoid, then
// CombinedNonMaxSuppression per image and class (defaults: IoU 0.5, score
// 0.05, 100 detections, as the paper's inference in section 5).
Detections BuildRetinaNetPostprocess(const Scope& scope, const RetinaNetNetwork& net,
                                     NmsOptions options = {});

}  // namespace dflow::models::detection
