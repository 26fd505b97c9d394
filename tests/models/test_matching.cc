// SSD and RetinaNet matching on hand-made cases: an object whose best IoU is
// under the threshold still gets an anchor, two objects competing for one
// anchor, ties, RetinaNet's ignored band and low-quality matches.
#include <catch2/catch.hpp>

#include "models/detection/matching.h"

using namespace dflow;
using namespace dflow::models::detection;

namespace {

using Ints = std::vector<int32_t>;

MatchResult Ssd(const std::vector<float>& anchors, const std::vector<float>& boxes,
                const Ints& labels) {
  return MatchSsd(anchors, GroundTruth{boxes, labels});
}

}  // namespace

TEST_CASE("SSD matching: an object under the threshold still gets its best anchor",
          "[matching]") {
  // Object IoUs: 0.16 with anchor 0, 0 with anchor 1, 0.04 with anchor 2.
  std::vector<float> anchors = {0, 0, 0.5f, 0.5f, 0.5f, 0.5f, 1, 1, 0, 0, 1, 1};
  std::vector<float> box = {0, 0, 0.2f, 0.2f};
  MatchResult r = Ssd(anchors, box, {7});
  CHECK(r.matches == Ints{0, kBackground, kBackground});
  CHECK(r.class_targets == Ints{7, 0, 0});
  CHECK(r.num_positive == 1);
  float expected[4];
  EncodeBoxes(box.data(), anchors.data(), 1, kSsdVariances, expected);
  for (int i = 0; i < 4; ++i) CHECK(r.box_targets[i] == Approx(expected[i]));
  for (int i = 4; i < 12; ++i) CHECK(r.box_targets[i] == 0.0f);
}

TEST_CASE("SSD matching: best anchor plus every anchor with IoU > 0.5", "[matching]") {
  // The object [0, 0, 0.5, 0.6]: IoU 0.83 with anchor 0, 0.3 with anchor 1,
  // 0.92 with anchor 2 (its best).
  std::vector<float> anchors = {0, 0, 0.5f, 0.5f, 0, 0, 1, 1, 0, 0, 0.5f, 0.55f};
  MatchResult r = Ssd(anchors, {0, 0, 0.5f, 0.6f}, {1});
  CHECK(r.matches == Ints{0, kBackground, 0});
  CHECK(r.num_positive == 2);
}

TEST_CASE("SSD matching: two objects competing for one anchor", "[matching]") {
  // Both objects' best anchor is anchor 0 ([0, 0, 1, 1]): object 1 overlaps it
  // more (0.9025 vs 0.81), so it takes it, and object 0 takes its best free
  // anchor (anchor 1, IoU 0.31 < 0.5).
  std::vector<float> anchors = {0, 0, 1, 1, 0, 0, 0.5f, 0.5f, 0.6f, 0.6f, 1, 1};
  MatchResult r = Ssd(anchors, {0, 0, 0.9f, 0.9f, 0, 0, 0.95f, 0.95f}, {1, 2});
  CHECK(r.matches == Ints{1, 0, kBackground});
  CHECK(r.class_targets == Ints{2, 1, 0});
}

TEST_CASE("SSD matching: ties go to the lower index", "[matching]") {
  // Two identical objects: the first claims the best anchor, the second the
  // next; an anchor above the threshold for both goes to object 0.
  std::vector<float> anchors = {0, 0, 1, 1, 0, 0, 0.5f, 0.5f, 0, 0, 0.95f, 0.95f};
  MatchResult r = Ssd(anchors, {0, 0, 0.9f, 0.9f, 0, 0, 0.9f, 0.9f}, {3, 4});
  // Anchor 2 (IoU 0.9) is the best of both: object 0 claims it, object 1
  // claims anchor 0 (0.81); anchor 1 (0.31) stays background.
  CHECK(r.matches == Ints{1, kBackground, 0});
  CHECK(r.class_targets == Ints{4, 0, 3});
  // Without objects everything is background.
  MatchResult none = Ssd(anchors, {}, {});
  CHECK(none.matches == Ints{kBackground, kBackground, kBackground});
  CHECK(none.num_positive == 0);
}

TEST_CASE("RetinaNet matching: positives, negatives and the ignored band", "[matching]") {
  // Object [0, 0, 0.8, 0.8] (area 0.64); IoUs per anchor: 0.64, 0.39, 0.11,
  // 0.77, 0.47.
  std::vector<float> anchors = {0, 0, 1,    1,    0, 0,    0.5f, 0.5f, 0.5f, 0.5f,
                                1, 1, 0,    0,    0.7f, 0.7f, 0, 0, 0.5f, 0.6f};
  std::vector<float> box = {0, 0, 0.8f, 0.8f};
  MatchResult r = MatchRetinaNet(anchors, GroundTruth{box, Ints{5}});
  CHECK(r.matches == Ints{0, kBackground, kBackground, 0, kIgnored});
  CHECK(r.class_targets == Ints{5, 0, 0, 5, -1});
  CHECK(r.num_positive == 2);
  // Unit variances: the targets are the plain deltas.
  float expected[4];
  EncodeBoxes(box.data(), anchors.data() + 12, 1, kUnitVariances, expected);
  for (int i = 0; i < 4; ++i) CHECK(r.box_targets[12 + i] == Approx(expected[i]));
}

TEST_CASE("RetinaNet matching: allow_low_quality_matches", "[matching]") {
  // A small object: IoU 0.16 with anchors 0 and 2 (identical), 0.04 with 1.
  std::vector<float> anchors = {0, 0, 0.5f, 0.5f, 0, 0, 1, 1, 0, 0, 0.5f, 0.5f};
  std::vector<float> box = {0, 0, 0.2f, 0.2f};
  MatchResult plain = MatchRetinaNet(anchors, GroundTruth{box, Ints{1}});
  CHECK(plain.matches == Ints{kBackground, kBackground, kBackground});
  RetinaNetMatchOptions options;
  options.allow_low_quality_matches = true;
  MatchResult low = MatchRetinaNet(anchors, GroundTruth{box, Ints{1}}, options);
  CHECK(low.matches == Ints{0, kBackground, 0});  // ties with the highest IoU: both
  CHECK(low.num_positive == 2);
}
