// Every gradient rule against central differences (float64: max error
// 1e-6; float32: 1e-2), second derivatives of elementwise ops and MatMul,
// and the registry walk: every op declares a gradient or its absence, and
// every gradient has a numeric check case.
#include <algorithm>
#include <cmath>
#include <set>

#include <catch2/catch.hpp>

#include "autodiff/gradient_checker.h"
#include "autodiff/gradients.h"
#include "graph/status.h"
#include "ops/ops.h"
#include "tests/autodiff/grad_cases.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

Tensor CaseInput(const GradCase& c, DType dtype, const Shape& shape, uint64_t seed) {
  Tensor t = RandomTensor(DType::kFloat64, shape, seed, c.lo, c.hi);
  if (c.away_from_zero)
    for (double& v : t.flat<double>()) v = (v < 0 ? -1 : 1) * (0.2 + 0.8 * std::abs(v));
  return t.CastTo(dtype);
}

// Runs the case with all inputs fed and returns the checker's result.
autodiff::GradientCheckResult CheckCase(const GradCase& c, DType dtype, uint64_t seed) {
  Scope s = Scope::NewRootScope();
  std::vector<Output> xs;
  std::vector<Tensor> values;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    xs.push_back(ops::Placeholder(s.WithOpName(StrCat("x", i)), dtype, c.shapes[i]));
    values.push_back(CaseInput(c, dtype, c.shapes[i], seed + i));
  }
  Output y = c.build(s, xs);
  return autodiff::CheckGradients(s, xs, values, y);
}

}  // namespace

TEST_CASE("every gradient rule matches central differences", "[autodiff][grad_rules]") {
  uint64_t seed = 100;
  for (const GradCase& c : GradCases()) {
    for (auto [dtype, tolerance] : {std::pair{DType::kFloat64, 1e-6}, {DType::kFloat32, 1e-2}}) {
      auto result = CheckCase(c, dtype, seed);
      INFO(c.op << " " << DTypeName(dtype) << " case inputs " << c.shapes.size() << ": "
                << result.worst);
      CHECK(result.max_error < tolerance);
    }
    seed += 10;
  }
}

TEST_CASE("second derivatives of elementwise ops and MatMul", "[autodiff][grad_rules]") {
  // y = sum(f(x)); g = dy/dx is itself checked against central differences.
  using Build = std::function<Output(const Scope&, const Output&, const Output&)>;
  std::vector<std::pair<std::string, Build>> cases = {
      {"tanh*sin", [](const Scope& s, const Output& a, const Output& b) {
         return ops::Mul(s, ops::Tanh(s, a), ops::Sin(s, b));
       }},
      {"exp/sigmoid", [](const Scope& s, const Output& a, const Output& b) {
         return ops::Div(s, ops::Exp(s, a), ops::Add(s, ops::Sigmoid(s, b), 1.0));
       }},
      {"matmul-relu", [](const Scope& s, const Output& a, const Output& b) {
         return ops::Relu(s, ops::MatMul(s, ops::Square(s, a), b));
       }},
      {"sqrt-square", [](const Scope& s, const Output& a, const Output& b) {
         return ops::Sqrt(s, ops::Add(s, ops::Square(s, a), ops::Square(s, b)));
       }},
  };
  for (auto& [name, build] : cases) {
    Scope s = Scope::NewRootScope();
    auto a = ops::Placeholder(s.WithOpName("a"), DType::kFloat64, {3, 3});
    auto b = ops::Placeholder(s.WithOpName("b"), DType::kFloat64, {3, 3});
    Output y = ops::Sum(s, build(s, a, b), {0, 1});
    auto first = autodiff::AddGradients(s, {y}, {a, b});
    // A weighted sum of both first derivatives, so that mixed terms count.
    Output z = ops::Add(s, ops::Mul(s, first[0], ops::Cos(s, b)), ops::Mul(s, first[1], 0.5));
    Tensor av = RandomTensor(DType::kFloat64, {3, 3}, 7, 0.3, 1.2);
    Tensor bv = RandomTensor(DType::kFloat64, {3, 3}, 8, -1, 1);
    auto result = autodiff::CheckGradients(s, {a, b}, {av, bv}, z);
    INFO(name << ": " << result.worst);
    CHECK(result.max_error < 1e-6);
  }
}

TEST_CASE("Prod's gradient is exact with zeros in a group", "[autodiff][grad_rules]") {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat64, {3, 3});
  auto y = ops::Prod(s, x, 1);
  auto g = autodiff::AddGradients(s, {y}, {x});
  Session session(s);
  // Rows: no zero, one zero, two zeros.
  Tensor xv = Tensor::FromVector<double>({2, 3, 4, 2, 0, 5, 0, 3, 0}, {3, 3});
  ExpectClose(session.Run({{x, xv}}, {g[0]})[0],
              Tensor::FromVector<double>({12, 8, 6, 0, 10, 0, 0, 0, 0}, {3, 3}));
}

TEST_CASE("every op declares its gradient or its absence", "[autodiff][registry]") {
  const std::set<std::string> test_only = {"TestOpWithoutGradientDecl"};
  std::vector<std::string> undeclared;
  for (const OpDef* def : OpRegistry::Global().All())
    if (!autodiff::GradientRegistry::Global().IsDeclared(def->name) && !test_only.count(def->name))
      undeclared.push_back(def->name);
  INFO("ops with neither REGISTER_GRADIENT nor REGISTER_NO_GRADIENT: "
       << Catch::Detail::stringify(undeclared));
  CHECK(undeclared.empty());
}

TEST_CASE("every op with a gradient has a numeric check case", "[autodiff][registry]") {
  std::set<std::string> checked;
  for (const GradCase& c : GradCases()) checked.insert(c.op);
  std::vector<std::string> unchecked;
  for (const OpDef* def : OpRegistry::Global().All())
    if (autodiff::GradientRegistry::Global().HasGradient(def->name) && !checked.count(def->name))
      unchecked.push_back(def->name);
  INFO("ops with a gradient rule but no case in tests/autodiff/grad_cases*.cc: "
       << Catch::Detail::stringify(unchecked));
  CHECK(unchecked.empty());
}
