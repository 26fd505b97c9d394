// The inference rewrites (ops/passes/inference_passes.h) on small conv-BN-ReLU
// nets with constant weights: they fire (counted on the graph RunPasses
// leaves), give the unrewritten outputs, leave chains alone whose
// intermediates are fetched or used elsewhere or whose weights are
// variables, and each PassOptions flag turns its pass off.
#include <catch2/catch.hpp>
#include <map>

#include "graph/passes.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

PassOptions AllOff() {
  return {.constant_folding = false, .common_subexpression_elimination = false,
          .prune_dead_nodes = false, .fold_batch_norm = false, .fuse_conv_bias_activation = false};
}

struct LayerSpec {
  std::string name;
  Shape filter;
  int stride;
  std::string padding;
  bool bias;
  std::string activation;  // "Relu" or "Relu6"
};

// conv [+ bias] + inference batch norm + activation, every weight a Const
// (a frozen graph); batch-norm statistics far from 0 and 1 so that a wrong
// fold shows.
Output ConvBnLayer(const Scope& s, const Output& x, const LayerSpec& l, uint64_t seed) {
  int64_t o = l.filter.dim(3);
  auto random = [&](const Shape& shape, double lo, double hi) {
    return ops::Const(s, RandomTensor(DType::kFloat32, shape, seed++, lo, hi));
  };
  Output y = ops::Conv2D(s.WithOpName(l.name + "/conv"), x, random(l.filter, -1, 1),
                         {.strides = {1, l.stride, l.stride, 1}, .padding = l.padding});
  if (l.bias) y = ops::BiasAdd(s.WithOpName(l.name + "/bias_add"), y, random({o}, -1, 1));
  auto bn = ops::FusedBatchNorm(s.WithOpName(l.name + "/bn"), y, random({o}, 0.5, 2),
                                random({o}, -1, 1), random({o}, -2, 2), random({o}, 0.3, 3),
                                {.epsilon = 1e-3, .is_training = false});
  return l.activation == "Relu6" ? ops::Relu6(s.WithOpName(l.name + "/act"), bn.y)
                                 : ops::Relu(s.WithOpName(l.name + "/act"), bn.y);
}

// Four layers, one per conv path: im2col, depthwise (stride 2), pointwise
// with a bias, grouped (2 groups) with a bias. The output is "l4/act".
Output SmallNet(const Scope& s, const Output& x) {
  const std::vector<LayerSpec> layers = {
      {"l1", {3, 3, 3, 8}, 1, "SAME", false, "Relu6"},
      {"l2", {3, 3, 1, 8}, 2, "SAME", false, "Relu"},
      {"l3", {1, 1, 8, 6}, 1, "SAME", true, "Relu6"},
      {"l4", {3, 3, 3, 6}, 1, "VALID", true, "Relu6"},
  };
  Output h = x;
  uint64_t seed = 100;
  for (const LayerSpec& l : layers) h = ConvBnLayer(s, h, l, seed += 10);
  return h;
}

// The graph a session runs for these fetches (x fed) after RunPasses.
std::unique_ptr<Graph> Rewritten(const Graph& graph, const std::vector<std::string>& fetches,
                                 const PassOptions& options) {
  std::vector<NodeOut> fetch_outs;
  for (const std::string& name : fetches) fetch_outs.push_back(graph.ParseOutput(name));
  auto out = ExtractForExecution(graph, {graph.ParseOutput("x")}, fetch_outs, {});
  ThreadPool pool(1, "passes-test");
  auto device = NewCpuDevice(0, &pool);
  RunPasses(*out, *device, options, {});
  return out;
}

int Count(const Graph& graph, const std::string& op) {
  int n = 0;
  for (Node* node : graph.nodes()) n += node->op() == op;
  return n;
}

// The fetches run with `options`, x fed.
std::vector<Tensor> RunWith(const Scope& s, const std::vector<TensorName>& fetches,
                            const PassOptions& options, const Tensor& x) {
  Session session(s.graph_ptr(), {.passes = options});
  return session.Run({{"x", x}}, fetches);
}

void ExpectSameOutputs(const Scope& s, const std::vector<TensorName>& fetches) {
  Tensor x = RandomTensor(DType::kFloat32, {2, 9, 9, 3}, 7, -2, 2);
  std::vector<Tensor> plain = RunWith(s, fetches, AllOff(), x);
  std::vector<Tensor> rewritten = RunWith(s, fetches, PassOptions{}, x);
  for (size_t i = 0; i < fetches.size(); ++i) ExpectClose(rewritten[i], plain[i], 1e-4, 1e-4);
}

}  // namespace

TEST_CASE("conv-BN-ReLU chains become one _FusedConv2D each, with the same outputs",
          "[inference_passes]") {
  Scope s = Scope::NewRootScope();
  SmallNet(s, ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 9, 9, 3}));
  auto graph = Rewritten(s.graph(), {"l4/act"}, PassOptions{});
  CHECK(Count(*graph, "_FusedConv2D") == 4);
  for (const char* op : {"Conv2D", "BiasAdd", "FusedBatchNorm", "Relu", "Relu6"}) {
    INFO(op);
    CHECK(Count(*graph, op) == 0);
  }
  // The fused node takes the name of the last node it replaced.
  Node* l2 = graph->FindNode("l2/act");
  REQUIRE(l2);
  CHECK(l2->op() == "_FusedConv2D");
  CHECK(l2->attr<std::string>("activation") == "Relu");
  CHECK(graph->GetNode("l4/act").attr<std::string>("activation") == "Relu6");
  ExpectSameOutputs(s, {"l4/act"});
}

