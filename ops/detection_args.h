// The checked arguments of the detection ops, shared by their CPU kernels
// (ops/cpu/) and GPU kernels (ops/cuda/detection.cc, which check host copies
// of the inputs), so that both refuse the same inputs with the same words.
// Every check throws kInvalidArgument naming the node.
#pragma once

#include <array>
#include <cstdint>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace dflow::detection {

// boxes_a and boxes_b must be [num_boxes, 4].
void CheckBoxIouInputs(const Node& node, const Tensor& boxes_a, const Tensor& boxes_b);

// TopKV2's k (a scalar in [0, n], n the last dimension of input, rank >= 1).
int64_t CheckTopKArgs(const Node& node, const Tensor& input, const Tensor& k);

struct NmsArgs {
  int64_t max_output_size = 0;
  float iou_threshold = 0, score_threshold = 0, soft_nms_sigma = 0;
};
// NonMaxSuppressionV5: boxes [n, 4], scores [n], and the four scalars
// max_output_size, iou_threshold, score_threshold, soft_nms_sigma.
NmsArgs CheckNmsArgs(const Node& node, const Tensor& boxes, const Tensor& scores,
                     const std::array<const Tensor*, 4>& scalars);

struct CombinedNmsArgs {
  int64_t batch = 0, boxes = 0, q = 0, classes = 0;
  int64_t per_class = 0, total = 0;
  int64_t per_batch = 0;  // detections per image in the outputs
  float iou_threshold = 0, score_threshold = 0;
};
// CombinedNonMaxSuppression: boxes [batch, n, q, 4] (q = 1 or classes),
// scores [batch, n, classes], and the scalars max_output_size_per_class,
// max_total_size, iou_threshold, score_threshold.
CombinedNmsArgs CheckCombinedNmsArgs(const Node& node, const Tensor& boxes, const Tensor& scores,
                                     const std::array<const Tensor*, 4>& scalars,
                                     bool pad_per_class);

}  // namespace dflow::detection
