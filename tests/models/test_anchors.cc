// SSD default boxes and RetinaNet anchors: counts per map, scales, ratios,
// centres and the documented order (per map, per cell, per anchor type).
#include <catch2/catch.hpp>

#include <cmath>

#include "models/detection/anchors.h"
#include "models/mobilenet_ssd.h"
#include "ops/ops.h"

using namespace dflow;
using namespace dflow::models;
using namespace dflow::models::detection;

namespace {

struct Wh {
  float cy, cx, h, w;
};
Wh At(const Tensor& a, int64_t i) {
  const float* b = a.data<float>() + 4 * i;
  return {(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, b[2] - b[0], b[3] - b[1]};
}

}  // namespace

TEST_CASE("SSD300 default boxes: six per cell on maps 19..1, scales 0.2..0.9", "[anchors]") {
  Tensor a = SsdAnchors(MobileNetSsd300Layers());
  // (361 + 100 + 25 + 9 + 4 + 1) cells x 6 boxes, as MobileNetSsd's heads.
  REQUIRE(a.shape() == Shape{3000, 4});
  // First cell of the 19x19 map: centre (0.5/19, 0.5/19), s = 0.2.
  Wh b0 = At(a, 0);
  CHECK(b0.cx == Approx(0.5 / 19));
  CHECK(b0.cy == Approx(0.5 / 19));
  CHECK(b0.w == Approx(0.2));
  CHECK(b0.h == Approx(0.2));
  // Extra box: sqrt(s_1 s_2) with s_2 = 0.2 + 0.7 / 5 = 0.34.
  CHECK(At(a, 1).w == Approx(std::sqrt(0.2 * 0.34)));
  // Ratio 2: w = s sqrt(2), h = s / sqrt(2), then its transpose.
  CHECK(At(a, 2).w == Approx(0.2 * std::sqrt(2.0)));
  CHECK(At(a, 2).h == Approx(0.2 / std::sqrt(2.0)));
  CHECK(At(a, 3).h == Approx(0.2 * std::sqrt(2.0)));
  CHECK(At(a, 4).w == Approx(0.2 * std::sqrt(3.0)));
  // Second cell (row 0, column 1) starts at box 6.
  CHECK(At(a, 6).cx == Approx(1.5 / 19));
  CHECK(At(a, 6).cy == Approx(0.5 / 19));
  // Row 1 of the first map starts at cell 19.
  CHECK(At(a, 19 * 6).cy == Approx(1.5 / 19));
  // The last map (1x1): s = 0.9, centred, extra box sqrt(0.9 * 1).
  Wh last = At(a, 2994);
  CHECK(last.cx == Approx(0.5));
  CHECK(last.w == Approx(0.9));
  CHECK(At(a, 2995).w == Approx(std::sqrt(0.9)));
}

TEST_CASE("SSD default boxes: per-layer ratios and clipping", "[anchors]") {
  std::vector<SsdLayer> layers = {{2, {2.0f}}, {1, {3.0f}}};
  Tensor a = SsdAnchors(layers, {0.2f, 0.9f, true});
  REQUIRE(a.shape() == Shape{4 * 4 + 1 * 4, 4});
  for (float v : a.flat<float>()) {
    CHECK(v >= 0.0f);
    CHECK(v <= 1.0f);
  }
  // The 1x1 map: s = 0.9, extra box sqrt(0.9), both inside [0, 1]; its
  // ratio-3 box (w = 0.9 sqrt(3) > 1) overhangs unless clipped.
  CHECK(At(a, 16).w == Approx(0.9));
  CHECK(At(a, 17).w == Approx(std::sqrt(0.9)));
  CHECK(At(a, 18).w == Approx(1.0));
  Tensor unclipped = SsdAnchors(layers);
  CHECK(At(unclipped, 18).w == Approx(0.9 * std::sqrt(3.0)));
  CHECK(unclipped.data<float>()[4 * 18 + 1] < 0.0f);
}

TEST_CASE("RetinaNet anchors: P3-P7, 9 per cell, 32..512 px", "[anchors]") {
  Tensor a = RetinaNetAnchors(512, 640);
  int64_t cells = 0;
  for (int64_t s : {8, 16, 32, 64, 128}) cells += ((512 + s - 1) / s) * ((640 + s - 1) / s);
  REQUIRE(a.shape() == Shape{cells * 9, 4});
  // First P3 cell centred at (4, 4); ratio 1/2 scale 1 first: area 32^2,
  // h = 32 sqrt(1/2), w = 32 / sqrt(1/2).
  Wh b0 = At(a, 0);
  CHECK(b0.cx == Approx(4));
  CHECK(b0.h * b0.w == Approx(32 * 32));
  CHECK(b0.h / b0.w == Approx(0.5));
  // Index 4 = ratio 1, scale 2^(1/3).
  CHECK(At(a, 4).w == Approx(32 * std::cbrt(2.0)));
  CHECK(At(a, 9).cx == Approx(12));  // next cell, same row
  // The last anchor: P7, ratio 2, scale 2^(2/3), base 512, last cell.
  Wh last = At(a, cells * 9 - 1);
  CHECK(std::sqrt(last.h * last.w) == Approx(512 * std::cbrt(4.0)));
  CHECK(last.cy == Approx(3.5 * 128));
  CHECK(last.cx == Approx(4.5 * 128));
  RetinaNetAnchorOptions norm;
  norm.normalized = true;
  Tensor n = RetinaNetAnchors(512, 640, norm);
  CHECK(n.data<float>()[1] == Approx(a.data<float>()[1] / 640));
  CHECK(n.data<float>()[0] == Approx(a.data<float>()[0] / 512));
}

TEST_CASE("SSD300 default boxes line up with MobileNetV1-SSD's heads", "[anchors]") {
  Scope s = Scope::NewRootScope();
  auto images = ops::Placeholder(s, DType::kFloat32, {-1, 300, 300, 3});
  MobileNetSsd net = BuildMobileNetSsd(s, images);
  std::vector<SsdLayer> layers = MobileNetSsd300Layers();
  REQUIRE(net.features.size() == layers.size());
  int64_t boxes = 0;
  for (size_t k = 0; k < layers.size(); ++k) {
    CHECK(net.features[k].shape().dim(1) == layers[k].feature_size);
    CHECK(net.features[k].shape().dim(2) == layers[k].feature_size);
    // The heads predict 6 boxes per cell (mobilenet_ssd.h): 2 + 2 ratios.
    CHECK(2 + 2 * layers[k].ratios.size() == 6);
    boxes += net.features[k].shape().dim(1) * net.features[k].shape().dim(2) * 6;
  }
  CHECK(SsdAnchors(layers).shape().dim(0) == boxes);
}
