// The graph IR: node building checks, name scopes, topological order, cycle
// detection, validation, tensor names.
#include <algorithm>

#include <catch2/catch.hpp>

#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using testing::ExpectError;

namespace {

Output FloatPlaceholder(const Scope& s, const std::string& name, Shape shape = {2, 2}) {
  return ops::Placeholder(s.WithOpName(name), DType::kFloat32, std::move(shape));
}

std::vector<std::string> Names(const std::vector<Node*>& nodes) {
  std::vector<std::string> names;
  for (Node* node : nodes) names.push_back(node->name());
  return names;
}

size_t PositionOf(const std::vector<Node*>& order, const std::string& name) {
  auto names = Names(order);
  return std::find(names.begin(), names.end(), name) - names.begin();
}

}  // namespace

TEST_CASE("AddNode rejects unknown ops, taken and invalid names", "[core]") {
  Graph graph;
  ExpectError([&] { graph.AddNode({.name = "x", .op = "NoSuchOp"}); }, Code::kNotFound,
              "NoSuchOp 'x': unknown op 'NoSuchOp'");
  graph.AddNode({.name = "a", .op = "NoOp"});
  ExpectError([&] { graph.AddNode({.name = "a", .op = "NoOp"}); }, Code::kAlreadyExists,
              "NoOp 'a': a node named 'a' already exists");
  for (std::string bad : {"", "/a", "-a", "a b", "a:1", "^a", "a\n"}) {
    INFO("name '" << bad << "'");
    ExpectError([&] { graph.AddNode({.name = bad, .op = "NoOp"}); }, Code::kInvalidArgument,
                "invalid node name");
  }
  for (std::string good : {"b", "_internal", "layer/w", "x-1", "v.2", "A9"}) {
    INFO("name '" << good << "'");
    CHECK(graph.AddNode({.name = good, .op = "NoOp"})->name() == good);
  }
  CHECK(graph.num_nodes() == 7);
  ExpectError([&] { graph.AddNode({.name = "c", .op = "Add", .inputs = {{nullptr, 0}}}); },
              Code::kInvalidArgument, "input <null> does not exist");
  Node* a = graph.FindNode("a");
  ExpectError([&] { graph.AddNode({.name = "c", .op = "Identity", .inputs = {{a, 0}}}); },
              Code::kInvalidArgument, "input a:0 does not exist");  // NoOp has no outputs
}

TEST_CASE("AddNode checks input counts and dtypes, naming the inputs", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = FloatPlaceholder(s, "x");
  Output n = ops::Placeholder(s.WithOpName("n"), DType::kInt32, {2, 2});
  ExpectError([&] { s.WithOpName("one").AddOp("Add", {x}); }, Code::kInvalidArgument,
              "Add 'one': expects 2 inputs (Add(x: T, y: T) -> (z: T)), got 1");
  ExpectError([&] { s.WithOpName("three").AddOp("Add", {x, x, x}); }, Code::kInvalidArgument,
              "expects 2 inputs");
  ExpectError([&] { s.WithOpName("mixed").AddOp("Add", {x, n}); }, Code::kInvalidArgument,
              "Add 'mixed': input 'y' (n) is int32 but T is float32 (from input 'x' (x))");
  ExpectError([&] { s.WithOpName("list").AddOp("AddN", {x, x, n}); }, Code::kInvalidArgument,
              "input 'inputs'[2] (n) is int32");
  // A fixed-dtype input: Reshape's shape must be an index type, Range's values numbers.
  ExpectError([&] { s.WithOpName("shape").AddOp("Reshape", {x, x}); }, Code::kInvalidArgument,
              "Reshape 'shape'");
  // An explicit attr that disagrees with the inputs.
  ExpectError([&] { s.WithOpName("given").AddOp("Add", {x, x}, {{"T", DType::kFloat64}}); },
              Code::kInvalidArgument, "T is float64 (as given)");
  CHECK(s.graph().FindNode("mixed") == nullptr);  // a failed AddNode leaves nothing behind
}

