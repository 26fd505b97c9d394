// RetinaNet's graph pieces: ResNet has torchvision's parameter counts, the
// anchors follow the pyramid for any input size, the class head starts at
// the prior, and fitted to one image the loss falls and the post-processing
// finds the object with its class.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "graph/session.h"
#include "models/detection/retinanet.h"
#include "models/layers.h"
#include "models/resnet.h"
#include "ops/ops.h"
#include "tests/models/detector_fit_util.h"

using namespace dflow;
using namespace dflow::models::detection;

namespace {

// Anchors per input size: levels 3..7 of ceil(S / 2^l)^2 cells, 9 per cell.
int64_t RetinaNetAnchors(int64_t size) {
  int64_t total = 0;
  for (int level = 3; level <= 7; ++level) {
    int64_t cells = (size + (int64_t{1} << level) - 1) >> level;
    total += cells * cells * 9;
  }
  return total;
}

}  // namespace

TEST_CASE("ResNet: torchvision's parameter counts without the classifier", "[retinanet]") {
  // torchvision's resnet18 / resnet50 minus fc (512 * 1000 + 1000, 2048 * 1000 + 1000).
  for (auto [depth, parameters, channels] : {std::tuple{18, 11176512, 512},
                                             std::tuple{50, 23508032, 2048}}) {
    Scope scope = Scope::NewRootScope();
    Output images = ops::Placeholder(scope, DType::kFloat32, {-1, 224, 224, 3});
    models::ResNet net = models::BuildResNet(scope, images, {.depth = depth});
    INFO("depth " << depth);
    CHECK(models::CountParameters(net.variables) == parameters);
    REQUIRE(net.features.size() == 3);
    CHECK(net.features[0].shape() == Shape{-1, 28, 28, channels / 4});
    CHECK(net.features[2].shape() == Shape{-1, 7, 7, channels});
  }
}

TEST_CASE("RetinaNet-R50: torchvision's parameter count (91 classes)", "[retinanet]") {
  // torchvision's retinanet_resnet50_fpn has 34,014,999 parameters: its
  // backbone's batch norm is frozen (53,120 gammas and betas are buffers),
  // and its P6 reads P5 (p6_from_p5).
  Scope scope = Scope::NewRootScope();
  RetinaNetNetwork net = BuildRetinaNetNetwork(scope, {.num_classes = 91, .image_size = 64,
                                                       .p6_from_p5 = true});
  CHECK(models::CountParameters(net.variables) == 34014999 + 53120);
  // The paper's P6 on C5 (2048 channels) has 9 * 256 * (2048 - 256) weights more.
  Scope paper = Scope::NewRootScope();
  RetinaNetNetwork on_c5 = BuildRetinaNetNetwork(paper, {.num_classes = 91, .image_size = 64});
  CHECK(models::CountParameters(on_c5.variables) ==
        models::CountParameters(net.variables) + 9 * 256 * (2048 - 256));
}

TEST_CASE("RetinaNet: anchors follow the pyramid of any input size", "[retinanet]") {
  for (int64_t size : {64, 100, 128, 320}) {  // 100: odd maps, 13 <- 7 <- 4
    Scope scope = Scope::NewRootScope();
    RetinaNetOptions options{.num_classes = 3, .image_size = size, .depth = 18};
    RetinaNetNetwork net = BuildRetinaNetNetwork(scope, options);
    INFO("size " << size);
    CHECK(net.anchors.shape() == Shape{RetinaNetAnchors(size), 4});
    CHECK(RetinaNetDefaultAnchors(options).shape() == net.anchors.shape());
    CHECK(net.box_deltas.shape() == Shape{-1, RetinaNetAnchors(size), 4});
    CHECK(net.class_logits.shape() == Shape{-1, RetinaNetAnchors(size), 3});
    // Past the backbone: 8 FPN convolutions and the two heads' 5 layers,
    // one filter and bias each, the heads' shared by all five levels.
    CHECK(net.variables.size() - net.backbone_variables.size() == (8 + 2 * 5) * 2);
    CHECK(!net.batch_norm_updates.empty());
  }
  Scope inference = Scope::NewRootScope();
  CHECK(BuildRetinaNetNetwork(inference, {.image_size = 64, .depth = 18, .training = false})
            .batch_norm_updates.empty());
  CHECK(RetinaNetAnchors(320) == 9 * (40 * 40 + 20 * 20 + 10 * 10 + 5 * 5 + 3 * 3));
}

TEST_CASE("RetinaNet: bad options are refused with their value", "[retinanet]") {
  Scope scope = Scope::NewRootScope();
  CHECK_THROWS_WITH(BuildRetinaNetNetwork(scope, {.num_classes = 0}),
                    Catch::Contains("num_classes must be >= 1, got 0"));
  CHECK_THROWS_WITH(BuildRetinaNetNetwork(scope, {.image_size = 16}),
                    Catch::Contains("image_size must be >= 32, got 16"));
  CHECK_THROWS_WITH(BuildRetinaNetNetwork(scope, {.depth = 34}),
                    Catch::Contains("depth must be 18 or 50, got 34"));
  CHECK_THROWS_WITH(RetinaNetDefaultAnchors({.anchors = {.max_level = 6, .normalized = true}}),
                    Catch::Contains("anchor levels must be 3..7 (P3-P7), got 3..6"));
  CHECK_THROWS_WITH(RetinaNetDefaultAnchors({.anchors = {}}),
                    Catch::Contains("anchors must be normalized"));
}

