// Model parallelism by part (models/model_parts.h): each detector puts its
// backbone, extras and heads on the devices asked for, and the split network
// run by a three-device session computes the unsplit network's outputs bit
// for bit (placement and partitioning add the Send/Recv pairs, nothing else).
#include <catch2/catch.hpp>

#include <functional>
#include <set>

#include "graph/session.h"
#include "models/detection/retinanet.h"
#include "models/detection/ssd.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::models;
using namespace dflow::models::detection;
using dflow::testing::ExpectEqual;
using dflow::testing::RandomTensor;

namespace {

const std::string kDevice[] = {"/job:localhost/replica:0/task:0/device:CPU:0",
                               "/job:localhost/replica:0/task:0/device:CPU:1",
                               "/job:localhost/replica:0/task:0/device:CPU:2"};
const ModelPartDevices kParts{kDevice[0], kDevice[1], kDevice[2]};

struct BuiltParts {
  Output images, boxes, classes;
  std::vector<Output> variables, backbone_variables;
};

using Builder = std::function<BuiltParts(const Scope&, const ModelPartDevices&)>;

BuiltParts Ssd(const Scope& scope, const ModelPartDevices& devices, SsdBackbone backbone) {
  SsdNetwork net = BuildSsdNetwork(scope, {.backbone = backbone,
                                           .num_classes = 2,
                                           .image_size = 64,
                                           .width_multiplier = backbone == SsdBackbone::kMobileNetV1 ? 0.25 : 1.0,
                                           .training = false,
                                           .devices = devices});
  return {net.images, net.box_deltas, net.class_logits, net.variables, net.backbone_variables};
}

BuiltParts RetinaNet(const Scope& scope, const ModelPartDevices& devices) {
  RetinaNetNetwork net =
      BuildRetinaNetNetwork(scope, {.num_classes = 2, .image_size = 64, .depth = 18, .training = false,
                                    .devices = devices});
  return {net.images, net.box_deltas, net.class_logits, net.variables, net.backbone_variables};
}

void CheckSplit(const Builder& build) {
  // Where each part's variables ask to be.
  Scope split_scope = Scope::NewRootScope();
  split_scope.graph().set_seed(7);
  BuiltParts split = build(split_scope, kParts);
  std::set<std::string> backbone;
  for (const Output& v : split.backbone_variables) {
    backbone.insert(v.node()->name());
    CHECK(v.node()->requested_device() == kDevice[0]);
  }
  std::set<std::string> others;
  for (const Output& v : split.variables)
    if (!backbone.count(v.node()->name())) others.insert(v.node()->requested_device());
  CHECK(others == std::set<std::string>{kDevice[1], kDevice[2]});
  CHECK(split.boxes.node()->requested_device() == kDevice[2]);
  CHECK(split.classes.node()->requested_device() == kDevice[2]);

  // The same numbers as the network on one device (same seed, same graph).
  Scope one_scope = Scope::NewRootScope();
  one_scope.graph().set_seed(7);
  BuiltParts one = build(one_scope, {});
  Session single(one_scope, {.num_threads = 1});
  Session three(split_scope, {.num_threads = 1, .devices = {kDevice[0], kDevice[1], kDevice[2]}});
  single.Run({}, {}, {ops::GlobalVariablesInitializer(one_scope)});
  three.Run({}, {}, {ops::GlobalVariablesInitializer(split_scope)});
  Tensor images = RandomTensor(DType::kFloat32, Shape({2, 64, 64, 3}), 5, 0, 1);
  std::vector<Tensor> expected = single.Run({{one.images, images}}, {one.boxes, one.classes});
  std::vector<Tensor> actual = three.Run({{split.images, images}}, {split.boxes, split.classes});
  ExpectEqual(actual[0], expected[0]);
  ExpectEqual(actual[1], expected[1]);
}

}  // namespace

TEST_CASE("SSD-MobileNet split into backbone, extras and heads", "[model_parts]") {
  CheckSplit([](const Scope& s, const ModelPartDevices& d) { return Ssd(s, d, SsdBackbone::kMobileNetV1); });
}

TEST_CASE("SSD-SqueezeNet split into backbone, extras and heads", "[model_parts]") {
  CheckSplit([](const Scope& s, const ModelPartDevices& d) { return Ssd(s, d, SsdBackbone::kSqueezeNet); });
}

TEST_CASE("RetinaNet split into ResNet, feature pyramid and subnets", "[model_parts]") {
  CheckSplit(RetinaNet);
}
