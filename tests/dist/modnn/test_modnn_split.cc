// MoDNN's Biased One-Dimensional Partition (dist/modnn/modnn_split.h): the strip
// arithmetic on a worked example, strip sizes from speeds, errors that name
// the node, and the split layer run on two CPU devices against the unsplit
// layer (identical, bit for bit, for any number of strips) for odd sizes,
// strides, SAME / VALID / EXPLICIT padding, dilation, with and without
// pooling (average pools that pad included), k = 1, 2, 3 and uneven speeds.
#include <catch2/catch.hpp>
#include <cmath>

#include "dist/modnn/modnn_split.h"
#include "graph/partition.h"
#include "graph/placement.h"
#include "ops/ops.h"
#include "tests/dist/dist_test_util.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

const std::string& kCpu0 = kLocalCpu0;
const std::string& kCpu1 = kLocalCpu1;

// One conv layer: conv (+ bias, activation, pool), its last node named "out".
struct Layer {
  Shape input;  // NHWC
  int64_t k_h = 3, k_w = 3, out_c = 8;
  ops::Conv2DAttrs conv{};
  bool bias = true;
  std::string activation = "Relu";  // "", "Relu" or "Relu6"
  std::string pool{};               // "", "MaxPool" or "AvgPool"
  ops::PoolWindow window{{1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"};
};

struct Built {
  Scope s = Scope::NewRootScope();
  Output x;
};

// Builds the layer; `layer.input`'s dims may be -1 (a placeholder of that shape).
std::unique_ptr<Built> Build(const Layer& layer) {
  auto b = std::make_unique<Built>();
  Scope& s = b->s;
  b->x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, layer.input);
  int64_t c = layer.input.dim(3);
  auto w = ops::Const(s.WithOpName("w"),
                      RandomTensor(DType::kFloat32, Shape{layer.k_h, layer.k_w, c, layer.out_c}, 7));
  std::vector<std::string> stages;
  if (layer.bias) stages.push_back("bias");
  if (!layer.activation.empty()) stages.push_back("activation");
  if (!layer.pool.empty()) stages.push_back("pool");
  auto named = [&](const std::string& stage, const std::string& name) {
    return s.WithOpName(!stages.empty() && stages.back() == stage ? "out" : name);
  };
  Output y = ops::Conv2D(stages.empty() ? s.WithOpName("out") : s.WithOpName("conv"), b->x, w,
                         layer.conv);
  if (layer.bias) {
    auto bias = ops::Const(s.WithOpName("b"), RandomTensor(DType::kFloat32, Shape{layer.out_c}, 8));
    y = ops::BiasAdd(named("bias", "bias_add"), y, bias);
  }
  if (layer.activation == "Relu") y = ops::Relu(named("activation", "act"), y);
  if (layer.activation == "Relu6") y = ops::Relu6(named("activation", "act"), y);
  if (layer.pool == "MaxPool") y = ops::MaxPool(named("pool", "pool"), y, layer.window);
  if (layer.pool == "AvgPool") y = ops::AvgPool(named("pool", "pool"), y, layer.window);
  return b;
}

std::string FirstConv(const Layer& layer) {
  return layer.bias || !layer.activation.empty() || !layer.pool.empty() ? "conv" : "out";
}

// Runs "out" in a session over two CPU devices, one thread each.
Tensor RunOut(Built& b, const Tensor& x) {
  SessionOptions options;
  options.num_threads = 1;
  options.devices = {kCpu0, kCpu1};
  Session session(b.s, options);
  return session.Run({{b.x, x}}, {TensorName("out")})[0];
}

dist::ModnnSplitOptions Strips(std::vector<double> speeds) {
  dist::ModnnSplitOptions options;
  options.owner_device = kCpu0;
  for (size_t i = 0; i < speeds.size(); ++i)
    options.strips.push_back({i % 2 ? kCpu1 : kCpu0, speeds[i]});
  return options;
}

// How far two summation orders of the layer's dot products can be apart.
// Each conv output is a sum of K = KH*KW*C products; summed in any order its
// rounding error is at most (K-1)*u*S, S = sum of |products| (u = 2^-24),
// so two orders differ by at most 2(K-1)*u*S. The bias add may then round
// the two apart by one more unit of the sum each (2u*(S + |bias|), |bias|
// <= 1), and ReLU, max and average pooling never widen a difference. S is
// computed here as the conv of |x| by |w|; its largest value bounds all.
double SummationOrderBound(const Layer& layer, const Tensor& x) {
  Scope s = Scope::NewRootScope();
  int64_t c = layer.input.dim(3);
  Tensor w = RandomTensor(DType::kFloat32, Shape{layer.k_h, layer.k_w, c, layer.out_c}, 7);
  Output abs_x = ops::Abs(s, ops::Const(s, x));
  Output sums = ops::Conv2D(s, abs_x, ops::Abs(s, ops::Const(s, w)), layer.conv);
  Tensor sum = Session(s).Run({sums})[0];
  double largest = 0;
  for (int64_t i = 0; i < sum.NumElements(); ++i)
    largest = std::max<double>(largest, sum.data<float>()[i]);
  const double u = std::ldexp(1.0, -24), k = static_cast<double>(layer.k_h * layer.k_w * c);
  return 2 * (k - 1) * u * largest + 2 * u * (largest + 1);
}

// The split layer's output against the unsplit one's, on the same input.
void ExpectSplitMatches(const Layer& layer, const std::vector<double>& speeds) {
  Shape fed = layer.input;  // an unknown batch is fed as 2 images
  if (fed.dim(0) < 0) fed.set_dim(0, 2);
  Tensor x = RandomTensor(DType::kFloat32, fed, 42);
  auto whole = Build(layer);
  Tensor expected = RunOut(*whole, x);
  auto split = Build(layer);
  dist::ModnnSplitPlan plan = dist::ModnnSplit(split->s.graph(), FirstConv(layer), Strips(speeds));
  INFO(dist::ModnnSplitPlanToText(plan));
  split->s.graph().Validate();
  REQUIRE(plan.strips.size() == speeds.size());
  Tensor actual = RunOut(*split, x);
  // Bit for bit: each strip computes the same dot products on the same
  // numbers, and the float conv's GEMM (cpu::FixedRhsGemm) sums a row's K
  // products in one order (k slices in turn, one accumulator per output)
  // wherever the row falls in its blocking, so a strip starting its GEMM at
  // another row than the whole layer changes no bit. (Eigen's GEMM, used
  // before, did not: its remainder rows took other paths, and strips differed
  // in the last bit.) SummationOrderBound says how far apart they could be
  // otherwise; it is printed to size a failure.
  INFO("a reordered sum could differ by up to " << SummationOrderBound(layer, x));
  ExpectEqual(actual, expected);
}
}  // namespace

