// SSD's graph pieces: the default boxes follow the feature maps for any
// input size and width multiplier, the loss is finite and falls when the
// network is fitted to one image, and the post-processing finds the object
// it was fitted to, with its class.
#include <catch2/catch.hpp>

#include "models/detection/ssd.h"
#include "ops/ops.h"
#include "tests/models/ssd_fit_util.h"

using namespace dflow;
using namespace dflow::models::detection;

namespace {

// Anchors per input size: six maps of ceil(S / 16), ceil(S / 32), ... cells,
// 6 boxes per cell.
int64_t ExpectedAnchors(int64_t size) {
  int64_t total = 0, f = size;
  for (int i = 0; i < 4; ++i) f = (f + 1) / 2;  // stride 16
  for (int map = 0; map < 6; ++map, f = (f + 1) / 2) total += f * f * 6;
  return total;
}

}  // namespace

TEST_CASE("SSD: default boxes follow the feature maps of any input size", "[ssd]") {
  for (int64_t size : {64, 96, 160, 300}) {
    Scope scope = Scope::NewRootScope();
    SsdNetwork net = BuildSsdNetwork(scope, {.num_classes = 3, .image_size = size,
                                             .width_multiplier = 0.25});
    INFO("size " << size);
    CHECK(net.anchors.shape() == Shape{ExpectedAnchors(size), 4});
    CHECK(net.box_deltas.shape().dim(1) == ExpectedAnchors(size));
    CHECK(net.class_logits.shape().dim(2) == 4);
    CHECK(net.backbone_variables.size() < net.variables.size());
  }
  CHECK(ExpectedAnchors(300) == 6 * (19 * 19 + 10 * 10 + 5 * 5 + 3 * 3 + 2 * 2 + 1));
}

TEST_CASE("SSD: bad options are refused with their value", "[ssd]") {
  Scope scope = Scope::NewRootScope();
  CHECK_THROWS_WITH(BuildSsdNetwork(scope, {.num_classes = 0}),
                    Catch::Contains("num_classes must be >= 1, got 0"));
  CHECK_THROWS_WITH(BuildSsdNetwork(scope, {.image_size = 32}),
                    Catch::Contains("image_size must be >= 64, got 32"));
}

TEST_CASE("SSD: fitted to one image, the loss falls and NMS returns the object", "[ssd]") {
  testing::CheckSsdFitsOneImage({.width_multiplier = 0.25});
}
