// The end of a single-shot detector's inference graph, shared by SSD and
// RetinaNet: per-class non-maximum suppression of decoded boxes and their
// object-class scores, with the outputs named for fetching.
#pragma once

#include <cstdint>

#include "graph/scope.h"

namespace dflow::models::detection {

struct NmsOptions {
  int64_t max_per_class = 100;
  int64_t max_detections = 100;
  float iou_threshold = 0.5f;
  float score_threshold = 0.05f;
};

struct Detections {
  Output boxes;    // float32 [N, D, 4], normalised (y1, x1, y2, x2), clipped to [0, 1]
  Output scores;   // float32 [N, D], best first
  Output classes;  // float32 [N, D]: the object class 1..K (0 in padding)
  Output valid;    // int32 [N]: the real detections of each image
};

// CombinedNonMaxSuppression per image and class over boxes [N, A, 4]
// (normalised, one per anchor, shared by the classes) and scores [N, A, K]
// of the K object classes (no background column). Intermediate ops go under
// `scope`; the four outputs are named detection_boxes, detection_scores,
// detection_classes and num_detections under `outputs`.
Detections BuildDetections(const Scope& scope, const Scope& outputs, const Output& boxes,
                           const Output& scores, const NmsOptions& options);

}  // namespace dflow::models::detection
