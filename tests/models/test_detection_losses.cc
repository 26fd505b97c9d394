// Detection losses: hand-computed values on tiny inputs, numeric gradient
// checks, and hard-negative mining picking exactly the top negatives.
#include <catch2/catch.hpp>

#include <cmath>

#include "autodiff/gradient_checker.h"
#include "graph/session.h"
#include "models/detection/anchors.h"
#include "models/detection/losses.h"
#include "models/detection/matching.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::models::detection;

namespace {

Tensor F(const std::vector<float>& v, Shape shape) { return Tensor::FromVector(v, shape); }

float Eval(const Scope& s, const FeedList& feeds, const Output& y) {
  Session session(s);
  return session.Run(feeds, {y})[0].scalar<float>();
}

double Softplus(double x) { return std::log1p(std::exp(x)); }

// The focal loss of one logit, naively: -alpha_t (1 - p_t)^2 log p_t.
double NaiveFocal(double x, double t) {
  double p = 1 / (1 + std::exp(-x));
  double pt = t > 0 ? p : 1 - p;
  double alpha_t = t > 0 ? 0.25 : 0.75;
  return -alpha_t * (1 - pt) * (1 - pt) * std::log(pt);
}

}  // namespace

TEST_CASE("SmoothL1Loss: hand-computed sums over positive anchors", "[detection_losses]") {
  Scope s = Scope::NewRootScope();
  auto pred = ops::Placeholder(s, DType::kFloat32, {1, 2, 4});
  Tensor zeros = Tensor::Zeros(DType::kFloat32, {1, 2, 4});
  Tensor positive = F({1, 0}, {1, 2});
  Tensor values = F({0.5f, -2, 0, 1.5f, 10, 10, 10, 10}, {1, 2, 4});
  // beta 1: 0.5 * 0.25 + (2 - 0.5) + 0 + (1.5 - 0.5); the second anchor is negative.
  CHECK(Eval(s, {{pred, values}}, SmoothL1Loss(s, pred, zeros, positive)) == Approx(2.625));
  CHECK(Eval(s, {{pred, values}}, SmoothL1Loss(s, pred, zeros, positive, 0.0f)) == Approx(4.0));
  // beta 0.5 on the same: 0.5 - 0.25, 2 - 0.25, 0, 1.5 - 0.25.
  CHECK(Eval(s, {{pred, values}}, SmoothL1Loss(s, pred, zeros, positive, 0.5f)) == Approx(3.25));
}

TEST_CASE("SmoothL1Loss: numeric gradient check", "[detection_losses]") {
  Scope s = Scope::NewRootScope();
  auto pred = ops::Placeholder(s, DType::kFloat32, {2, 2, 4});
  Tensor targets = F({0, 0.1f, 0.2f, 0.3f, 0, 0, 0, 0, 1, 1, 1, 1, -1, 0, 1, 0}, {2, 2, 4});
  Tensor values = F({0.4f, -0.6f, 0.9f, 1.6f, 0.2f, 0.3f, 0.1f, 0.5f,
                     1.3f, 0.2f, 3.0f, 1.1f, -2.0f, 0.25f, 0.8f, -0.7f}, {2, 2, 4});
  Output loss = SmoothL1Loss(s, pred, targets, F({1, 0, 1, 1}, {2, 2}), 0.5f);
  auto r = autodiff::CheckGradients(s, {pred}, {values}, loss);
  INFO(r.worst);
  CHECK(r.max_error < 1e-2);
}

TEST_CASE("SigmoidFocalLoss: hand-computed, normalised, stable for large logits",
          "[detection_losses]") {
  Scope s = Scope::NewRootScope();
  auto logits = ops::Placeholder(s, DType::kFloat32, {1, 3, 2});
  Tensor targets = F({1, 0, 0, 0, 0, 1}, {1, 3, 2});
  Tensor weights = F({1, 0, 1}, {1, 3});  // anchor 1 ignored
  Output loss = SigmoidFocalLoss(s, logits, targets, weights, 2.0f);
  double expected =
      (NaiveFocal(0, 1) + NaiveFocal(2, 0) + NaiveFocal(-1, 0) + NaiveFocal(0.5, 1)) / 2;
  CHECK(Eval(s, {{logits, F({0, 2, 50, -50, -1, 0.5f}, {1, 3, 2})}}, loss) == Approx(expected));
  // Logits of +-100: -log p_t computed from logits is 100, not inf.
  float big = Eval(s, {{logits, F({-100, 100, 0, 0, 100, 100}, {1, 3, 2})}}, loss);
  // anchor 0: 0.25 * 100 + 0.75 * 100; anchor 2: 0.75 * 100 + ~0.
  CHECK(big == Approx((25.0 + 75.0 + 75.0) / 2));
  // num_positive 0 divides by 1.
  Output unnormalised = SigmoidFocalLoss(s, logits, targets, weights, 0.0f);
  CHECK(Eval(s, {{logits, F({0, 2, 50, -50, -1, 0.5f}, {1, 3, 2})}}, unnormalised) ==
        Approx(2 * expected));
}

