// BiasAdd and BiasAddGrad against naive references (including a long
// float32 sum that needs double accumulation), their shape errors, and the
// Dropout builder: mask statistics, scaling, seeding and its gradient.
#include <cmath>

#include <catch2/catch.hpp>

#include "autodiff/gradients.h"
#include "ops/nn.h"
#include "ops/reduce.h"
#include "ops/state.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

// out[r, c] = x[r, c] + b[c] over the last dim.
Tensor BiasAddRef(const Tensor& x, const Tensor& b) {
  Tensor y(DType::kFloat64, x.shape());
  int64_t channels = b.NumElements();
  for (int64_t i = 0; i < x.NumElements(); ++i)
    y.data<double>()[i] = ReadAsDouble(x, i) + ReadAsDouble(b, i % channels);
  return y.CastTo(x.dtype());
}

Tensor BiasAddGradRef(const Tensor& g) {
  int64_t channels = g.dim(g.rank() - 1);
  Tensor out = Tensor::Zeros(DType::kFloat64, {channels});
  for (int64_t i = 0; i < g.NumElements(); ++i) out.data<double>()[i % channels] += ReadAsDouble(g, i);
  return out.CastTo(g.dtype());
}

}  // namespace

TEST_CASE("BiasAdd and BiasAddGrad match references", "[nn]") {
  uint64_t seed = 11;
  for (DType dtype : {DType::kFloat32, DType::kFloat64})
    for (const Shape& shape : {Shape{3, 1}, Shape{4, 5}, Shape{2, 3, 5}, Shape{3, 7, 5, 5},
                               Shape{2, 0, 3}, Shape{64, 33, 17, 5}}) {
      INFO(DTypeName(dtype) << shape.ToString());
      Tensor x = RandomTensor(dtype, shape, seed++);
      Tensor b = RandomTensor(dtype, {shape.dim(shape.rank() - 1)}, seed++);
      double tol = dtype == DType::kFloat32 ? 1e-6 : 1e-13;
      ExpectClose(Run("BiasAdd", {x, b}), BiasAddRef(x, b), tol, tol);
      ExpectClose(Run("BiasAddGrad", {x}), BiasAddGradRef(x), tol, tol);
    }
}

TEST_CASE("BiasAddGrad sums float32 in double", "[nn]") {
  // 2^20 rows of 0.1f: a float accumulator drifts far from 104857.6.
  Tensor g(DType::kFloat32, {1 << 20, 2});
  for (float& v : g.flat<float>()) v = 0.1f;
  double exact = (1 << 20) * static_cast<double>(0.1f);
  ExpectClose(Run("BiasAddGrad", {g}),
              Tensor::FromVector<float>({static_cast<float>(exact), static_cast<float>(exact)}),
              1e-7, 0);
}

TEST_CASE("BiasAdd rejects bad shapes, naming the node", "[nn]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2, 3, 4});
  auto b3 = ops::Placeholder(s.WithOpName("b3"), DType::kFloat32, {3});
  auto v = ops::Placeholder(s.WithOpName("v"), DType::kFloat32, {4});
  ExpectError([&] { ops::BiasAdd(s.WithOpName("add"), x, b3); }, Code::kInvalidArgument,
              "BiasAdd 'add': bias has 3 elements but the last dim of value [2,3,4] has 4");
  ExpectError([&] { ops::BiasAdd(s.WithOpName("add1"), v, v); }, Code::kInvalidArgument,
              "BiasAdd 'add1': value must have rank >= 2");
  ExpectError([&] { ops::BiasAdd(s.WithOpName("add2"), x, x); }, Code::kInvalidArgument,
              "BiasAdd 'add2': bias must be a vector");
  ExpectError([&] { ops::BiasAddGrad(s.WithOpName("grad"), v); }, Code::kInvalidArgument,
              "BiasAddGrad 'grad': out_backprop must have rank >= 2");
  // Shapes known only at run time: the kernel checks them.
  auto any = ops::Placeholder(s.WithOpName("any"), DType::kFloat32);
  auto late = ops::BiasAdd(s.WithOpName("late"), any, b3);
  Session session(s);
  ExpectError([&] { session.Run({{any, Tensor::Zeros(DType::kFloat32, {2, 4})},
                                 {b3, Tensor::Zeros(DType::kFloat32, {3})}}, {late}); },
              Code::kInvalidArgument, "BiasAdd 'late': bias [3] must be a vector of the last dim");
}

TEST_CASE("Dropout keeps about 1 - rate of the elements, scaled by 1 / (1 - rate)", "[nn]") {
  Scope s = Scope::NewRootScope();
  Tensor ones(DType::kFloat64, {4000});
  for (double& v : ones.flat<double>()) v = 1;
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {4000});
  auto y = ops::Dropout(s.WithOpName("drop"), x, 0.25, {.seed = 7});
  auto dx = autodiff::AddGradients(s, {ops::Sum(s, y, 0)}, {x})[0];
  Session session(s);
  auto out = session.Run({{x, ones}}, {y, dx});
  int64_t kept = 0;
  for (int64_t i = 0; i < 4000; ++i) {
    double v = out[0].data<double>()[i];
    CHECK((v == 0 || std::abs(v - 4.0 / 3.0) < 1e-12));
    kept += v != 0;
  }
  CHECK(std::abs(kept / 4000.0 - 0.75) < 0.03);
  // The gradient is the same mask and scale: d(x * m / (1 - rate)) / dx.
  ExpectEqual(out[1], out[0]);
  // A new mask each Run; the same sequence in a fresh session (seeded).
  Tensor second = session.Run({{x, ones}}, {y})[0];
  CHECK_FALSE(second.Equals(out[0]));
  ExpectEqual(Session(s).Run({{x, ones}}, {y})[0], out[0]);
}

TEST_CASE("Dropout with rate 0 is the input; rates outside [0, 1) are errors", "[nn]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {3});
  Output y = ops::Dropout(s, x, 0.0);
  CHECK(y.node() == x.node());
  ExpectError([&] { ops::Dropout(s.WithOpName("d"), x, 1.0); }, Code::kInvalidArgument,
              "rate must be in [0, 1), got 1");
  ExpectError([&] { ops::Dropout(s, x, -0.5); }, Code::kInvalidArgument, "rate must be in [0, 1)");
}
