// Box encode/decode: the array and graph forms agree, decode(encode(b)) = b,
// hand-computed deltas, and a numeric gradient check of DecodeBoxes.
#include <catch2/catch.hpp>

#include <cmath>

#include "autodiff/gradient_checker.h"
#include "graph/session.h"
#include "models/detection/box_coding.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::models::detection;

namespace {

// Three (y1, x1, y2, x2) boxes and anchors, normalised coordinates.
const std::vector<float> kBoxes = {0.1f, 0.2f, 0.5f, 0.4f, 0.0f, 0.0f, 1.0f, 1.0f,
                                   0.3f, 0.35f, 0.32f, 0.9f};
const std::vector<float> kAnchors = {0.15f, 0.25f, 0.45f, 0.45f, 0.2f, 0.2f, 0.8f, 0.8f,
                                     0.25f, 0.4f, 0.35f, 0.6f};

Tensor Boxes(const std::vector<float>& v) {
  return Tensor::FromVector(v, Shape{static_cast<int64_t>(v.size() / 4), 4});
}

}  // namespace

TEST_CASE("EncodeBoxes on arrays: hand-computed SSD deltas", "[box_coding]") {
  // Box centre (0.3, 0.3), size 0.2 x 0.4 (w x h); anchor centre (0.35, 0.3),
  // size 0.2 x 0.3. dx = (0.3 - 0.35) / 0.2 / 0.1, dh = log(0.4 / 0.3) / 0.2.
  float d[4];
  EncodeBoxes(kBoxes.data(), kAnchors.data(), 1, kSsdVariances, d);
  CHECK(d[0] == Approx(-2.5));
  CHECK(d[1] == Approx(0.0).margin(1e-5));
  CHECK(d[2] == Approx(0.0).margin(1e-5));
  CHECK(d[3] == Approx(std::log(4.0 / 3.0) / 0.2));
}

TEST_CASE("Box coding: decode(encode(b)) == b and the graph form agrees", "[box_coding]") {
  for (const BoxVariances& v : {kSsdVariances, kUnitVariances}) {
    std::vector<float> deltas(kBoxes.size()), back(kBoxes.size());
    EncodeBoxes(kBoxes.data(), kAnchors.data(), 3, v, deltas.data());
    DecodeBoxes(deltas.data(), kAnchors.data(), 3, v, back.data());
    for (size_t i = 0; i < kBoxes.size(); ++i) CHECK(back[i] == Approx(kBoxes[i]).margin(1e-6));

    Scope s = Scope::NewRootScope();
    auto boxes = ops::Placeholder(s, DType::kFloat32, {-1, 3, 4});  // a batch of one
    auto anchors = ops::Const(s, Boxes(kAnchors));
    Output encoded = EncodeBoxes(s, boxes, anchors, v);
    Output decoded = DecodeBoxes(s, encoded, anchors, v);
    Session session(s);
    auto out = session.Run({{boxes, Tensor::FromVector(kBoxes, Shape{1, 3, 4})}},
                           {encoded, decoded});
    testing::ExpectClose(out[0], Tensor::FromVector(deltas, Shape{1, 3, 4}), 1e-5, 1e-5);
    testing::ExpectClose(out[1], Tensor::FromVector(kBoxes, Shape{1, 3, 4}), 1e-5, 1e-6);
  }
}

TEST_CASE("DecodeBoxes clamps large log-scales like torchvision", "[box_coding]") {
  std::vector<float> deltas = {0, 0, 100, 100};
  float b[4];
  DecodeBoxes(deltas.data(), kAnchors.data() + 4, 1, kUnitVariances, b);
  CHECK(b[3] - b[1] == Approx(0.6 * 1000 / 16));
  CHECK(std::isfinite(b[2]));
}

TEST_CASE("DecodeBoxes and EncodeBoxes: numeric gradient check", "[box_coding]") {
  Scope s = Scope::NewRootScope();
  auto deltas = ops::Placeholder(s, DType::kFloat32, {2, 3, 4});
  auto anchors = ops::Placeholder(s, DType::kFloat32, {3, 4});
  Output decoded = DecodeBoxes(s, deltas, anchors, kSsdVariances);
  auto r = autodiff::CheckGradients(s, {deltas, anchors},
                                    {testing::RandomTensor(DType::kFloat32, {2, 3, 4}, 7, -1, 1),
                                     Boxes(kAnchors)},
                                    decoded);
  INFO(r.worst);
  CHECK(r.max_error < 1e-2);

  Scope e = Scope::NewRootScope();
  auto boxes = ops::Placeholder(e, DType::kFloat32, {3, 4});
  Output encoded = EncodeBoxes(e, boxes, ops::Const(e, Boxes(kAnchors)), kSsdVariances);
  auto r2 = autodiff::CheckGradients(e, {boxes}, {Boxes(kBoxes)}, encoded);
  INFO(r2.worst);
  CHECK(r2.max_error < 5e-2);
}
