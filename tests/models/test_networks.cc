// The two benchmark networks: the same parameter counts as the PyTorch
// references (reference/torch_models.py), output shapes, and one training
// step that changes the loss, on small inputs.
#include <catch2/catch.hpp>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "graph/session.h"
#include "models/countnet.h"
#include "models/layers.h"
#include "models/mobilenet_ssd.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::models;

TEST_CASE("CountNet has the reference's 154,621 parameters and full-size output", "[networks]") {
  Scope s = Scope::NewRootScope();
  s.graph().set_seed(3);
  auto images = ops::Placeholder(s.WithOpName("images"), DType::kFloat32, {-1, 32, 32, 3});
  auto target = ops::Placeholder(s.WithOpName("target"), DType::kFloat32, {-1, 32, 32, 1});
  CountNet net = BuildCountNet(s, images);
  CHECK(CountParameters(net.variables) == 154621);
  CHECK(net.density.shape() == Shape{-1, 32, 32, 1});
  Output loss = CountLoss(s, net.density, target);
  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(s, 1e-3));
  Node* train = adam.Minimize(s, loss, net.variables);
  Session session(s);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(s)});
  FeedList feeds = {{images, testing::RandomTensor(DType::kFloat32, {2, 32, 32, 3}, 1)},
                    {target, testing::RandomTensor(DType::kFloat32, {2, 32, 32, 1}, 2, 0, 0.01)}};
  float before = session.Run(feeds, {loss})[0].scalar<float>();
  for (int i = 0; i < 5; ++i) session.Run(feeds, {}, {train});
  float after = session.Run(feeds, {loss})[0].scalar<float>();
  CHECK(after < before);
}

TEST_CASE("MobileNetV1-SSD has the reference's parameters and head sizes", "[networks]") {
  Scope s = Scope::NewRootScope();
  auto images = ops::Placeholder(s.WithOpName("images"), DType::kFloat32, {-1, 300, 300, 3});
  MobileNetSsd net = BuildMobileNetSsd(s, images);
  CHECK(CountParameters(net.variables) == 7643796);
  // Feature maps 19, 10, 5, 3, 2, 1: cells = 361 + 100 + 25 + 9 + 4 + 1 = 500.
  REQUIRE(net.features.size() == 6);
  CHECK(net.features[0].shape() == Shape{-1, 19, 19, 512});
  CHECK(net.features[5].shape() == Shape{-1, 1, 1, 256});
  CHECK(net.batch_norm_updates.size() == 2 * 27);
  Session session(s);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(s)});
  auto out = session.Run({{images, testing::RandomTensor(DType::kFloat32, {1, 300, 300, 3}, 4)}},
                         {net.boxes, net.classes});
  CHECK(out[0].shape() == Shape{1, 500 * 6 * 4});
  CHECK(out[1].shape() == Shape{1, 500 * 6 * 9});
}
