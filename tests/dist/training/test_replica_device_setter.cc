// The replica device setter: variables and their colocation groups spread
// over ps tasks (round-robin or by size), everything else on the worker,
// explicit requests merged; the result places and trains in a Session whose
// devices are the ps and worker tasks.
#include <catch2/catch.hpp>

#include "autodiff/optimizers.h"
#include "autodiff/learning_rate.h"
#include "dist/training/replica_device_setter.h"
#include "graph/session.h"
#include "ops/ops.h"

namespace dflow {
namespace {

using Catch::Contains;

const std::string kPs0 = "/job:ps/replica:0/task:0/device:CPU:0";
const std::string kPs1 = "/job:ps/replica:0/task:1/device:CPU:0";
const std::string kWorker1 = "/job:worker/replica:0/task:1/device:CPU:0";

// y = (x w1 + b1) w2, trained with Adam (slots and a global step).
struct Model {
  Scope s = Scope::NewRootScope();
  Output x, loss, w1, b1, w2;
  Node* train = nullptr;
  Model(int64_t w1_cols = 4) {
    x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, Shape({2, 3}));
    w1 = ops::Variable(s.WithOpName("w1"), ops::Fill(s, {int64_t{3}, w1_cols}, 0.5f));
    b1 = ops::Variable(s.WithOpName("b1"), ops::Fill(s, {w1_cols}, 0.1f));
    w2 = ops::Variable(s.WithOpName("w2"), ops::Fill(s, {w1_cols, int64_t{1}}, -0.25f));
    Output h = ops::Add(s, ops::MatMul(s.WithOpName("mm1"), x, w1), b1);
    loss = ops::Mean(s.WithOpName("loss"), ops::Square(s, ops::MatMul(s, h, w2)), {0, 1});
    autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(s, 0.1));
    train = adam.Minimize(s, loss);
    ops::GlobalVariablesInitializer(s.WithOpName("init"));
  }
  const Node& node(const std::string& name) const { return s.graph().GetNode(name); }
};

TEST_CASE("round-robin puts each variable group on the next ps task", "[ps]") {
  Model m;
  auto placed = dist::AssignReplicaDevices(
      m.s.graph(), {.num_ps_tasks = 2, .worker_device = "/job:worker/task:1"});
  CHECK(placed.at("w1") == "/job:ps/task:0");
  CHECK(placed.at("b1") == "/job:ps/task:1");
  CHECK(placed.at("w2") == "/job:ps/task:0");
  // Adam's slots and apply op live with their variable; the global step too.
  for (Node* node : m.s.graph().nodes()) {
    if (node->op() == "VariableV2" || node->op() == "ApplyAdam") {
      INFO(node->name());
      CHECK(node->requested_device().starts_with("/job:ps/"));
    }
  }
  CHECK(m.node("w1/slots/Adam_m").requested_device() == "/job:ps/task:0");
  CHECK(m.node("mm1").requested_device() == "/job:worker/task:1");
  CHECK(m.node("loss").requested_device() == "/job:worker/task:1");
}

TEST_CASE("size-balanced gives each group to the least loaded task", "[ps]") {
  Model m(/*w1_cols=*/100);  // w1 holds 300 floats, b1 100, w2 100
  auto placed = dist::AssignReplicaDevices(
      m.s.graph(), {.num_ps_tasks = 2, .strategy = dist::PsStrategy::kSizeBalanced});
  CHECK(placed.at("w1") == "/job:ps/task:0");
  CHECK(placed.at("b1") == "/job:ps/task:1");
  CHECK(placed.at("w2") == "/job:ps/task:1");
}

TEST_CASE("an explicit request keeps the fields it names", "[ps]") {
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s.WithOpName("a").WithDevice("/device:CPU:0"), 1.0f);
  auto b = ops::Neg(s.WithOpName("b").WithDevice("/job:ps/task:3"), a);
  ops::Neg(s.WithOpName("c"), b);
  dist::AssignReplicaDevices(s.graph(), {.num_ps_tasks = 1, .worker_device = "/job:worker/task:2"});
  CHECK(s.graph().GetNode("a").requested_device() == "/job:worker/task:2/device:CPU:0");
  CHECK(s.graph().GetNode("b").requested_device() == "/job:ps/task:3");
  CHECK(s.graph().GetNode("c").requested_device() == "/job:worker/task:2");
  CHECK_THROWS_WITH(dist::AssignReplicaDevices(s.graph(), {.num_ps_tasks = -1}),
                    Contains("num_ps_tasks must be >= 0, got -1"));
  CHECK_THROWS_WITH(dist::AssignReplicaDevices(s.graph(), {.worker_device = "/job:worker/tusk:1"}),
                    Contains("malformed device name '/job:worker/tusk:1'"));
}

TEST_CASE("a replicated graph trains with its variables on the ps tasks", "[ps]") {
  Model placed_model, local_model;
  dist::AssignReplicaDevices(placed_model.s.graph(),
                             {.num_ps_tasks = 2, .worker_device = "/job:worker/task:1"});
  SessionOptions options;
  options.num_threads = 1;
  options.devices = {kPs0, kPs1, kWorker1};
  Session placed(placed_model.s, options);
  Session local(local_model.s, {.num_threads = 1});
  Tensor x = Tensor::FromVector<float>({1, 2, 3, -1, 0.5f, 2}, Shape{2, 3});
  for (auto* run : {&placed, &local}) run->Run({}, {}, {"init"});
  RunMetadata metadata;
  for (int step = 0; step < 3; ++step) {
    placed.Run({{placed_model.x, x}}, {}, {placed_model.train}, {.trace = true}, &metadata);
    local.Run({{local_model.x, x}}, {}, {local_model.train});
  }
  std::map<std::string, std::string> device_of;
  for (const NodeExecStats& stats : metadata.step_stats) device_of[stats.node] = stats.device;
  CHECK(device_of.at("w1") == kPs0);
  CHECK(device_of.at("b1") == kPs1);
  CHECK(device_of.at("mm1") == kWorker1);
  // Where the ops run does not change what they compute.
  auto placed_values = placed.Run({"w1", "b1", "w2"});
  auto local_values = local.Run({"w1", "b1", "w2"});
  for (size_t i = 0; i < 3; ++i) CHECK(placed_values[i].Equals(local_values[i]));
}

}  // namespace
}  // namespace dflow
