// AddGradients' behaviour as a builder: fan-out, missing paths,
// StopGradient, integer paths, broadcasting (static and run-time shapes),
// seeds, several ys, intermediate xs, naming and undeclared ops.
#include <catch2/catch.hpp>

#include "autodiff/gradients.h"
#include "graph/session.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;
using autodiff::AddGradients;

namespace {

Tensor Vec(std::vector<double> v) { return Tensor::FromVector(v); }

Tensor Eval(const Scope& s, const FeedList& feeds, const Output& out) {
  Session session(s);
  return session.Run(feeds, {out})[0];
}

}  // namespace

TEST_CASE("fan-out sums the gradients of every use", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {3});
  auto y = ops::Add(s, ops::Mul(s, x, x), ops::Sin(s, x));  // dy/dx = 2x + cos x
  auto g = AddGradients(s, {y}, {x});
  Tensor xv = Vec({0.5, -1, 2});
  ExpectClose(Eval(s, {{x, xv}}, g[0]),
              Vec({1 + std::cos(0.5), -2 + std::cos(-1.0), 4 + std::cos(2.0)}), 1e-12, 1e-12);
}

TEST_CASE("fan-out of several outputs of one node sums each of them", "[autodiff]") {
  // Both halves of a Split feed two ops: two sums in the Split's gradient
  // scope, which once collided on the fixed name "AddN".
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {4});
  std::vector<Output> halves = ops::Split(s, 0, x, 2);
  auto a = ops::Add(s, ops::Mul(s, halves[0], 2.0), ops::Mul(s, halves[0], 3.0));
  auto b = ops::Add(s, ops::Mul(s, halves[1], 5.0), ops::Mul(s, halves[1], 7.0));
  auto g = AddGradients(s, {ops::Add(s, ops::Sum(s, a, 0), ops::Sum(s, b, 0))}, {x});
  ExpectClose(Eval(s, {{x, Vec({1, 2, 3, 4})}}, g[0]), Vec({5, 5, 12, 12}));
}

TEST_CASE("an x with no path to y has no gradient", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  auto z = ops::Placeholder(s.WithOpName("z"), DType::kFloat32, {2});
  auto y = ops::Exp(s, x);
  auto g = AddGradients(s, {y}, {z, x});
  CHECK_FALSE(g[0].valid());
  CHECK(g[1].valid());
}

TEST_CASE("StopGradient, integer casts and no-gradient ops cut the path", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {2});
  auto stopped = ops::Mul(s, x, ops::StopGradient(s, x));  // d/dx = stop(x)
  auto g = AddGradients(s, {stopped}, {x});
  ExpectClose(Eval(s, {{x, Vec({3, -2})}}, g[0]), Vec({3, -2}));

  auto through_int = ops::Cast(s, ops::Cast(s, x, DType::kInt32), DType::kFloat64);
  CHECK_FALSE(AddGradients(s, {through_int}, {x})[0].valid());
  CHECK_FALSE(AddGradients(s, {ops::Floor(s, x)}, {x})[0].valid());
}

TEST_CASE("broadcast inputs get gradients of their own shape", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s.WithOpName("a"), DType::kFloat64, {2, 3});
  auto b = ops::Placeholder(s.WithOpName("b"), DType::kFloat64, {3});
  auto c = ops::Placeholder(s.WithOpName("c"), DType::kFloat64, {});
  auto y = ops::Mul(s, ops::Add(s, a, b), c);
  auto g = AddGradients(s, {y}, {a, b, c});
  REQUIRE(g[1].shape() == Shape{3});
  Session session(s);
  Tensor av = Vec({1, 2, 3, 4, 5, 6}).Reshaped({2, 3});
  auto out = session.Run({{a, av}, {b, Vec({1, 1, 1})}, {c, Tensor::Scalar(2.0)}},
                         {g.begin(), g.end()});
  ExpectClose(out[0], Tensor::FromVector<double>({2, 2, 2, 2, 2, 2}, {2, 3}));
  ExpectClose(out[1], Vec({4, 4, 4}));
  ExpectClose(out[2], Tensor::Scalar(27.0));  // sum(a + b)
}