TEST_CASE("AddNode checks attrs: required, typed, allowed dtypes, known names", "[core]") {
  Graph graph;
  ExpectError([&] { graph.AddNode({.name = "v", .op = "VariableV2", .attrs = {{"dtype", DType::kFloat32}}}); },
              Code::kInvalidArgument, "VariableV2 'v': missing required attr 'shape' (shape)");
  ExpectError(
      [&] {
        graph.AddNode({.name = "p", .op = "Placeholder",
                       .attrs = {{"dtype", DType::kFloat32}, {"shape", int64_t{3}}}});
      },
      Code::kInvalidArgument, "attr 'shape' must be shape, got int 3");
  ExpectError(
      [&] {
        graph.AddNode({.name = "p", .op = "Placeholder",
                       .attrs = {{"dtype", DType::kFloat32}, {"colour", std::string("red")}}});
      },
      Code::kInvalidArgument, "unknown attr 'colour' for op Placeholder");
  Scope s = Scope::ForGraph(std::make_shared<Graph>());
  Output flag = ops::Variable(s.WithOpName("flag"), {}, DType::kBool);
  ExpectError([&] { ops::AssignAdd(s.WithOpName("bump"), flag, Tensor::Scalar(true)); },
              Code::kInvalidArgument, "AssignAdd 'bump': attr T=bool is not allowed (allowed: float32");
  ExpectError(
      [&] {
        Tensor value = Tensor::Scalar(1.0f);
        graph.AddNode({.name = "c", .op = "Const",
                       .attrs = {{"value", value}, {"dtype", DType::kInt32}}});
      },
      Code::kInvalidArgument, "Const 'c': value is float32 but dtype is int32");
  // A type attr given as something other than a dtype.
  Output x = FloatPlaceholder(s, "x");
  ExpectError([&] { s.WithOpName("typo").AddOp("Add", {x, x}, {{"T", int64_t{3}}}); },
              Code::kInvalidArgument, "Add 'typo': attr 'T' must be dtype, got int 3");
  // A ref input must be a variable.
  ExpectError([&] { ops::Assign(s.WithOpName("set"), x, x); }, Code::kInvalidArgument,
              "input 'ref' must be a variable, got Placeholder 'x'");
  // Defaults are filled in.
  Node* p = ops::Placeholder(s.WithOpName("p"), DType::kInt64).node();
  CHECK(p->attr<Shape>("shape").unknown_rank());
  ExpectError([&] { p->attr<int64_t>("shape"); }, Code::kInvalidArgument, "attr 'shape' is shape, not int");
  ExpectError([&] { p->attr<bool>("missing"); }, Code::kNotFound, "has no attr 'missing'");
}

TEST_CASE("shape inference runs when a node is added and names the shapes", "[core]") {
  Scope s = Scope::NewRootScope();
  Output a = FloatPlaceholder(s, "a", {32, 100});
  Output b = FloatPlaceholder(s, "b", {99, 10});
  ExpectError([&] { ops::MatMul(s.NewSubScope("dense").WithOpName("mm"), a, b); },
              Code::kInvalidArgument,
              "MatMul 'dense/mm': inner dimensions differ: a is [32,100], b is [99,10]");
  Output c = FloatPlaceholder(s, "c", {-1, 100});
  Output d = FloatPlaceholder(s, "d", {100, -1});
  CHECK(ops::MatMul(s, c, d).shape() == Shape({-1, -1}));
  CHECK(ops::MatMul(s, a, d).shape() == Shape({32, -1}));
  ExpectError([&] { ops::Add(s.WithOpName("sum"), a, b); }, Code::kInvalidArgument,
              "Add 'sum': shapes [32,100] and [99,10] cannot be broadcast");
  CHECK(ops::Add(s, a, FloatPlaceholder(s, "row", {100})).shape() == Shape({32, 100}));
  CHECK(ops::Add(s, a, FloatPlaceholder(s, "any", Shape::Unknown())).shape().unknown_rank());
  auto parts = ops::Split(s.WithOpName("split"), 1, a, 4);
  REQUIRE(parts.size() == 4);
  CHECK(parts[3].shape() == Shape({32, 25}));
  CHECK(parts[3].name() == "split:3");
  ExpectError([&] { s.WithOpName("bad_axis").AddOp("Split", {a, a}, {{"num_split", int64_t{2}}}); },
              Code::kInvalidArgument, "input 'axis' (a) must be int32, got float32");
}

