// The Scope builder API: names, sub-scopes and literal inputs.
#include <catch2/catch.hpp>

#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;

TEST_CASE("literal inputs take the dtype their argument needs", "[core]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {2, 3});
  auto scaled = ops::Mul(s.WithOpName("scaled"), x, 2.0f);  // float literal, float64 operand
  CHECK(scaled.node()->input(1).node->output_dtype(0) == DType::kFloat64);
  auto total = ops::Sum(s.WithOpName("total"), x, {0, 1});   // the axis stays an integer
  CHECK(IsInteger(total.node()->input(1).node->output_dtype(0)));
  CHECK(total.shape() == Shape{});
  // Literals are named after the node that uses them.
  CHECK(scaled.node()->input(1).node->name() == "scaled/input_1");

  Session session(s);
  Tensor value = Tensor::FromVector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto out = session.Run({{x, value}}, {scaled, total});
  testing::ExpectEqual(out[0], Tensor::FromVector<double>({2, 4, 6, 8, 10, 12}, {2, 3}));
  CHECK(out[1].scalar<double>() == 21);
}

TEST_CASE("sub-scopes prefix node names", "[core]") {
  Scope s = Scope::NewRootScope();
  Scope dense = s.NewSubScope("dense");
  auto c = ops::Const(dense.WithOpName("w"), 1.0f);
  CHECK(c.node()->name() == "dense/w");
  auto d = ops::Const(s.NewSubScope("dense").WithOpName("w"), 1.0f);
  CHECK(d.node()->name() == "dense_1/w");
  testing::ExpectError([&] { ops::Const(dense.WithOpName("w"), 2.0f); }, Code::kAlreadyExists,
                       "already exists");
}