TEST_CASE("the worked example: strips, halos and padding of a 3x3 conv and a 2x2 pool",
          "[modnn]") {
  // docs/distributed.md walks through these numbers.
  Layer layer{.input = Shape{1, 8, 6, 2}, .pool = "MaxPool"};
  auto b = Build(layer);
  dist::ModnnSplitPlan plan = dist::PlanModnnSplit(b->s.graph(), "conv", Strips({3, 1}));
  CHECK(plan.axis == 1);
  CHECK(plan.absorbed == std::vector<std::string>{"bias_add", "act", "out"});
  REQUIRE(plan.strips.size() == 2);
  const dist::StripPlan& top = plan.strips[0];
  const dist::StripPlan& bottom = plan.strips[1];
  CHECK((top.out_begin == 0 && top.out_end == 3 && bottom.out_begin == 3 && bottom.out_end == 4));
  CHECK((top.conv_begin == 0 && top.conv_end == 6 && bottom.conv_begin == 6 && bottom.conv_end == 8));
  CHECK((top.in_begin == 0 && top.in_end == 7 && top.pad_before == 1 && top.pad_after == 0));
  CHECK((bottom.in_begin == 5 && bottom.in_end == 8 && bottom.pad_before == 0 &&
         bottom.pad_after == 1));
  CHECK((plan.conv_cross_pad[0] == 1 && plan.conv_cross_pad[1] == 1));
  CHECK(dist::ModnnSplitPlanToText(plan) ==
        "conv split along its rows into 2 strips, joined as 'out'\n"
        "strip 0 on " + kCpu0 + ": output rows [0, 3) <- conv [0, 6) <- input [0, 7) + 1 padding "
        "before\n"
        "strip 1 on " + kCpu1 + ": output rows [3, 4) <- conv [6, 8) <- input [5, 8) + 1 padding "
        "after; halo [5, 7), also read by strip 0\n");
}