TEST_CASE("name scopes prefix node names and stay unique", "[core]") {
  Scope root = Scope::NewRootScope();
  Scope layer = root.NewSubScope("layer");
  CHECK(ops::Variable(layer.WithOpName("w"), {2}, DType::kFloat32).name() == "layer/w");
  CHECK(ops::Const(layer, 1.0f).name() == "layer/Const");
  CHECK(ops::Const(layer, 2.0f).name() == "layer/Const_1");
  CHECK(ops::NoOp(layer.NewSubScope("inner"))->name() == "layer/inner/NoOp");
  CHECK(ops::NoOp(root)->name() == "NoOp");
  CHECK(ops::NoOp(root)->name() == "NoOp_1");
  // A second sub-scope of the same name gets a fresh prefix, so the same
  // layer-building code can run twice.
  Scope again = root.NewSubScope("layer");
  CHECK(ops::Variable(again.WithOpName("w"), {2}, DType::kFloat32).name() == "layer_1/w");
  Scope empty1 = root.NewSubScope("block");
  Scope empty2 = root.NewSubScope("block");
  CHECK(ops::NoOp(empty2)->name() == "block_1/NoOp");
  CHECK(ops::NoOp(empty1)->name() == "block/NoOp");
  // Literal inputs become Consts inside the scope of the op that uses them.
  Output sum = ops::Add(layer.WithOpName("sum"), ops::Const(layer.WithOpName("one"), 1.0f), 2.0f);
  CHECK(sum.name() == "layer/sum");
  CHECK(sum.node()->input(1).node->name().rfind("layer/", 0) == 0);
  CHECK(root.graph().UniqueName("layer/w") == "layer/w_1");
  CHECK(root.graph().UniqueName("fresh") == "fresh");
  // Devices and control dependencies carry over to the nodes a scope makes.
  Node* init = ops::NoOp(root.WithOpName("init"));
  Node* after = ops::NoOp(root.WithDevice("/device:CPU:0").WithControlDependencies({init}));
  CHECK(after->requested_device() == "/device:CPU:0");
  REQUIRE(after->control_inputs().size() == 1);
  CHECK(after->control_inputs()[0] == init);
}

TEST_CASE("TopologicalOrder puts inputs (data and control) before consumers", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = FloatPlaceholder(s, "x");
  Output left = ops::Neg(s.WithOpName("left"), x);
  Output right = ops::Abs(s.WithOpName("right"), x);
  Output join = ops::Add(s.WithOpName("join"), left, right);
  Node* last = ops::NoOp(s.WithOpName("last").WithControlDependencies({join}));
  Node* first = ops::NoOp(s.WithOpName("first"));
  s.graph().AddControlInput(x.node(), first);
  s.graph().AddControlInput(x.node(), first);  // a duplicate control edge is ignored
  CHECK(x.node()->control_inputs().size() == 1);
  std::vector<Node*> order = s.graph().TopologicalOrder();
  REQUIRE(order.size() == 6);
  CHECK(PositionOf(order, "first") < PositionOf(order, "x"));
  CHECK(PositionOf(order, "x") < PositionOf(order, "left"));
  CHECK(PositionOf(order, "x") < PositionOf(order, "right"));
  CHECK(PositionOf(order, "left") < PositionOf(order, "join"));
  CHECK(PositionOf(order, "right") < PositionOf(order, "join"));
  CHECK(PositionOf(order, "join") < PositionOf(order, last->name()));
  s.graph().Validate();

  auto consumers = s.graph().Consumers();
  auto& of_x = consumers[x.node()->id()];
  CHECK(of_x.size() == 2);
  auto& of_join = consumers[join.node()->id()];
  REQUIRE(of_join.size() == 1);
  CHECK(of_join[0].node == last);
  CHECK(of_join[0].input == -1);
}

TEST_CASE("a cycle is reported with the nodes on it", "[core]") {
  Scope s = Scope::NewRootScope();
  Node* a = ops::NoOp(s.WithOpName("a"));
  Node* b = ops::NoOp(s.WithOpName("b").WithControlDependencies({a}));
  Node* c = ops::NoOp(s.WithOpName("c").WithControlDependencies({b}));
  ops::NoOp(s.WithOpName("outside"));
  s.graph().AddControlInput(a, c);
  ExpectError([&] { s.graph().TopologicalOrder(); }, Code::kInvalidArgument,
              "the graph has a cycle through 'a', 'b', 'c'");
  ExpectError([&] { s.graph().Validate(); }, Code::kInvalidArgument, "cycle");
  Session session(s);
  ExpectError([&] { session.Run({}, {}, {"outside"}); }, Code::kInvalidArgument, "cycle");
}

