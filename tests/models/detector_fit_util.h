// Fitting a detector's training graph to one image (detection_test_util.h's
// OneObject), shared by the SSD and RetinaNet tests: the fed targets from a
// match, a few Adam steps, and the check that NMS then finds the object.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <vector>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "graph/session.h"
#include "models/detection/matching.h"
#include "models/detection/postprocess.h"
#include "ops/ops.h"
#include "tests/models/detection_test_util.h"

namespace dflow::testing {

// The feeds of one training step: the image and the match's targets.
inline FeedList OneImageFeeds(const Output& images, const Output& box_targets,
                              const Output& class_targets, const OneObject& object,
                              const models::detection::MatchResult& match) {
  const int64_t anchors = static_cast<int64_t>(match.class_targets.size());
  return {{images, object.image},
          {box_targets, Tensor::FromVector(match.box_targets, Shape{1, anchors, 4})},
          {class_targets, Tensor::FromVector(match.class_targets, Shape{1, anchors})}};
}

struct OneImageFit {
  std::unique_ptr<Session> session;  // the trained variables
  float first_loss = 0, last_loss = 0;
};

// Adam at `learning_rate` on `loss` over `variables`, the batch-norm
// updates run with each of `steps` steps on the same feeds.
inline OneImageFit FitOneImage(const Scope& scope, const Output& loss,
                               const std::vector<Output>& variables,
                               const std::vector<Output>& batch_norm_updates, const FeedList& feeds,
                               double learning_rate, int steps = 60) {
  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(scope, learning_rate));
  std::vector<Output> deps(batch_norm_updates);
  deps.emplace_back(adam.Minimize(scope, loss, variables));
  Node* train = ops::NoOp(scope.WithControlDependencies(deps).WithOpName("train"));
  OneImageFit fit;
  fit.session = std::make_unique<Session>(scope);
  fit.session->Run({}, {}, {ops::GlobalVariablesInitializer(scope)});
  fit.first_loss = fit.session->Run(feeds, {loss})[0].scalar<float>();
  REQUIRE(std::isfinite(fit.first_loss));
  fit.last_loss = fit.first_loss;
  for (int step = 0; step < steps; ++step)
    fit.last_loss = fit.session->Run(feeds, {loss}, {train})[0].scalar<float>();
  return fit;
}

// The best detection is the object, with its class; past the valid
// detections the classes are 0. Inference runs with the batch statistics
// of this one image (the training graph's batch norm), so no moving
// averages need to have converged.
inline void CheckFindsObject(Session& session, const Output& images,
                             const models::detection::Detections& detections,
                             const OneObject& object, float label) {
  std::vector<Tensor> out = session.Run({{images, object.image}},
                                        {detections.boxes, detections.classes, detections.valid});
  const int32_t valid = out[2].data<int32_t>()[0];
  REQUIRE(valid >= 1);
  CHECK(out[1].data<float>()[0] == label);
  for (int i = 0; i < 4; ++i) CHECK(out[0].data<float>()[i] == Approx(object.box[i]).margin(0.08));
  for (int64_t d = valid; d < out[1].shape().dim(1); ++d) CHECK(out[1].data<float>()[d] == 0.0f);
}

}  // namespace dflow::testing
