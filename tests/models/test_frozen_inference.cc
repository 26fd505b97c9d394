// The two benchmark networks frozen for inference (FreezeGraph) and run with
// and without the conv rewrites (ops/passes/inference_passes.h): every
// MobileNet-SSD batch norm folds and every conv fuses with its bias and
// ReLU, CountNet's convs fuse, and the outputs agree.
#include <catch2/catch.hpp>

#include "graph/freeze.h"
#include "models/countnet.h"
#include "models/mobilenet_ssd.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::models;
using namespace dflow::testing;

namespace {

PassOptions WithoutConvRewrites() {
  PassOptions options;
  options.fold_batch_norm = false;
  options.fuse_conv_bias_activation = false;
  return options;
}

int CountOps(const Graph& graph, const std::vector<std::string>& fetches,
             const std::string& op) {
  std::vector<NodeOut> outs;
  for (const std::string& name : fetches) outs.push_back(graph.ParseOutput(name));
  auto rewritten = ExtractForExecution(graph, {graph.ParseOutput("images")}, outs, {});
  ThreadPool pool(1, "count");
  RunPasses(*rewritten, *NewCpuDevice(0, &pool), PassOptions{}, {});
  int n = 0;
  for (Node* node : rewritten->nodes()) n += node->op() == op;
  return n;
}

// Runs the frozen graph with and without the rewrites; outputs must agree.
void ExpectSameOutputs(const std::shared_ptr<Graph>& frozen,
                       const std::vector<std::string>& fetches, const Tensor& images, double tol) {
  std::vector<TensorName> names(fetches.begin(), fetches.end());
  Session plain(frozen, {.passes = WithoutConvRewrites()});
  Session rewritten(frozen);
  std::vector<Tensor> expected = plain.Run({{"images", images}}, names);
  std::vector<Tensor> actual = rewritten.Run({{"images", images}}, names);
  for (size_t i = 0; i < names.size(); ++i) ExpectClose(actual[i], expected[i], tol, tol);
}

// Batch-norm variables set to random values, so that folding them matters.
std::vector<Output> RandomizeBatchNorms(const Scope& s) {
  std::vector<Output> assigns;
  uint64_t seed = 50;
  auto ends_with = [](const std::string& name, const std::string& tail) {
    return name.size() > tail.size() &&
           name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (Node* node : s.graph().nodes()) {
    if (node->op() != "VariableV2") continue;
    const std::string& name = node->name();
    bool positive = ends_with(name, "/gamma") || ends_with(name, "/moving_variance");
    if (!positive && !ends_with(name, "/beta") && !ends_with(name, "/moving_mean")) continue;
    Tensor value = RandomTensor(DType::kFloat32, node->output_shape(0), seed++,
                                positive ? 0.5 : -0.5, positive ? 1.5 : 0.5);
    assigns.push_back(ops::Assign(s, Output(node), value));
  }
  return assigns;
}

}  // namespace

TEST_CASE("frozen MobileNet-SSD: batch norms fold, convs fuse, outputs agree", "[inference]") {
  Scope s = Scope::NewRootScope();
  s.graph().set_seed(5);
  auto images = ops::Placeholder(s.WithOpName("images"), DType::kFloat32, {-1, 128, 128, 3});
  MobileNetSsd net = BuildMobileNetSsd(s, images, {.training = false});
  std::vector<Output> randomize = RandomizeBatchNorms(s);
  Node* init = ops::GlobalVariablesInitializer(s);
  Session session(s);
  session.Run({}, {}, {init});
  std::vector<TensorName> targets(randomize.begin(), randomize.end());
  session.Run({}, {}, targets);
  std::vector<std::string> fetches = {net.boxes.name(), net.classes.name()};
  std::shared_ptr<Graph> frozen = FreezeGraph(session, fetches);

  // 27 conv-BN-ReLU layers, 8 extra convs with ReLU, 12 heads with a bias.
  CHECK(CountOps(*frozen, fetches, "FusedBatchNorm") == 0);
  CHECK(CountOps(*frozen, fetches, "Conv2D") == 0);
  CHECK(CountOps(*frozen, fetches, "_FusedConv2D") == 27 + 8 + 12);
  ExpectSameOutputs(frozen, fetches, RandomTensor(DType::kFloat32, {1, 128, 128, 3}, 9), 1e-3);
}

TEST_CASE("frozen CountNet: conv, bias and ReLU fuse, outputs agree", "[inference]") {
  Scope s = Scope::NewRootScope();
  s.graph().set_seed(3);
  auto images = ops::Placeholder(s.WithOpName("images"), DType::kFloat32, {-1, 32, 32, 3});
  CountNet net = BuildCountNet(s, images);
  Node* init = ops::GlobalVariablesInitializer(s);
  Session session(s);
  session.Run({}, {}, {init});
  std::vector<std::string> fetches = {net.density.name()};
  std::shared_ptr<Graph> frozen = FreezeGraph(session, fetches);
  // Four convs per column, three columns, and the 1x1 density conv; the
  // transposed convs stay as they are.
  CHECK(CountOps(*frozen, fetches, "_FusedConv2D") == 13);
  CHECK(CountOps(*frozen, fetches, "Conv2D") == 0);
  ExpectSameOutputs(frozen, fetches, RandomTensor(DType::kFloat32, {2, 32, 32, 3}, 1), 1e-4);
}