TEST_CASE("strip sizes follow the speeds and cover every row", "[modnn]") {
  CHECK(dist::StripSizes(10, {1, 1}) == std::vector<int64_t>{5, 5});
  CHECK(dist::StripSizes(10, {3, 1}) == std::vector<int64_t>{7, 3});
  CHECK(dist::StripSizes(11, {1, 1}) == std::vector<int64_t>{6, 5});
  CHECK(dist::StripSizes(3, {1, 1, 1}) == std::vector<int64_t>{1, 1, 1});
  CHECK(dist::StripSizes(4, {100, 1}) == std::vector<int64_t>{3, 1});  // at least one row each
  CHECK(dist::StripSizes(56, {1, 2, 4}) == std::vector<int64_t>{9, 16, 31});
  CHECK(dist::SpeedsFromMilliseconds({10, 40}) == std::vector<double>{0.1, 0.025});
  ExpectError([] { dist::StripSizes(2, {1, 1, 1}); }, Code::kInvalidArgument,
              "cannot split 2 rows into 3 strips");
  ExpectError([] { dist::StripSizes(8, {1, 0}); }, Code::kInvalidArgument,
              "strip 1: speed must be a positive finite number, got 0");
  ExpectError([] { dist::StripSizes(8, {std::nan(""), 1}); }, Code::kInvalidArgument,
              "strip 0: speed");
  ExpectError([] { dist::SpeedsFromMilliseconds({3, -1}); }, Code::kInvalidArgument,
              "strip 1: a measured time must be a positive number of milliseconds, got -1");
}