TEST_CASE("a fetched intermediate keeps its chain unrewritten", "[inference_passes]") {
  Scope s = Scope::NewRootScope();
  SmallNet(s, ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 9, 9, 3}));
  // l1's conv output and l3's BiasAdd output are fetched as well.
  std::vector<std::string> fetches = {"l1/conv", "l3/bias_add", "l4/act"};
  auto graph = Rewritten(s.graph(), fetches, PassOptions{});
  CHECK(Count(*graph, "FusedBatchNorm") == 2);  // l1 and l3 keep theirs
  CHECK(graph->GetNode("l1/conv").op() == "Conv2D");
  CHECK(Count(*graph, "_FusedConv2D") == 3);  // l2, l4, and l3's conv + bias alone
  CHECK(graph->GetNode("l3/bias_add").op() == "_FusedConv2D");
  CHECK(graph->GetNode("l3/bias_add").attr<std::string>("activation").empty());
  CHECK(graph->GetNode("l2/act").op() == "_FusedConv2D");
  CHECK(graph->GetNode("l4/act").op() == "_FusedConv2D");
  ExpectSameOutputs(s, {"l1/conv", "l3/bias_add", "l4/act"});
}

TEST_CASE("a BiasAdd used twice fuses into the conv but keeps its activation apart",
          "[inference_passes]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 9, 9, 3});
  Output conv = ops::Conv2D(s.WithOpName("conv"), x,
                            ops::Const(s, RandomTensor(DType::kFloat32, {3, 3, 3, 4}, 1)));
  Output biased = ops::BiasAdd(s.WithOpName("bias_add"), conv,
                               ops::Const(s, RandomTensor(DType::kFloat32, {4}, 2)));
  ops::Relu(s.WithOpName("relu"), biased);
  ops::Mul(s.WithOpName("twice"), biased, 2.0f);
  auto graph = Rewritten(s.graph(), {"relu", "twice"}, PassOptions{});
  CHECK(Count(*graph, "_FusedConv2D") == 1);
  CHECK(graph->GetNode("bias_add").op() == "_FusedConv2D");
  CHECK(graph->GetNode("bias_add").attr<std::string>("activation").empty());
  CHECK(graph->GetNode("relu").op() == "Relu");
  ExpectSameOutputs(s, {"relu", "twice"});
}

TEST_CASE("batch norms with variable or training-mode inputs are not folded",
          "[inference_passes]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 9, 9, 3});
  Output ones = ops::Const(s, Tensor::FromVector<float>({1, 1, 1, 1}));
  Output scale = ops::Variable(s.WithOpName("scale"), ones);
  for (bool training : {false, true}) {
    Scope l = s.NewSubScope(training ? "training" : "variable");
    Output filter = ops::Const(l, RandomTensor(DType::kFloat32, {3, 3, 3, 4}, training ? 1 : 2));
    Output y = ops::Conv2D(l.WithOpName("conv"), x, filter);
    ops::FusedBatchNorm(l.WithOpName("bn"), y, training ? ones : scale, ones, ones, ones,
                        {.is_training = training});
  }
  auto graph = Rewritten(s.graph(), {"variable/bn", "training/bn"}, PassOptions{});
  CHECK(Count(*graph, "FusedBatchNorm") == 2);
  CHECK(Count(*graph, "Conv2D") == 2);
}

TEST_CASE("PassOptions turn batch-norm folding and conv fusion off", "[inference_passes]") {
  Scope s = Scope::NewRootScope();
  SmallNet(s, ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 9, 9, 3}));
  PassOptions no_fold;
  no_fold.fold_batch_norm = false;
  auto graph = Rewritten(s.graph(), {"l4/act"}, no_fold);
  CHECK(Count(*graph, "FusedBatchNorm") == 4);
  CHECK(Count(*graph, "_FusedConv2D") == 2);  // l3 and l4: conv + bias, no activation
  CHECK(graph->GetNode("l3/bias_add").attr<std::string>("activation").empty());

  PassOptions no_fuse;
  no_fuse.fuse_conv_bias_activation = false;
  graph = Rewritten(s.graph(), {"l4/act"}, no_fuse);
  CHECK(Count(*graph, "FusedBatchNorm") == 0);
  CHECK(Count(*graph, "_FusedConv2D") == 0);
  CHECK(Count(*graph, "Conv2D") == 4);
  CHECK(Count(*graph, "BiasAdd") == 4);
  CHECK(graph->GetNode("l1/bn").op() == "BiasAdd");  // the BiasAdd takes the norm's name

  graph = Rewritten(s.graph(), {"l4/act"}, AllOff());
  CHECK(Count(*graph, "FusedBatchNorm") == 4);
  CHECK(Count(*graph, "_FusedConv2D") == 0);
}

TEST_CASE("a rewrite pass registers once, with a flag and a function", "[inference_passes]") {
  auto run = [](Graph&, Device&, const std::set<std::string>&) { return 0; };
  ExpectError([&] {
    RegisterRewritePass({.name = "FoldBatchNormIntoConv", .enabled = &PassOptions::fold_batch_norm,
                         .run = run});
  }, Code::kAlreadyExists, "registered twice");
  ExpectError([&] { RegisterRewritePass({.name = "NoFlag", .run = run}); },
              Code::kInvalidArgument, "needs a flag and a function");
}
