// SSD and RetinaNet matching on arrays; see matching.h for the rules.
#include "models/detection/matching.h"

#include <algorithm>
#include <numeric>

#include "graph/status.h"
#include "ops/box_geometry.h"

namespace dflow::models::detection {
namespace {

// iou[g * A + a] with the detection kernels' IoU (ops/box_geometry.h).
struct IouMatrix {
  int64_t objects = 0, anchors = 0;
  std::vector<float> iou;
  float at(int64_t g, int64_t a) const { return iou[g * anchors + a]; }
};

IouMatrix ComputeIou(std::span<const float> anchors, const GroundTruth& truth) {
  DFLOW_REQUIRE(anchors.size() % 4 == 0 && truth.boxes.size() % 4 == 0,
                "matching: anchors and boxes need 4 coordinates each, got ", anchors.size(),
                " and ", truth.boxes.size(), " floats");
  IouMatrix m;
  m.objects = static_cast<int64_t>(truth.boxes.size() / 4);
  m.anchors = static_cast<int64_t>(anchors.size() / 4);
  DFLOW_REQUIRE(static_cast<int64_t>(truth.labels.size()) == m.objects, "matching: ",
                m.objects, " boxes but ", truth.labels.size(), " labels");
  namespace geometry = dflow::detection;
  std::vector<geometry::Box> anchor_boxes(m.anchors);
  for (int64_t a = 0; a < m.anchors; ++a) {
    anchor_boxes[a] = geometry::NormalizeBox(anchors.data() + 4 * a);
  }
  m.iou.resize(m.objects * m.anchors);
  for (int64_t g = 0; g < m.objects; ++g) {
    geometry::Box b = geometry::NormalizeBox(truth.boxes.data() + 4 * g);
    for (int64_t a = 0; a < m.anchors; ++a) {
      m.iou[g * m.anchors + a] = geometry::Iou(b, anchor_boxes[a]);
    }
  }
  return m;
}

// Each anchor's best object (strictly greater wins, so ties keep the lower
// index) and that IoU; -1 and 0 without objects.
void BestObjects(const IouMatrix& m, std::vector<int32_t>& best, std::vector<float>& best_iou) {
  best.assign(m.anchors, -1);
  best_iou.assign(m.anchors, 0.0f);
  for (int64_t g = 0; g < m.objects; ++g) {
    for (int64_t a = 0; a < m.anchors; ++a) {
      if (best[a] < 0 || m.at(g, a) > best_iou[a]) {
        best[a] = static_cast<int32_t>(g);
        best_iou[a] = m.at(g, a);
      }
    }
  }
}

// Fills the targets from the matches: encoded boxes and labels of positives.
MatchResult Finish(std::vector<int32_t> matches, std::span<const float> anchors,
                   const GroundTruth& truth, const BoxVariances& variances) {
  MatchResult r;
  const size_t count = matches.size();
  r.box_targets.assign(4 * count, 0.0f);
  r.class_targets.assign(count, 0);
  for (size_t a = 0; a < count; ++a) {
    int32_t g = matches[a];
    if (g == kIgnored) r.class_targets[a] = -1;
    if (g < 0) continue;
    ++r.num_positive;
    r.class_targets[a] = truth.labels[g];
    EncodeBoxes(truth.boxes.data() + 4 * g, anchors.data() + 4 * a, 1, variances,
                r.box_targets.data() + 4 * a);
  }
  r.matches = std::move(matches);
  return r;
}

}  // namespace

MatchResult MatchSsd(std::span<const float> anchors, const GroundTruth& truth,
                     SsdMatchOptions options) {
  IouMatrix m = ComputeIou(anchors, truth);
  std::vector<int32_t> best;
  std::vector<float> best_iou;
  BestObjects(m, best, best_iou);
  std::vector<int32_t> matches(m.anchors, kBackground);
  for (int64_t a = 0; a < m.anchors; ++a) {
    if (best[a] >= 0 && best_iou[a] > options.threshold) matches[a] = best[a];
  }
  // Objects claim their best anchor, the best-overlapping object first.
  std::vector<float> object_best(m.objects, 0.0f);
  for (int64_t g = 0; g < m.objects; ++g) {
    for (int64_t a = 0; a < m.anchors; ++a) object_best[g] = std::max(object_best[g], m.at(g, a));
  }
  std::vector<int64_t> order(m.objects);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return object_best[x] > object_best[y]; });
  std::vector<bool> claimed(m.anchors, false);
  for (int64_t g : order) {
    int64_t pick = -1;
    for (int64_t a = 0; a < m.anchors; ++a) {
      if (claimed[a] || m.at(g, a) <= 0.0f) continue;
      if (pick < 0 || m.at(g, a) > m.at(g, pick)) pick = a;
    }
    if (pick < 0) continue;
    claimed[pick] = true;
    matches[pick] = static_cast<int32_t>(g);
  }
  return Finish(std::move(matches), anchors, truth, options.variances);
}

MatchResult MatchRetinaNet(std::span<const float> anchors, const GroundTruth& truth,
                           RetinaNetMatchOptions options) {
  IouMatrix m = ComputeIou(anchors, truth);
  std::vector<int32_t> best;
  std::vector<float> best_iou;
  BestObjects(m, best, best_iou);
  std::vector<int32_t> matches(m.anchors, kBackground);
  for (int64_t a = 0; a < m.anchors; ++a) {
    if (best[a] < 0) continue;
    if (best_iou[a] >= options.positive_threshold) {
      matches[a] = best[a];
    } else if (best_iou[a] >= options.negative_threshold) {
      matches[a] = kIgnored;
    }
  }
  if (options.allow_low_quality_matches) {
    for (int64_t g = 0; g < m.objects; ++g) {
      float highest = 0.0f;
      for (int64_t a = 0; a < m.anchors; ++a) highest = std::max(highest, m.at(g, a));
      if (highest <= 0.0f) continue;  // overlaps no anchor: nothing to promote
      for (int64_t a = 0; a < m.anchors; ++a) {
        if (m.at(g, a) == highest) matches[a] = best[a];
      }
    }
  }
  return Finish(std::move(matches), anchors, truth, options.variances);
}

}  // namespace dflow::models::detection
