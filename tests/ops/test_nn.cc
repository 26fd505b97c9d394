// Activation ops against naive reference loops, including very large and
// very negative inputs where naive formulas overflow or lose precision.
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "ops/nn.h"
#include "ops/state.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {


// Applies f to every element in double precision, then rounds to x's dtype.
template <typename F>
Tensor Reference(const Tensor& x, F f) {
  Tensor y(DType::kFloat64, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) y.data<double>()[i] = f(ReadAsDouble(x, i));
  return y.CastTo(x.dtype());
}

// Runs `op` on random inputs of several shapes and compares with f.
template <typename F>
void CheckActivation(const std::string& op, F f, std::vector<DType> dtypes, AttrMap attrs = {},
                     double lo = -10, double hi = 10) {
  uint64_t seed = 3;
  for (DType dtype : dtypes)
    for (const Shape& shape : {Shape{}, Shape{9}, Shape{4, 0}, Shape{6, 7}, Shape{50, 1001}}) {
      INFO(op << " " << DTypeName(dtype) << shape.ToString());
      Tensor x = RandomTensor(dtype, shape, seed++, lo, hi);
      double rtol = dtype == DType::kFloat32 ? 2e-6 : dtype == DType::kFloat64 ? 1e-13 : 0;
      ExpectClose(Run(op, {x}, attrs), Reference(x, f), rtol, rtol);
    }
}

const std::vector<DType> kFloats = {DType::kFloat32, DType::kFloat64};
const std::vector<DType> kNumbers = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                     DType::kInt64};

}  // namespace

TEST_CASE("Relu and Relu6 match references", "[nn]") {
  CheckActivation("Relu", [](double x) { return x > 0 ? x : 0; }, kNumbers);
  CheckActivation("Relu6", [](double x) { return std::min(std::max(x, 0.0), 6.0); }, kNumbers);
}

TEST_CASE("LeakyRelu uses alpha, 0.2 by default", "[nn]") {
  CheckActivation("LeakyRelu", [](double x) { return x > 0 ? x : 0.2 * x; }, kFloats);
  CheckActivation("LeakyRelu", [](double x) { return x > 0 ? x : 0.01 * x; }, kFloats,
                  {{"alpha", 0.01}});
  Scope s = Scope::NewRootScope();
  auto x = ops::Const(s, Tensor::FromVector<float>({-10, 0, 3}));
  auto y = ops::LeakyRelu(s, x, {.alpha = 0.5f});
  ExpectEqual(Session(s).Run({y})[0], Tensor::FromVector<float>({-5, 0, 3}));
}

TEST_CASE("Elu and Softplus match references", "[nn]") {
  CheckActivation("Elu", [](double x) { return x > 0 ? x : std::expm1(x); }, kFloats);
  // log(1 + e^x) in double is accurate on this range.
  auto softplus = [](double x) { return std::log1p(std::exp(x)); };
  CheckActivation("Softplus", softplus, kFloats, {}, -30, 30);
}

TEST_CASE("Softplus is stable for large |x|", "[nn]") {
  auto x = Tensor::FromVector<double>({1000, -1000, 50, -50, 1e-8, 0});
  // softplus(x) = x + log1p(e^-x) ~ x for large x, ~ e^x for very negative x.
  auto expected = Tensor::FromVector<double>(
      {1000, 0, 50 + std::exp(-50.0), std::exp(-50.0), std::log(2.0) + 5e-9, std::log(2.0)});
  ExpectClose(Run("Softplus", {x}), expected, 1e-14, 0);
  auto xf = Tensor::FromVector<float>({100, -100, -50, 20});
  ExpectClose(Run("Softplus", {xf}),
              Tensor::FromVector<float>({100, 3.7200760e-44f, 1.9287498e-22f, 20.000000002f}), 1e-5,
              1e-43);
}

TEST_CASE("activations pass NaN through and reject non-float dtypes", "[nn]") {
  const double nan = std::nan("");
  for (std::string op : {"Relu", "Relu6", "LeakyRelu", "Elu", "Softplus"}) {
    INFO(op);
    Tensor y = Run(op, {Tensor::FromVector<double>({nan})});
    CHECK(std::isnan(y.data<double>()[0]));
  }
  Scope s = Scope::NewRootScope();
  auto i = ops::Placeholder(s.WithOpName("i"), DType::kInt32, {3});
  ExpectError([&] { ops::Elu(s.WithOpName("elu"), i); }, Code::kInvalidArgument,
              "Elu 'elu': attr T=int32 is not allowed");
  ExpectError([&] { ops::Softplus(s, i); }, Code::kInvalidArgument, "T=int32 is not allowed");
}