TEST_CASE("SigmoidFocalLoss: numeric gradient check", "[detection_losses]") {
  Scope s = Scope::NewRootScope();
  auto logits = ops::Placeholder(s, DType::kFloat32, {2, 3, 2});
  Tensor targets = F({1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 0}, {2, 3, 2});
  Tensor weights = F({1, 1, 0, 1, 1, 1}, {2, 3});
  Output loss = SigmoidFocalLoss(s, logits, targets, weights, 3.0f);
  auto r = autodiff::CheckGradients(
      s, {logits}, {testing::RandomTensor(DType::kFloat32, {2, 3, 2}, 11, -3, 3)}, loss);
  INFO(r.worst);
  CHECK(r.max_error < 1e-2);
}

TEST_CASE("HardNegativeMask keeps exactly the top 3 * num_pos negatives per image",
          "[detection_losses]") {
  Scope s = Scope::NewRootScope();
  // Image 0: one positive, four negatives: the three worst (0.9, 0.9, 0.5);
  // the ignored anchor (-1) never counts, whatever its loss.
  // Image 1: two positives want six negatives; only three exist: all.
  // Image 2: one positive, a four-way tie: the three lowest indices.
  Tensor loss = F({0.5f, 0.9f, 0.1f, 0.9f, 0.7f, 2.0f,  //
                   0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f,  //
                   0.3f, 0.3f, 0.3f, 0.3f, 0.0f, 9.0f},
                  {3, 6});
  Tensor labels = Tensor::FromVector<int32_t>({0, 0, 0, 0, 1, -1,  //
                                               2, 2, 0, 0, -1, 0,  //
                                               0, 0, 0, 0, 1, -1},
                                              {3, 6});
  Session session(s);
  Tensor mask = session.Run({}, {HardNegativeMask(s, loss, labels)})[0];
  testing::ExpectEqual(mask, F({1, 1, 0, 1, 0, 0,  //
                                0, 0, 1, 1, 0, 1,  //
                                1, 1, 1, 0, 0, 0},
                               {3, 6}));
}

TEST_CASE("SsdConfidenceLoss: mined softmax loss, value and gradient", "[detection_losses]") {
  Scope s = Scope::NewRootScope();
  auto logits = ops::Placeholder(s, DType::kFloat32, {1, 6, 2});
  Tensor labels = Tensor::FromVector<int32_t>({1, 0, 0, 0, 0, -1}, {1, 6});
  // Two classes, logits (0, z): a negative's loss is softplus(z), the
  // positive's (class 1) is log 2. z = 1, -1, 2, 0 for the negatives: the
  // mined three are z = 2, 1, 0; the ignored anchor's big loss is left out.
  Tensor values = F({0, 0, 0, 1, 0, -1, 0, 2, 0, 0, 0, 5}, {1, 6, 2});
  Output loss = SsdConfidenceLoss(s, logits, labels);
  double expected = std::log(2.0) + Softplus(2) + Softplus(1) + Softplus(0);
  CHECK(Eval(s, {{logits, values}}, loss) == Approx(expected));
  auto r = autodiff::CheckGradients(s, {logits}, {values}, loss);
  INFO(r.worst);
  CHECK(r.max_error < 1e-2);
}

TEST_CASE("SSD targets from matching feed the losses: perfect predictions, zero box loss",
          "[detection_losses]") {
  // Default boxes of a 2x2 and a 1x1 map, two objects, MatchSsd's targets
  // as the head's box output: the smooth-L1 sum is 0, and the mined softmax
  // loss counts 3 negatives per positive.
  Tensor anchors = SsdAnchors({{2, {2.0f}}, {1, {}}});
  const int64_t a = anchors.shape().dim(0);
  std::vector<float> boxes = {0.1f, 0.1f, 0.4f, 0.45f, 0.3f, 0.2f, 0.95f, 0.9f};
  std::vector<int32_t> labels = {1, 2};
  MatchResult m = MatchSsd(anchors.flat<float>(), GroundTruth{boxes, labels});
  REQUIRE(m.num_positive >= 2);
  std::vector<float> positive(a);
  for (int64_t i = 0; i < a; ++i) positive[i] = m.matches[i] >= 0 ? 1.0f : 0.0f;
  Scope s = Scope::NewRootScope();
  Tensor targets = F(m.box_targets, {1, a, 4});
  Output box_loss = SmoothL1Loss(s, targets, targets, F(positive, {1, a}));
  CHECK(Eval(s, {}, box_loss) == 0.0f);
  // Uniform logits over 3 classes: every kept anchor costs log 3.
  Output conf = SsdConfidenceLoss(s, Tensor::Zeros(DType::kFloat32, {1, a, 3}),
                                  Tensor::FromVector(m.class_targets, {1, a}));
  int64_t kept = m.num_positive + std::min<int64_t>(3 * m.num_positive, a - m.num_positive);
  CHECK(Eval(s, {}, conf) == Approx(kept * std::log(3.0) / m.num_positive));
}
