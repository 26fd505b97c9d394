// Builders for the object-detection ops: non-maximum suppression (TensorFlow's
// NonMaxSuppressionV5 and CombinedNonMaxSuppression), TopKV2 and the pairwise
// box IoU matrix. Declared in ops/detection.cc; kernels in ops/cpu/ and
// ops/cuda/detection.{cc,cu}.
#pragma once

#include "graph/scope.h"

namespace dflow::ops {

// Boxes are [y1, x1, y2, x2] with either corner first; IoU(a, b) is
// |a n b| / |a u b|, and 0 when either box has no area.

struct NonMaxSuppressionV5Attrs {
  bool pad_to_max_output_size = false;  // pad the outputs with zeros to max_output_size
};
struct NonMaxSuppressionV5Outputs {
  Output selected_indices;  // int32 [num_selected] (or [max_output_size] when padded)
  Output selected_scores;   // float32, the (soft-NMS re-weighted) scores of those boxes
  Output valid_outputs;     // int32 scalar: how many entries are real
};
// Greedy NMS over boxes [N, 4] and scores [N] (float32): boxes with
// score > score_threshold, best first (ties: lower index first), each kept
// unless its IoU with a kept box is > iou_threshold, at most max_output_size
// (int32 scalar). soft_nms_sigma > 0 is Soft-NMS (Gaussian re-weighting).
NonMaxSuppressionV5Outputs NonMaxSuppressionV5(const Scope& scope, const Input& boxes,
                                               const Input& scores, const Input& max_output_size,
                                               const Input& iou_threshold,
                                               const Input& score_threshold,
                                               const Input& soft_nms_sigma,
                                               NonMaxSuppressionV5Attrs attrs = {});

struct CombinedNonMaxSuppressionAttrs {
  bool pad_per_class = false;  // output size min(max_total_size, per_class * classes)
  bool clip_boxes = true;      // clip the output coordinates to [0, 1]
};
struct CombinedNonMaxSuppressionOutputs {
  Output nmsed_boxes;       // float32 [B, max_detections, 4]
  Output nmsed_scores;      // float32 [B, max_detections]
  Output nmsed_classes;     // float32 [B, max_detections]
  Output valid_detections;  // int32 [B]
};
// Per image and class, greedy NMS of boxes [B, N, q, 4] (q = 1: shared by
// all classes, else one per class) scored by scores [B, N, C]; then the
// max_total_size best of all classes, padded with zeros.
CombinedNonMaxSuppressionOutputs CombinedNonMaxSuppression(
    const Scope& scope, const Input& boxes, const Input& scores,
    const Input& max_output_size_per_class, const Input& max_total_size,
    const Input& iou_threshold, const Input& score_threshold,
    CombinedNonMaxSuppressionAttrs attrs = {});

struct TopKAttrs {
  bool sorted = true;  // dflow always returns the k values sorted, descending
};
struct TopKOutputs {
  Output values;   // input's dtype, [..., k]
  Output indices;  // int32 [..., k]
};
// The k largest entries of each row (the last dimension) of input, largest
// first; equal values keep the lower index first. 0 <= k <= n (int32 scalar).
TopKOutputs TopKV2(const Scope& scope, const Input& input, const Input& k, TopKAttrs attrs = {});

// IoU of every pair: boxes_a [N, 4], boxes_b [M, 4] (float32) -> [N, M].
Output BoxIou(const Scope& scope, const Input& boxes_a, const Input& boxes_b);

}  // namespace dflow::ops
