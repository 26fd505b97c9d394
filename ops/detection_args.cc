// The detection ops' argument checks; see detection_args.h.
#include "ops/detection_args.h"

#include <algorithm>

#include "graph/status.h"

namespace dflow::detection {
namespace {

void CheckScalars(const Node& node, const std::array<const Tensor*, 4>& scalars,
                  const std::array<const char*, 4>& names) {
  for (size_t i = 0; i < scalars.size(); ++i)
    DFLOW_REQUIRE(scalars[i]->rank() == 0, node.Describe(), ": ", names[i],
                  " must be a scalar, got shape ", scalars[i]->shape().ToString());
}

void CheckIouThreshold(const Node& node, float iou_threshold) {
  DFLOW_REQUIRE(iou_threshold >= 0 && iou_threshold <= 1, node.Describe(),
                ": iou_threshold must be in [0, 1], got ", iou_threshold);
}

}  // namespace

void CheckBoxIouInputs(const Node& node, const Tensor& boxes_a, const Tensor& boxes_b) {
  for (const Tensor* t : {&boxes_a, &boxes_b})
    DFLOW_REQUIRE(t->rank() == 2 && t->dim(1) == 4, node.Describe(), ": ",
                  t == &boxes_a ? "boxes_a" : "boxes_b", " must be [num_boxes, 4], got shape ",
                  t->shape().ToString());
}

int64_t CheckTopKArgs(const Node& node, const Tensor& input, const Tensor& k_tensor) {
  DFLOW_REQUIRE(k_tensor.rank() == 0, node.Describe(), ": k must be a scalar, got shape ",
                k_tensor.shape().ToString());
  const int64_t k = k_tensor.scalar<int32_t>();
  DFLOW_REQUIRE(k >= 0, node.Describe(), ": k must be non-negative, got ", k);
  DFLOW_REQUIRE(input.rank() >= 1, node.Describe(), ": input must have rank >= 1, got a scalar");
  const int64_t n = input.dim(input.rank() - 1);
  DFLOW_REQUIRE(k <= n, node.Describe(), ": k = ", k, " is more than the ", n,
                " entries of the last dimension of input ", input.shape().ToString());
  return k;
}

NmsArgs CheckNmsArgs(const Node& node, const Tensor& boxes, const Tensor& scores,
                     const std::array<const Tensor*, 4>& scalars) {
  DFLOW_REQUIRE(boxes.rank() == 2 && boxes.dim(1) == 4, node.Describe(),
                ": boxes must be [num_boxes, 4], got shape ", boxes.shape().ToString());
  DFLOW_REQUIRE(scores.rank() == 1 && scores.dim(0) == boxes.dim(0), node.Describe(),
                ": scores must be [num_boxes] = [", boxes.dim(0), "], got shape ",
                scores.shape().ToString());
  CheckScalars(node, scalars,
               {"max_output_size", "iou_threshold", "score_threshold", "soft_nms_sigma"});
  NmsArgs args{scalars[0]->scalar<int32_t>(), scalars[1]->scalar<float>(),
               scalars[2]->scalar<float>(), scalars[3]->scalar<float>()};
  DFLOW_REQUIRE(args.max_output_size >= 0, node.Describe(),
                ": max_output_size must be non-negative, got ", args.max_output_size);
  CheckIouThreshold(node, args.iou_threshold);
  DFLOW_REQUIRE(args.soft_nms_sigma >= 0, node.Describe(),
                ": soft_nms_sigma must be non-negative, got ", args.soft_nms_sigma);
  return args;
}

CombinedNmsArgs CheckCombinedNmsArgs(const Node& node, const Tensor& boxes, const Tensor& scores,
                                     const std::array<const Tensor*, 4>& scalars,
                                     bool pad_per_class) {
  DFLOW_REQUIRE(boxes.rank() == 4 && boxes.dim(3) == 4, node.Describe(),
                ": boxes must be [batch, num_boxes, q, 4], got shape ", boxes.shape().ToString());
  DFLOW_REQUIRE(scores.rank() == 3 && scores.dim(0) == boxes.dim(0) &&
                    scores.dim(1) == boxes.dim(1),
                node.Describe(), ": scores must be [batch, num_boxes, num_classes] with boxes ",
                boxes.shape().ToString(), ", got shape ", scores.shape().ToString());
  DFLOW_REQUIRE(boxes.dim(2) == 1 || boxes.dim(2) == scores.dim(2), node.Describe(), ": boxes ",
                boxes.shape().ToString(), " must have q = 1 or q = num_classes = ", scores.dim(2),
                " in dimension 2");
  CheckScalars(node, scalars,
               {"max_output_size_per_class", "max_total_size", "iou_threshold", "score_threshold"});
  CombinedNmsArgs args;
  args.batch = boxes.dim(0), args.boxes = boxes.dim(1), args.q = boxes.dim(2);
  args.classes = scores.dim(2);
  args.per_class = scalars[0]->scalar<int32_t>(), args.total = scalars[1]->scalar<int32_t>();
  args.iou_threshold = scalars[2]->scalar<float>(), args.score_threshold = scalars[3]->scalar<float>();
  DFLOW_REQUIRE(args.per_class > 0, node.Describe(),
                ": max_output_size_per_class must be positive, got ", args.per_class);
  DFLOW_REQUIRE(args.total > 0, node.Describe(), ": max_total_size must be positive, got ",
                args.total);
  CheckIouThreshold(node, args.iou_threshold);
  args.per_batch = pad_per_class
                       ? std::min(args.total, CheckedMul(args.per_class, args.classes, "per_class * classes"))
                       : args.total;
  return args;
}

}  // namespace dflow::detection
