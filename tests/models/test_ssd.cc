// SSD's graph pieces: the default boxes follow the feature maps for any
// input size and width multiplier, the loss is finite and falls when the
// network is fitted to one image, and the post-processing finds the object
// it was fitted to, with its class.
#include <catch2/catch.hpp>

#include <cmath>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "graph/session.h"
#include "models/detection/matching.h"
#include "models/detection/ssd.h"
#include "ops/ops.h"
#include "tests/models/detection_test_util.h"

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
  const int64_t size = 64;
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(3);
  SsdNetwork net = BuildSsdNetwork(scope, {.num_classes = 2, .image_size = size,
                                           .width_multiplier = 0.25});
  SsdLoss loss = BuildSsdLoss(scope, net);
  SsdDetections detections = BuildSsdPostprocess(scope, net, {.max_detections = 10});
  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(scope, 1e-2));
  std::vector<Output> deps(net.batch_norm_updates);
  deps.emplace_back(adam.Minimize(scope, loss.loss, net.variables));
  Node* train = ops::NoOp(scope.WithControlDependencies(deps).WithOpName("train"));
  Session session(scope);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(scope)});

  testing::OneObject object = testing::MakeOneObject(size);
  std::vector<int32_t> label = {2};
  MatchResult match = MatchSsd({net.anchors.data<float>(), size_t(net.anchors.NumElements())},
                               GroundTruth{object.box, label});
  REQUIRE(match.num_positive >= 1);
  const int64_t anchors = net.anchors.shape().dim(0);
  Tensor box_targets = Tensor::FromVector(match.box_targets, Shape{1, anchors, 4});
  Tensor class_targets = Tensor::FromVector(match.class_targets, Shape{1, anchors});
  FeedList feeds = {{net.images, object.image},
                    {loss.box_targets, box_targets},
                    {loss.class_targets, class_targets}};
  float first = session.Run(feeds, {loss.loss})[0].scalar<float>();
  REQUIRE(std::isfinite(first));
  float last = first;
  for (int step = 0; step < 60; ++step) last = session.Run(feeds, {loss.loss}, {train})[0].scalar<float>();
  CHECK(last < 0.3f * first);

  // Inference with the batch statistics of this one image: the training
  // graph's batch norm, so no moving averages need to have converged.
  std::vector<Tensor> out = session.Run({{net.images, object.image}},
                                        {detections.boxes, detections.scores, detections.classes,
                                         detections.valid});
  REQUIRE(out[3].data<int32_t>()[0] >= 1);
  CHECK(out[2].data<float>()[0] == 2.0f);
  const float* best = out[0].data<float>();
  for (int i = 0; i < 4; ++i) CHECK(best[i] == Approx(object.box[i]).margin(0.08));
  // Past the valid detections, the classes are 0.
  int32_t valid = out[3].data<int32_t>()[0];
  for (int32_t d = valid; d < 10; ++d) CHECK(out[2].data<float>()[d] == 0.0f);
}
