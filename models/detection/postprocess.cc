// Detection post-processing; see postprocess.h.
#include "models/detection/postprocess.h"

#include "ops/ops.h"

namespace dflow::models::detection {

Detections BuildDetections(const Scope& scope, const Scope& outputs, const Output& boxes,
                           const Output& scores, const NmsOptions& options) {
  ops::CombinedNonMaxSuppressionOutputs nms = ops::CombinedNonMaxSuppression(
      scope, ops::ExpandDims(scope, boxes, 2), scores,
      ops::Const(scope, static_cast<int32_t>(options.max_per_class)),
      ops::Const(scope, static_cast<int32_t>(options.max_detections)), options.iou_threshold,
      options.score_threshold, {.pad_per_class = false, .clip_boxes = true});
  Detections out;
  out.boxes = ops::Identity(outputs.WithOpName("detection_boxes"), nms.nmsed_boxes);
  out.scores = ops::Identity(outputs.WithOpName("detection_scores"), nms.nmsed_scores);
  out.valid = ops::Identity(outputs.WithOpName("num_detections"), nms.valid_detections);
  // NMS numbers the object columns from 0; they are classes 1.. here, and
  // the padding past each image's valid count is class 0.
  const int32_t slot_count = static_cast<int32_t>(options.max_detections);
  Output slots = ops::Cast(scope, ops::Range(scope, 0, slot_count, 1), DType::kInt32);
  Output valid = ops::ExpandDims(scope, nms.valid_detections, -1);
  Output real = ops::Cast(scope, ops::Less(scope, slots, valid), DType::kFloat32);
  out.classes = ops::Mul(outputs.WithOpName("detection_classes"),
                         ops::Add(scope, nms.nmsed_classes, 1.0f), real);
  return out;
}

}  // namespace dflow::models::detection
