// SSD fitted to one image (detector_fit_util.h), the same check for every
// backbone: the loss falls below 30% of its start and NMS then returns the
// object with its class.
#pragma once

#include "models/detection/ssd.h"
#include "tests/models/detector_fit_util.h"

namespace dflow::testing {

// `options` with two classes at 64 px; the object is class 2.
inline void CheckSsdFitsOneImage(models::detection::SsdOptions options) {
  namespace detection = models::detection;
  options.num_classes = 2;
  options.image_size = 64;
  Scope scope = Scope::NewRootScope();
  scope.graph().set_seed(3);
  detection::SsdNetwork net = detection::BuildSsdNetwork(scope, options);
  detection::SsdLoss loss = detection::BuildSsdLoss(scope, net);
  detection::SsdDetections detections =
      detection::BuildSsdPostprocess(scope, net, {.max_detections = 10});
  OneObject object = MakeOneObject(options.image_size);
  std::vector<int32_t> label = {2};
  detection::MatchResult match =
      detection::MatchSsd({net.anchors.data<float>(), size_t(net.anchors.NumElements())},
                          detection::GroundTruth{object.box, label});
  REQUIRE(match.num_positive >= 1);
  OneImageFit fit = FitOneImage(
      scope, loss.loss, net.variables, net.batch_norm_updates,
      OneImageFeeds(net.images, loss.box_targets, loss.class_targets, object, match), 1e-2);
  CHECK(fit.last_loss < 0.3f * fit.first_loss);
  CheckFindsObject(*fit.session, net.images, detections, object, 2.0f);
}

}  // namespace dflow::testing
