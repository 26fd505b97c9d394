// Anchor-to-object matching for training single-shot detectors: SSD's
// (Liu et al. 2016, section 2.2) and RetinaNet's (Lin et al. 2017, section 4).
//
// Matching runs in the input pipeline, in plain C++ on arrays, not in the
// training graph: it needs no gradients, and the number of objects differs
// per image, so doing it here leaves the graph with static shapes (targets
// [N, A, 4] and [N, A] whatever the objects) and keeps data-dependent loops
// out of the step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "models/detection/box_coding.h"

namespace dflow::models::detection {

inline constexpr int32_t kBackground = -1;  // matches[a]: the anchor is a negative
inline constexpr int32_t kIgnored = -2;     // matches[a]: no loss at all for it

// Ground truth of one image: boxes (y1, x1, y2, x2) in the anchors'
// coordinates, 4 floats per object, and one label per object, >= 1 (label 0
// is the background class of SSD's softmax).
struct GroundTruth {
  std::span<const float> boxes;
  std::span<const int32_t> labels;
};

struct MatchResult {
  std::vector<int32_t> matches;        // [A]: object index, kBackground or kIgnored
  std::vector<float> box_targets;      // [A * 4]: encoded (box_coding.h) for positives, else 0
  std::vector<int32_t> class_targets;  // [A]: the object's label, 0 background, -1 ignored
  int64_t num_positive = 0;
};

struct SsdMatchOptions {
  float threshold = 0.5f;  // an anchor with IoU > threshold to some object is positive
  BoxVariances variances = kSsdVariances;
};

// SSD: first every object claims its best anchor, positive whatever the IoU
// (objects with the higher best IoU claim first, ties by lower index; an
// object whose best anchor is taken claims its best free one; an object that
// overlaps no anchor claims none). Then every other anchor whose best IoU
// (ties: lower object index) is > threshold is positive; the rest background.
MatchResult MatchSsd(std::span<const float> anchors, const GroundTruth& truth,
                     SsdMatchOptions options = {});

struct RetinaNetMatchOptions {
  float positive_threshold = 0.5f;  // IoU >= this: positive
  float negative_threshold = 0.4f;  // IoU < this: background; in between: ignored
  // torchvision / TF's allow_low_quality_matches: every anchor that has an
  // object's highest IoU (ties included) becomes positive, matched to its own
  // best object, even below the thresholds.
  bool allow_low_quality_matches = false;
  BoxVariances variances = kUnitVariances;
};

// RetinaNet: each anchor's best object (ties: lower index) by IoU, then the
// thresholds above.
MatchResult MatchRetinaNet(std::span<const float> anchors, const GroundTruth& truth,
                           RetinaNetMatchOptions options = {});

}  // namespace dflow::models::detection