TEST_CASE("a split layer computes what the unsplit layer computes", "[modnn]") {
  SECTION("3x3 SAME, bias, ReLU, 2x2 max pool, odd size, k = 2") {
    ExpectSplitMatches({.input = Shape{2, 13, 11, 3}, .pool = "MaxPool"}, {1, 1});
  }
  SECTION("5x5 VALID stride 2, no pool, k = 3, speeds 1:2:3") {
    Layer layer{.input = Shape{1, 17, 15, 4}, .k_h = 5, .k_w = 5};
    layer.conv.strides = {1, 2, 2, 1};
    layer.conv.padding = "VALID";
    ExpectSplitMatches(layer, {1, 2, 3});
  }
  SECTION("dilation 2, SAME 3x3 stride 2 max pool, wider than tall: split by columns") {
    Layer layer{.input = Shape{1, 9, 23, 3}, .pool = "MaxPool"};
    layer.conv.dilations = {1, 2, 2, 1};
    layer.window = {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"};
    auto b = Build(layer);
    CHECK(dist::PlanModnnSplit(b->s.graph(), "conv", Strips({3, 1})).axis == 2);
    ExpectSplitMatches(layer, {3, 1});
  }
  SECTION("EXPLICIT padding, stride 2, 2x2 stride 1 average pool, k = 3") {
    Layer layer{.input = Shape{1, 19, 10, 2}, .k_h = 4, .k_w = 3, .pool = "AvgPool"};
    layer.conv.strides = {1, 2, 1, 1};
    layer.conv.padding = "EXPLICIT";
    layer.conv.explicit_paddings = {0, 0, 1, 2, 0, 1, 0, 0};
    layer.window = {{1, 2, 2, 1}, {1, 1, 1, 1}, "VALID"};
    ExpectSplitMatches(layer, {2, 1, 1});
  }
  SECTION("a batch known only at run time") {
    ExpectSplitMatches({.input = Shape{-1, 9, 7, 3}, .pool = "MaxPool"}, {1, 2});
  }
  SECTION("k = 1: one strip, the whole image") {
    ExpectSplitMatches({.input = Shape{1, 7, 5, 3}, .pool = "MaxPool"}, {1});
  }
  SECTION("ReLU6 without a bias, 1x1 conv") {
    ExpectSplitMatches({.input = Shape{1, 6, 4, 16}, .k_h = 1, .k_w = 1, .bias = false,
                      .activation = "Relu6"}, {1, 1});
  }
  SECTION("a conv alone, VALID, stride 3 leaving rows unused at the bottom") {
    Layer layer{.input = Shape{1, 20, 8, 2}, .bias = false, .activation = ""};
    layer.conv.strides = {1, 3, 1, 1};
    layer.conv.padding = "VALID";
    ExpectSplitMatches(layer, {1, 1, 1});
  }
}

TEST_CASE("a split absorbs an average pool that pads, bit for bit", "[modnn]") {
  // Each strip's AvgPool gets padding EXPLICIT with its own pads, so a window
  // that overhangs the image averages the same real elements as the whole
  // layer's. The plan must list the pool, and the output must match exactly.
  auto expect_absorbed = [](const Layer& layer,
                            const std::vector<std::vector<double>>& speed_sets) {
    for (const std::vector<double>& speeds : speed_sets) {
      INFO(speeds.size() << " strips, strip 0's speed " << speeds[0]);
      auto b = Build(layer);
      dist::ModnnSplitPlan plan = dist::PlanModnnSplit(b->s.graph(), "conv", Strips(speeds));
      CHECK(plan.output == "out");
      CHECK(plan.absorbed.back() == "out");
      ExpectSplitMatches(layer, speeds);
    }
  };
  SECTION("3x3 stride 2 SAME on odd sizes, k = 2 and 3, equal and unequal speeds") {
    Layer layer{.input = Shape{2, 11, 9, 3}, .pool = "AvgPool"};
    layer.window = {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"};
    expect_absorbed(layer, {{1, 1}, {3, 1}, {1, 1, 1}, {1, 2, 3}});
  }
  SECTION("2x2 stride 2 SAME on odd sizes (the extra row after), k = 2 and 3") {
    Layer layer{.input = Shape{1, 13, 11, 4}, .pool = "AvgPool"};
    layer.window = {{1, 2, 2, 1}, {1, 2, 2, 1}, "SAME"};
    expect_absorbed(layer, {{1, 1}, {1, 3}, {1, 1, 1}, {3, 2, 1}});
  }
  SECTION("5x5 stride 1 SAME: a strip past the first still overhangs the top") {
    // 9 pool rows shared 1:8:8 as 1, 4, 4: strip 1's first window, row 1,
    // reads conv rows [-1, 4), one of them padding.
    Layer layer{.input = Shape{1, 9, 7, 2}, .bias = false, .activation = "Relu6",
                .pool = "AvgPool"};
    layer.window = {{1, 5, 5, 1}, {1, 1, 1, 1}, "SAME"};
    auto b = Build(layer);
    dist::ModnnSplitPlan plan = dist::PlanModnnSplit(b->s.graph(), "conv", Strips({1, 8, 8}));
    CHECK((plan.strips[1].out_begin == 1 && plan.strips[1].pool_pad_before == 1));
    expect_absorbed(layer, {{1, 8, 8}});
  }
  SECTION("wider than tall: split by columns, the rows padded in every strip") {
    Layer layer{.input = Shape{1, 7, 19, 3}, .pool = "AvgPool"};
    layer.window = {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"};
    auto b = Build(layer);
    CHECK(dist::PlanModnnSplit(b->s.graph(), "conv", Strips({2, 1})).axis == 2);
    expect_absorbed(layer, {{2, 1}, {1, 1, 1}});
  }
  SECTION("the layer's own AvgPool EXPLICIT with asymmetric pads") {
    Layer layer{.input = Shape{1, 12, 9, 2}, .pool = "AvgPool"};
    layer.window = {{1, 3, 2, 1}, {1, 2, 1, 1}, "EXPLICIT", {0, 0, 2, 1, 0, 1, 0, 0}};
    expect_absorbed(layer, {{1, 1}, {1, 2, 1}});
  }
}

TEST_CASE("each strip's pool pads only at the image's edges", "[modnn]") {
  // Conv output 11 x 9; pool 3x3 stride 2 SAME: 6 x 5 rows, one padding row
  // above and below and one column left and right. Strip 0 (pool rows
  // [0, 3)) reads conv rows [-1, 6): one padding row above; strip 1 (rows
  // [3, 6)) reads [5, 12): its top is the real halo row 5, one padding row below.
  Layer layer{.input = Shape{1, 11, 9, 3}, .pool = "AvgPool"};
  layer.window = {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"};
  auto b = Build(layer);
  dist::ModnnSplitPlan plan = dist::ModnnSplit(b->s.graph(), "conv", Strips({1, 1}));
  REQUIRE(plan.strips.size() == 2);
  CHECK((plan.strips[0].conv_begin == 0 && plan.strips[0].conv_end == 6));
  CHECK((plan.strips[1].conv_begin == 5 && plan.strips[1].conv_end == 11));
  CHECK((plan.pool_cross_pad[0] == 1 && plan.pool_cross_pad[1] == 1));
  const Graph& g = b->s.graph();
  for (auto [name, pads] : {std::pair{"out/modnn/strip0/pool",
                                      std::vector<int64_t>{0, 0, 1, 0, 1, 1, 0, 0}},
                            std::pair{"out/modnn/strip1/pool",
                                      std::vector<int64_t>{0, 0, 0, 1, 1, 1, 0, 0}}}) {
    INFO(name);
    const Node& pool = g.GetNode(name);
    CHECK(pool.op() == "AvgPool");
    CHECK(pool.attr<std::string>("padding") == "EXPLICIT");
    CHECK(pool.attr<std::vector<int64_t>>("explicit_paddings") == pads);
  }
}

TEST_CASE("the strips run on their devices and the join keeps the layer's name", "[modnn]") {
  Layer layer{.input = Shape{1, 12, 8, 3}, .pool = "MaxPool"};
  auto b = Build(layer);
  dist::ModnnSplit(b->s.graph(), "conv", Strips({1, 1}));
  CHECK(b->s.graph().GetNode("out").op() == "ConcatV2");
  CHECK(b->s.graph().FindNode("conv") == nullptr);
  SessionOptions options;
  options.num_threads = 1;
  options.devices = {kCpu0, kCpu1};
  Session session(b->s, options);
  RunMetadata metadata;
  session.Run({{b->x, RandomTensor(DType::kFloat32, layer.input, 1)}}, {TensorName("out")}, {},
              {.trace = true}, &metadata);
  std::map<std::string, std::string> device_of;
  for (const NodeExecStats& stats : metadata.step_stats) device_of[stats.node] = stats.device;
  // (The fusion pass turns each strip's conv + bias + ReLU into one node
  // named after the ReLU.)
  CHECK(device_of.at("out/modnn/strip0/relu") == kCpu0);
  CHECK(device_of.at("out/modnn/strip0/pool") == kCpu0);
  CHECK(device_of.at("out/modnn/strip1/relu") == kCpu1);
  CHECK(device_of.at("out/modnn/strip1/pool") == kCpu1);
  CHECK(device_of.at("out/modnn/strip1/input") == kCpu0);  // the owner slices the input
  CHECK(device_of.at("out") == kCpu0);
}

TEST_CASE("strips on two worker tasks: only the strip's rows and result cross", "[modnn]") {
  Layer layer{.input = Shape{1, 12, 8, 3}, .pool = "MaxPool"};
  auto b = Build(layer);
  dist::ModnnSplitOptions options;
  options.owner_device = kWorker0;
  options.strips = {{kWorker0, 1}, {kWorker1, 1}};
  dist::ModnnSplit(b->s.graph(), "conv", options);
  Placement placement = Place(b->s.graph(), kTwoWorkers);
  std::vector<DevicePartition> parts = Partition(b->s.graph(), placement);
  REQUIRE(parts.size() == 2);
  // Worker 1 receives strip 1's input rows [5, 12) and sends back its 3
  // pooled rows; its weights are its own copies.
  std::vector<std::string> received;
  for (const Node* node : parts[1].graph->nodes())
    if (node->op() == "_Recv")
      received.push_back(node->attr<std::string>("tensor_name") + " " +
                         node->output_shape(0).ToString());
  CHECK(received == std::vector<std::string>{"out/modnn/strip1/input:0 [1,7,8,3]"});
  int sends = 0;
  for (const Node* node : parts[1].graph->nodes()) sends += node->op() == "_Send";
  CHECK(sends == 1);
}

TEST_CASE("impossible splits are errors naming the node and why", "[modnn]") {
  Layer layer{.input = Shape{1, 4, 3, 2}, .pool = "MaxPool"};
  auto b = Build(layer);
  const Graph& g = b->s.graph();
  ExpectError([&] { dist::PlanModnnSplit(g, "conv", Strips({1, 1, 1})); }, Code::kInvalidArgument,
              "Conv2D 'conv': cannot split the 2 output rows of MaxPool 'out' into 3 strips");
  ExpectError([&] { dist::PlanModnnSplit(g, "act", Strips({1, 1})); }, Code::kInvalidArgument,
              "Relu 'act' is not a Conv2D");
  ExpectError([&] { dist::PlanModnnSplit(g, "nope", Strips({1, 1})); }, Code::kNotFound, "nope");
  ExpectError([&] { dist::PlanModnnSplit(g, "conv", Strips({})); }, Code::kInvalidArgument,
              "Conv2D 'conv': cannot split into 0 strips");
  ExpectError([&] { dist::PlanModnnSplit(g, "conv", Strips({1, -2})); }, Code::kInvalidArgument,
              "Conv2D 'conv': strip 1: speed must be a positive finite number, got -2");
  dist::ModnnSplitOptions no_device = Strips({1, 1});
  no_device.strips[1].device = "";
  ExpectError([&] { dist::PlanModnnSplit(g, "conv", no_device); }, Code::kInvalidArgument,
              "Conv2D 'conv': strip 1 has no device");

  auto unknown = Build({.input = Shape{1, -1, -1, 2}});
  ExpectError([&] { dist::PlanModnnSplit(unknown->s.graph(), "conv", Strips({1, 1})); },
              Code::kInvalidArgument, "Conv2D 'conv': cannot split without a known height");

  Layer padded{.input = Shape{1, 3, 3, 2}, .bias = false, .activation = ""};
  padded.conv.padding = "EXPLICIT";
  padded.conv.explicit_paddings = {0, 0, 10, 0, 0, 0, 0, 0};
  auto p = Build(padded);
  ExpectError([&] { dist::PlanModnnSplit(p->s.graph(), "out", Strips({1, 1})); },
              Code::kInvalidArgument, "Conv2D 'out': strip 0 (conv output rows [0, 6)) would "
              "read only padding: use fewer strips");
}
