// Greedy non-maximum suppression on the CPU, shared by NonMaxSuppressionV5
// and CombinedNonMaxSuppression: candidate ordering, hard NMS over a spatial
// grid of the kept boxes, and TensorFlow's Soft-NMS.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ops/box_geometry.h"
#include "ops/detection_args.h"

namespace dflow::detection {

// The indices i < n with scores[i * stride] > score_threshold, by
// descending score, equal scores by ascending index (NaN scores never pass).
std::vector<int32_t> SortedCandidates(const float* scores, int64_t stride, int64_t n,
                                      float score_threshold);

// Hard NMS: walks `order` and keeps a candidate unless its IoU with a box
// kept before is > iou_threshold, until max_output are kept. Returns the
// kept indices in order: exactly those of the naive loop over all pairs,
// since only boxes that overlap a candidate can suppress it and the grid
// finds every kept box that overlaps it.
std::vector<int32_t> HardNms(const std::vector<Box>& boxes, const std::vector<int32_t>& order,
                             int64_t max_output, float iou_threshold);

// TensorFlow's Soft-NMS (sigma > 0): the best remaining candidate's score is
// multiplied by exp(-IoU^2 / (2 sigma)) for each box kept since it was last
// looked at; unchanged, it is kept; still > score_threshold, it goes back in
// the queue; else it is dropped. Appends to `selected` and `selected_scores`.
void SoftNms(const std::vector<Box>& boxes, const float* scores, const std::vector<int32_t>& order,
             int64_t max_output, float score_threshold, float sigma,
             std::vector<int32_t>& selected, std::vector<float>& selected_scores);

struct NmsSelection {
  std::vector<int32_t> indices;  // kept boxes, in the order they were kept
  std::vector<float> scores;     // their (Soft-NMS re-weighted) scores
};

// Hard NMS of the normalised `boxes` over the candidates `order`, as HardNms
// (the CPU's) or a device's equivalent: returns the kept indices in order.
using HardNmsFn = std::function<std::vector<int32_t>(const std::vector<Box>& boxes,
                                                     const std::vector<int32_t>& order)>;

// NonMaxSuppressionV5 over n boxes (y1, x1, y2, x2, either corner first) and
// their scores: the candidates above the score threshold in score order, then
// Soft-NMS when soft_nms_sigma > 0, else `hard_nms`.
NmsSelection NonMaxSuppression(const float* boxes, const float* scores, int64_t n,
                               const NmsArgs& args, const HardNmsFn& hard_nms);

}  // namespace dflow::detection