TEST_CASE("broadcasting over a batch dimension known only at run time", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 2});
  auto bias = ops::Placeholder(s.WithOpName("bias"), DType::kFloat32, {2});
  auto loss = ops::Sum(s, ops::Add(s, x, bias), {0, 1});
  auto g = AddGradients(s, {loss}, {bias});
  Session session(s);
  for (int batch : {1, 5}) {
    Tensor xv = Tensor::Zeros(DType::kFloat32, {batch, 2});
    Tensor bv = Tensor::FromVector<float>({1, 2});
    ExpectClose(session.Run({{x, xv}, {bias, bv}}, {g[0]})[0],
                Tensor::FromVector<float>({float(batch), float(batch)}));
  }
}

TEST_CASE("grad_ys seed the backward pass; several ys add up", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {2});
  auto y1 = ops::Mul(s, x, 3.0);
  auto y2 = ops::Square(s, x);
  auto seed = ops::Const(s, Vec({10, 100}));
  auto g = AddGradients(s, {y1, y2}, {x}, {seed, ops::OnesLike(s, y2)});
  ExpectClose(Eval(s, {{x, Vec({1, 2})}}, g[0]), Vec({32, 304}));
  CHECK_THROWS_AS(AddGradients(s, {y1}, {x}, {ops::Const(s, Vec({1, 2, 3}))}), Error);
}

TEST_CASE("an intermediate tensor can be an x", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {2});
  auto h = ops::Exp(s.WithOpName("h"), x);
  auto y = ops::Mul(s, h, h);
  auto g = AddGradients(s, {y}, {h, x});
  Session session(s);
  auto out = session.Run({{x, Vec({0, 1})}}, {g.begin(), g.end()});
  ExpectClose(out[0], Vec({2, 2 * std::exp(1.0)}), 1e-12);
  ExpectClose(out[1], Vec({2, 2 * std::exp(2.0)}), 1e-12);
}

TEST_CASE("gradient nodes live under gradients/ and keep the forward device", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  auto y = ops::Tanh(s.WithOpName("t").WithDevice("/device:CPU:0"), x);
  auto g = AddGradients(s, {y}, {x});
  CHECK(g[0].node()->name().rfind("gradients/t_grad/", 0) == 0);
  CHECK(g[0].node()->requested_device() == "/device:CPU:0");
}

TEST_CASE("a variable's value is differentiable", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  auto w = ops::Variable(s.WithOpName("w"), {2}, DType::kFloat32);
  auto init = ops::Assign(s, w, Tensor::FromVector<float>({1, 2}));
  auto loss = ops::Sum(s, ops::Square(s, w), 0);
  auto g = AddGradients(s, {loss}, {w});
  Session session(s);
  session.Run({}, {}, {init});
  ExpectClose(session.Run({g[0]})[0], Tensor::FromVector<float>({2, 4}));
}

REGISTER_OP("TestOpWithoutGradientDecl")
    .input("x", "T").output("y", "T").type_attr("T", kFloatTypes).shape_fn(UnchangedShape)
    .doc("Test only: an op whose gradient was never declared.");

TEST_CASE("crossing an op without a gradient declaration names the op", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  Output y = s.WithOpName("undeclared").AddOp("TestOpWithoutGradientDecl", {x});
  ExpectError([&] { AddGradients(s, {y}, {x}); }, Code::kUnimplemented,
              "no gradient is declared for op TestOpWithoutGradientDecl (node 'undeclared')");
}

TEST_CASE("bad arguments are named, not crashed on", "[autodiff]") {
  Scope s = Scope::NewRootScope();
  Scope other = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  auto y = ops::Exp(s.WithOpName("y"), x);
  auto foreign = ops::Placeholder(other.WithOpName("foreign"), DType::kFloat32, {2});
  ExpectError([&] { AddGradients(s, {y}, {foreign}); }, Code::kInvalidArgument,
              "xs[0] 'foreign' belongs to another graph");
  ExpectError([&] { AddGradients(s, {y}, {Output()}); }, Code::kInvalidArgument,
              "xs[0] is an empty Output");
  ExpectError([&] { AddGradients(s, {}, {x}); }, Code::kInvalidArgument, "no ys given");
  auto wrong_dtype = ops::Placeholder(s.WithOpName("dy"), DType::kFloat64, {2});
  ExpectError([&] { AddGradients(s, {y}, {x}, {wrong_dtype}); }, Code::kInvalidArgument,
              "grad_ys[0] is float64 but y 'y' is float32");
}