TEST_CASE("Validate notices an input that was removed", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = FloatPlaceholder(s, "x");
  Output y = ops::Neg(s.WithOpName("y"), x);
  s.graph().Validate();
  s.graph().RemoveNode(x.node());
  CHECK(s.graph().num_nodes() == 1);
  CHECK(s.graph().FindNode("y") == y.node());
  CHECK(s.graph().FindNode("x") == nullptr);
  ExpectError([&] { s.graph().Validate(); }, Code::kInternal, "Neg 'y': input 0 refers to a removed node");
}

TEST_CASE("RenameNode moves a node to a free, valid name", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = FloatPlaceholder(s, "x");
  Output y = ops::Neg(s.WithOpName("y"), x);
  s.graph().RenameNode(y.node(), "z");
  CHECK(s.graph().FindNode("z") == y.node());
  CHECK(s.graph().FindNode("y") == nullptr);
  CHECK(y.node()->name() == "z");
  ExpectError([&] { s.graph().RenameNode(y.node(), "x"); }, Code::kAlreadyExists,
              "cannot rename to 'x'");
  ExpectError([&] { s.graph().RenameNode(y.node(), "a b"); }, Code::kInvalidArgument,
              "invalid name 'a b'");
  CHECK(y.node()->name() == "z");
}

TEST_CASE("ParseOutput reads 'n', 'n:1' and '^n' and rejects malformed names", "[core]") {
  Scope s = Scope::NewRootScope();
  Output x = FloatPlaceholder(s, "x", {4, 2});
  auto parts = ops::Split(s.WithOpName("n"), 0, x, 2);
  const Graph& g = s.graph();
  CHECK(g.ParseOutput("n") == NodeOut{parts[0].node(), 0});
  CHECK(g.ParseOutput("n:0") == NodeOut{parts[0].node(), 0});
  CHECK(g.ParseOutput("n:1") == NodeOut{parts[0].node(), 1});
  CHECK(g.ParseOutput("^n") == NodeOut{parts[0].node(), -1});
  CHECK(g.ParseOutput("n:1").name() == "n:1");
  CHECK(g.ParseOutput("n:0").name() == "n");
  for (std::string bad : {"n:", "n:x", "n:-1", "n:1a", "n: 1", "n:+1"}) {
    INFO(bad);
    ExpectError([&] { g.ParseOutput(bad); }, Code::kInvalidArgument, "malformed tensor name '" + bad + "'");
  }
  ExpectError([&] { g.ParseOutput("n:2"); }, Code::kInvalidArgument, "Split 'n' has only 2 output(s)");
  ExpectError([&] { g.ParseOutput("missing"); }, Code::kNotFound, "no node named 'missing'");
  ExpectError([&] { g.ParseOutput("^missing"); }, Code::kNotFound, "no node named 'missing'");
  ExpectError([&] { g.ParseOutput(":1"); }, Code::kNotFound, "no node named ''");
  ExpectError([&] { g.GetNode("nope"); }, Code::kNotFound, "no node named 'nope'");
}

TEST_CASE("nodes describe their arguments", "[core]") {
  Scope s = Scope::NewRootScope();
  Output v = ops::Variable(s.WithOpName("v"), {2}, DType::kFloat32);
  Output set = ops::Assign(s.WithOpName("set"), v, {1.0f, 2.0f});
  CHECK(set.node()->IsRefInput(0));
  CHECK_FALSE(set.node()->IsRefInput(1));
  CHECK(set.node()->def().Signature() == "Assign(ref: ref T, value: T) -> (output_ref: T)");
  CHECK(set.node()->Describe() == "Assign 'set'");
  Output x = FloatPlaceholder(s, "x", {2});
  Output sum = ops::AddN(s.WithOpName("sum"), {x, x, x});
  CHECK(sum.node()->attr<int64_t>("N") == 3);
  CHECK(sum.node()->InputRange("inputs") == std::pair<int, int>{0, 3});
  CHECK(sum.node()->input_dtype(2) == DType::kFloat32);
  CHECK(sum.node()->input_shape(2) == Shape({2}));
  ExpectError([&] { sum.node()->InputRange("nope"); }, Code::kNotFound, "AddN 'sum' has no input arg 'nope'");
  // The value of a Const is known while building.
  Output c = ops::Const(s.WithOpName("c"), {3, 4});
  std::optional<Tensor> known = KnownValue(c);
  REQUIRE(known);
  CHECK(known->ToVector<int32_t>() == std::vector<int32_t>{3, 4});
  CHECK_FALSE(KnownValue(x));
}