TEST_CASE("RetinaNet: every class starts at the prior probability 0.01", "[retinanet]") {
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(5);
  RetinaNetNetwork net = BuildRetinaNetNetwork(scope, {.num_classes = 2, .image_size = 64,
                                                       .depth = 18});
  Session session(scope);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(scope)});
  Output image = ops::RandomUniform(scope, Tensor::FromVector<int64_t>({1, 64, 64, 3}),
                                    DType::kFloat32);
  Tensor pixels = session.Run({}, {image})[0];
  Tensor p = session.Run({{net.images, pixels}}, {ops::Sigmoid(scope, net.class_logits)})[0];
  float lowest = 1, highest = 0;
  for (int64_t i = 0; i < p.NumElements(); ++i) {
    lowest = std::min(lowest, p.data<float>()[i]);
    highest = std::max(highest, p.data<float>()[i]);
  }
  CHECK(lowest > 0.005f);
  CHECK(highest < 0.02f);
}

TEST_CASE("RetinaNet: fitted to one image, the loss falls and NMS returns the object",
          "[retinanet]") {
  const int64_t size = 64;
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(3);
  RetinaNetNetwork net = BuildRetinaNetNetwork(scope, {.num_classes = 2, .image_size = size,
                                                       .depth = 18});
  RetinaNetLoss loss = BuildRetinaNetLoss(scope, net);
  Detections detections = BuildRetinaNetPostprocess(scope, net, {.max_detections = 10});
  testing::OneObject object = testing::MakeOneObject(size);
  std::vector<int32_t> label = {2};
  MatchResult match = MatchRetinaNet({net.anchors.data<float>(), size_t(net.anchors.NumElements())},
                                     GroundTruth{object.box, label},
                                     {.allow_low_quality_matches = true});
  REQUIRE(match.num_positive >= 1);
  testing::OneImageFit fit = testing::FitOneImage(
      scope, loss.loss, net.variables, net.batch_norm_updates,
      testing::OneImageFeeds(net.images, loss.box_targets, loss.class_targets, object, match),
      1e-3, /*steps=*/40);
  CHECK(fit.last_loss < 0.3f * fit.first_loss);
  testing::CheckFindsObject(*fit.session, net.images, detections, object, 2.0f);
}

namespace {

// Focal loss (alpha 0.25, gamma 2) and smooth-L1 (beta 1/9) over the fetched
// outputs, in double: the losses' sums before dividing by the positives.
struct ReferenceLoss {
  double focal = 0, box = 0, positives = 0;
};

ReferenceLoss Reference(const Tensor& logits, const Tensor& deltas, const Tensor& box_targets,
                        const std::vector<int32_t>& labels) {
  ReferenceLoss r;
  const int64_t classes = logits.shape().dim(2);
  for (size_t a = 0; a < labels.size(); ++a) {
    if (labels[a] < 0) continue;
    for (int64_t k = 0; k < classes; ++k) {
      const bool object = labels[a] == k + 1;
      const double p = 1 / (1 + std::exp(-double(logits.data<float>()[a * classes + k])));
      const double p_t = object ? p : 1 - p, alpha_t = object ? 0.25 : 0.75;
      r.focal -= alpha_t * (1 - p_t) * (1 - p_t) * std::log(p_t);
    }
    if (labels[a] == 0) continue;
    r.positives += 1;
    for (size_t j = 4 * a; j < 4 * a + 4; ++j) {
      const double d = std::abs(double(deltas.data<float>()[j]) - box_targets.data<float>()[j]);
      const double beta = 1.0 / 9;
      r.box += d < beta ? 0.5 * d * d / beta : d - 0.5 * beta;
    }
  }
  return r;
}

}  // namespace

TEST_CASE("RetinaNet: the loss is the focal loss and smooth-L1 of the fetched outputs",
          "[retinanet]") {
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(7);
  RetinaNetNetwork net = BuildRetinaNetNetwork(scope, {.num_classes = 2, .image_size = 32,
                                                       .depth = 18});
  RetinaNetLoss loss = BuildRetinaNetLoss(scope, net);
  Session session(scope);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(scope)});
  // Labels 1, 2, ignored and background in turn; box targets in [-0.3, 0.3].
  const int64_t anchors = net.anchors.shape().dim(0);
  std::vector<int32_t> labels(static_cast<size_t>(anchors));
  std::vector<float> targets(static_cast<size_t>(anchors * 4));
  for (size_t a = 0; a < labels.size(); ++a) labels[a] = a % 7 < 3 ? int32_t(a % 7) - 1 : 0;
  for (size_t j = 0; j < targets.size(); ++j) targets[j] = 0.3f * std::sin(float(j));
  Tensor box_targets = Tensor::FromVector(targets, Shape{1, anchors, 4});
  std::vector<Tensor> out = session.Run(
      {{net.images, testing::MakeOneObject(32).image},
       {loss.box_targets, box_targets},
       {loss.class_targets, Tensor::FromVector(labels, Shape{1, anchors})}},
      {net.class_logits, net.box_deltas, loss.class_loss, loss.box_loss, loss.loss});
  ReferenceLoss r = Reference(out[0], out[1], box_targets, labels);
  REQUIRE(r.positives > 0);
  CHECK(out[2].scalar<float>() == Approx(r.focal / r.positives).epsilon(1e-4));
  CHECK(out[3].scalar<float>() == Approx(r.box / r.positives).epsilon(1e-4));
  CHECK(out[4].scalar<float>() == Approx((r.focal + r.box) / r.positives).epsilon(1e-4));
}
