// Training steps on the GPU against the CPU (tests/ops/device_test_util.h):
// every op of a CountNet and of a MobileNet-SSD training step must have a
// GPU kernel (checked with or without a GPU), and where a GPU is visible the
// CountNet loss and variables after two Adam steps must match the CPU's.
#include <catch2/catch.hpp>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "graph/kernel.h"
#include "models/countnet.h"
#include "models/density_counter.h"
#include "models/mobilenet_ssd.h"
#include "ops/ops.h"
#include "tests/ops/device_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

// CountNet on 2 images of 16x16, its loss and an Adam step; variables are
// initialised from seeded TruncatedNormals, so both devices start alike.
struct CountNetStep {
  Scope s = Scope::NewRootScope();
  Output images, target, loss;
  Node* train = nullptr;
  Node* init = nullptr;
  std::vector<Output> variables;

  CountNetStep() {
    s.graph().set_seed(5);
    images = ops::Placeholder(s.WithOpName("images"), DType::kFloat32, Shape{2, 16, 16, 3});
    target = ops::Placeholder(s.WithOpName("target"), DType::kFloat32, Shape{2, 16, 16, 1});
    models::CountNet net = models::BuildCountNet(s, images);
    variables = net.variables;
    loss = models::CountLoss(s, net.density, target);
    autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(s, 1e-3));
    train = adam.Minimize(s, loss, variables);
    init = ops::GlobalVariablesInitializer(s);
  }

  FeedList Feeds() const {
    return {{images, RandomTensor(DType::kFloat32, Shape{2, 16, 16, 3}, 151, 0, 1)},
            {target, RandomTensor(DType::kFloat32, Shape{2, 16, 16, 1}, 152, 0, 0.1)}};
  }
};

// MobileNet-SSD on 2 images of 96x96 with bench/models.cc's stand-in loss,
// SGD with momentum and the batch-norm moving-average updates.
Node* MobileNetSsdStep(const Scope& s) {
  Output images = ops::Placeholder(s.WithOpName("images"), DType::kFloat32, Shape{2, 96, 96, 3});
  models::MobileNetSsd net = models::BuildMobileNetSsd(s, images, {.training = true});
  Output loss = ops::Add(s, ops::Mean(s, ops::Square(s, net.boxes), {0, 1}),
                         ops::Mean(s, ops::Square(s, net.classes), {0, 1}));
  autodiff::MomentumOptimizer sgd(autodiff::ConstantLearningRate(s, 1e-3), 0.9);
  std::vector<Output> deps(net.batch_norm_updates);
  deps.emplace_back(sgd.Minimize(s, loss, net.variables));
  return ops::NoOp(s.WithControlDependencies(deps).WithOpName("train_all"));
}

}  // namespace

TEST_CASE("cuda: every op of CountNet's and MobileNet-SSD's training steps has a GPU kernel",
          "[cuda]") {
  if (!KernelRegistry::Global().Has("MatMul", "GPU")) {
    WARN("skipped: dflow was built without CUDA");
    return;
  }
  CheckGpuKernelsFor(CountNetStep().s.graph());
  Scope s = Scope::NewRootScope();
  MobileNetSsdStep(s);
  ops::GlobalVariablesInitializer(s);
  CheckGpuKernelsFor(s.graph());
}

TEST_CASE("cuda: every op of the counting app's training graph has a GPU kernel", "[cuda]") {
  if (!KernelRegistry::Global().Has("MatMul", "GPU")) {
    WARN("skipped: dflow was built without CUDA");
    return;
  }
  Scope s = Scope::NewRootScope();
  models::BuildDensityCounter(s, {.tile_size = 32, .decay_steps = 100});
  CheckGpuKernelsFor(s.graph());
}

TEST_CASE("cuda: a CountNet training step on the GPU matches the CPU", "[cuda]") {
  CountNetStep step;
  std::vector<TensorName> fetches = {step.loss};
  for (const Output& v : step.variables) fetches.push_back(v);
  // Two steps of convolutions summing hundreds of terms: allow 100x float32's 1e-5.
  ExpectGraphSameOnAllDevices(step.s, step.Feeds(), fetches, {{step.init}, {step.train}, {step.train}},
                              100);
}
