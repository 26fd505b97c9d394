// Fused optimizer ops run for three steps through a real Session and
// compared with naive double-precision reference loops; argument checks at
// build and run time; copy-on-write of the updated variable.
#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "ops/state.h"
#include "ops/training.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

using Slots = std::vector<Output>;

// One optimizer under test: how to build its node, the range each slot's
// initial values are drawn from, and the update of one element in double
// precision (s[0] is var, s[1...] the slots in argument order).
struct ApplyCase {
  std::vector<std::pair<double, double>> slot_ranges;
  std::function<Output(const Scope&, const Output& var, const Slots&, const Output& grad)> build;
  std::function<void(double* s, double g)> reference;
};

// A graph with `var` and the slots as variables initialised from random
// values, a grad placeholder and the apply node.
struct ApplyGraph {
  Scope scope = Scope::NewRootScope();
  std::vector<Output> vars;      // var, then the slots
  std::vector<Tensor> expected;  // their reference values, float64
  std::vector<TensorName> init;
  Output grad, apply;
};

void BuildApplyGraph(const ApplyCase& c, DType dtype, const Shape& shape, uint64_t& seed,
                     ApplyGraph& g) {
  for (size_t k = 0; k <= c.slot_ranges.size(); ++k) {
    auto [lo, hi] = k == 0 ? std::pair(-1.0, 1.0) : c.slot_ranges[k - 1];
    Tensor value = RandomTensor(dtype, shape, seed++, lo, hi);
    Output var = ops::Variable(g.scope.WithOpName(k == 0 ? "var" : StrCat("slot", k)), shape, dtype);
    g.init.push_back(ops::Assign(g.scope, var, value));
    g.vars.push_back(var);
    g.expected.push_back(value.CastTo(DType::kFloat64));
  }
  g.grad = ops::Placeholder(g.scope.WithOpName("grad"), dtype, shape);
  g.apply = c.build(g.scope.WithOpName("apply"), g.vars[0], Slots(g.vars.begin() + 1, g.vars.end()),
                    g.grad);
}

// Applies the reference update to every element of `expected`.
void ReferenceStep(const ApplyCase& c, std::vector<Tensor>& expected, const Tensor& grad) {
  std::vector<double> s(expected.size());
  for (int64_t i = 0; i < grad.NumElements(); ++i) {
    for (size_t k = 0; k < s.size(); ++k) s[k] = expected[k].data<double>()[i];
    c.reference(s.data(), ReadAsDouble(grad, i));
    for (size_t k = 0; k < s.size(); ++k) expected[k].data<double>()[i] = s[k];
  }
}

// Three steps (the second run as a target, the others fetched), then var and
// every slot compared with the reference, for both dtypes and several shapes
// (1000x300 takes the parallel path).
void CheckApply(const ApplyCase& c) {
  uint64_t seed = 1;
  for (DType dtype : {DType::kFloat32, DType::kFloat64})
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 5}, Shape{1000, 300}}) {
      INFO(DTypeName(dtype) << shape.ToString());
      double tol = dtype == DType::kFloat32 ? 2e-5 : 1e-12;
      ApplyGraph g;
      BuildApplyGraph(c, dtype, shape, seed, g);
      Session session(g.scope);
      session.Run({}, {}, g.init);
      for (int step = 0; step < 3; ++step) {
        Tensor grad = RandomTensor(dtype, shape, seed++);
        ReferenceStep(c, g.expected, grad);
        if (step == 1) {
          session.Run({{g.grad, grad}}, {}, {g.apply});
          continue;
        }
        Tensor out = session.Run({{g.grad, grad}}, {g.apply})[0];
        ExpectClose(out, g.expected[0].CastTo(dtype), tol, tol);
      }
      std::vector<TensorName> fetches(g.vars.begin(), g.vars.end());
      std::vector<Tensor> values = session.Run(fetches);
      for (size_t k = 0; k < values.size(); ++k) {
        INFO("variable " << k << " (0 = var)");
        ExpectClose(values[k], g.expected[k].CastTo(dtype), tol, tol);
      }
    }
}

ApplyCase MomentumCase(bool nesterov) {
  const double lr = 0.1, momentum = 0.9;
  return {{{-1, 1}},
          [=](const Scope& s, const Output& var, const Slots& slots, const Output& grad) {
            return ops::ApplyMomentum(s, var, slots[0], lr, grad, momentum,
                                      {.use_nesterov = nesterov});
          },
          [=](double* s, double g) {
            s[1] = s[1] * momentum + g;
            s[0] -= nesterov ? lr * g + lr * momentum * s[1] : lr * s[1];
          }};
}

// Adam's hyper-parameters at step 4; AdamW when weight_decay is set.
struct AdamParams {
  double beta1_power = 0.9 * 0.9 * 0.9 * 0.9, beta2_power = std::pow(0.999, 4), lr = 0.01;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-7, weight_decay = 0.1;
};

void AdamReference(const AdamParams& p, bool nesterov, double* s, double g) {
  double lr_t = p.lr * std::sqrt(1 - p.beta2_power) / (1 - p.beta1_power);
  s[1] = p.beta1 * s[1] + (1 - p.beta1) * g;
  s[2] = p.beta2 * s[2] + (1 - p.beta2) * g * g;
  double m = nesterov ? p.beta1 * s[1] + (1 - p.beta1) * g : s[1];
  s[0] -= lr_t * m / (std::sqrt(s[2]) + p.epsilon);
}

ApplyCase AdamCase(bool nesterov) {
  AdamParams p;
  return {{{-1, 1}, {0.01, 1}},
          [=](const Scope& s, const Output& var, const Slots& slots, const Output& grad) {
            return ops::ApplyAdam(s, var, slots[0], slots[1], p.beta1_power, p.beta2_power, p.lr,
                                  p.beta1, p.beta2, p.epsilon, grad, {.use_nesterov = nesterov});
          },
          [=](double* s, double g) { AdamReference(p, nesterov, s, g); }};
}

}  // namespace

TEST_CASE("ApplyGradientDescent matches the reference", "[training]") {
  CheckApply({{},
              [](const Scope& s, const Output& var, const Slots&, const Output& grad) {
                return ops::ApplyGradientDescent(s, var, 0.1, grad);
              },
              [](double* s, double g) { s[0] -= 0.1 * g; }});
}

TEST_CASE("ApplyMomentum matches the reference, with and without nesterov", "[training]") {
  CheckApply(MomentumCase(false));
  CheckApply(MomentumCase(true));
}

TEST_CASE("ApplyAdam matches the reference, with and without nesterov", "[training]") {
  CheckApply(AdamCase(false));
  CheckApply(AdamCase(true));
}

TEST_CASE("ApplyAdamW decays var, then takes the Adam step", "[training]") {
  AdamParams p;
  CheckApply({{{-1, 1}, {0.01, 1}},
              [=](const Scope& s, const Output& var, const Slots& slots, const Output& grad) {
                return ops::ApplyAdamW(s, var, slots[0], slots[1], p.beta1_power, p.beta2_power,
                                       p.lr, p.beta1, p.beta2, p.epsilon, p.weight_decay, grad);
              },
              [=](double* s, double g) {
                s[0] -= p.lr * p.weight_decay * s[0];
                AdamReference(p, false, s, g);
              }});
}

TEST_CASE("ApplyRMSProp matches the reference", "[training]") {
  const double lr = 0.01, rho = 0.9, momentum = 0.5, epsilon = 1e-6;
  CheckApply({{{0.1, 1}, {-0.1, 0.1}},
              [=](const Scope& s, const Output& var, const Slots& slots, const Output& grad) {
                return ops::ApplyRMSProp(s, var, slots[0], slots[1], lr, rho, momentum, epsilon,
                                         grad);
              },
              [=](double* s, double g) {
                s[1] = rho * s[1] + (1 - rho) * g * g;
                s[2] = momentum * s[2] + lr * g / std::sqrt(s[1] + epsilon);
                s[0] -= s[2];
              }});
}

TEST_CASE("ApplyCenteredRMSProp matches the reference", "[training]") {
  const double lr = 0.01, rho = 0.9, momentum = 0.5, epsilon = 1e-6;
  // ms >= mg^2 initially keeps ms - mg^2 (a running variance) positive.
  CheckApply({{{-0.2, 0.2}, {0.5, 1}, {-0.1, 0.1}},
              [=](const Scope& s, const Output& var, const Slots& slots, const Output& grad) {
                return ops::ApplyCenteredRMSProp(s, var, slots[0], slots[1], slots[2], lr, rho,
                                                 momentum, epsilon, grad);
              },
              [=](double* s, double g) {
                s[1] = rho * s[1] + (1 - rho) * g;
                s[2] = rho * s[2] + (1 - rho) * g * g;
                s[3] = momentum * s[3] + lr * g / std::sqrt(s[2] - s[1] * s[1] + epsilon);
                s[0] -= s[3];
              }});
}

TEST_CASE("literal hyper-parameters take var's dtype; a graph can feed the learning rate",
          "[training]") {
  Scope s = Scope::NewRootScope();
  auto var = ops::Variable(s.WithOpName("var"), {2}, DType::kFloat64);
  auto init = ops::Assign(s, var, Tensor::FromVector<double>({1, 2}));
  auto lr = ops::Placeholder(s.WithOpName("lr"), DType::kFloat64, {});
  auto grad = ops::Const(s, Tensor::FromVector<double>({10, 20}));
  auto apply = ops::ApplyGradientDescent(s, var, lr, grad);
  auto accum = ops::Variable(s.WithOpName("accum"), {2}, DType::kFloat64);
  auto literal = ops::ApplyMomentum(s, var, accum, 0.5f, grad, 0.9f);
  CHECK(Output(literal.node()->input(2)).dtype() == DType::kFloat64);
  CHECK(Output(literal.node()->input(4)).dtype() == DType::kFloat64);
  Session session(s);
  session.Run({}, {}, {init});
  session.Run({{lr, Tensor::Scalar(0.1)}}, {}, {apply});
  Tensor out = session.Run({{lr, Tensor::Scalar(0.01)}}, {apply})[0];
  ExpectClose(out, Tensor::FromVector<double>({1 - 1 - 0.1, 2 - 2 - 0.2}), 1e-15, 1e-15);
}

TEST_CASE("apply ops reject bad shapes while building, naming the argument", "[training]") {
  Scope s = Scope::NewRootScope();
  auto var = ops::Variable(s.WithOpName("var"), {4, 3}, DType::kFloat32);
  auto m = ops::Variable(s.WithOpName("m"), {4, 3}, DType::kFloat32);
  auto v = ops::Variable(s.WithOpName("v"), {4, 3}, DType::kFloat32);
  auto accum = ops::Variable(s.WithOpName("accum"), {4}, DType::kFloat32);
  auto grad = ops::Placeholder(s.WithOpName("grad"), DType::kFloat32, {3, 4});
  auto good_grad = ops::Placeholder(s, DType::kFloat32, {-1, 3});
  ExpectError([&] { ops::ApplyAdam(s, var, m, v, 0.9, 0.99, 0.1, 0.9, 0.99, 1e-7, grad); },
              Code::kInvalidArgument, "grad has shape [3,4] but var has shape [4,3]");
  ExpectError([&] { ops::ApplyMomentum(s, var, accum, 0.1, good_grad, 0.9); },
              Code::kInvalidArgument, "accum has shape [4] but var has shape [4,3]");
  ExpectError([&] { ops::ApplyRMSProp(s, var, m, v, {0.1f, 0.2f}, 0.9, 0.5, 1e-6, good_grad); },
              Code::kInvalidArgument, "lr must be a scalar, got shape [2]");
  ExpectError([&] { ops::ApplyGradientDescent(s, ops::Const(s, 1.0f), 0.1, 1.0f); },
              Code::kInvalidArgument, "input 'var' must be a variable");
  // A partial grad shape refines nothing but is accepted.
  CHECK(ops::ApplyGradientDescent(s, var, 0.1, good_grad).shape() == Shape({4, 3}));
}

namespace {

// Adam over variables of partial shape [-1], so that mismatches surface
// only at run time.
struct PartialAdam {
  Scope s = Scope::NewRootScope();
  Output var = ops::Variable(s.WithOpName("var"), {-1}, DType::kFloat32);
  Output m = ops::Variable(s.WithOpName("m"), {-1}, DType::kFloat32);
  Output v = ops::Variable(s.WithOpName("v"), {-1}, DType::kFloat32);
  Output grad = ops::Placeholder(s.WithOpName("grad"), DType::kFloat32, {-1});
  Output lr = ops::Placeholder(s.WithOpName("lr"), DType::kFloat32);
  Output adam = ops::ApplyAdam(s.WithOpName("adam"), var, m, v, 0.9f, 0.99f, lr, 0.9f, 0.99f,
                               1e-7f, grad);
  Session session{s};

  void Init(const std::vector<std::pair<Output, int64_t>>& sizes) {
    for (auto [variable, n] : sizes)
      session.Run({}, {}, {ops::Assign(s, variable, Tensor::Zeros(DType::kFloat32, {n}))});
  }
  void Step(int64_t grad_size, Tensor lr_value = Tensor::Scalar(0.1f)) {
    Tensor ones(DType::kFloat32, {grad_size});
    for (float& x : ones.flat<float>()) x = 1;
    session.Run({{grad, ones}, {lr, lr_value}}, {}, {adam});
  }
};

}  // namespace

TEST_CASE("apply kernels check shapes at run time, naming the node and argument", "[training]") {
  PartialAdam p;
  p.Init({{p.var, 3}, {p.m, 4}, {p.v, 3}});
  ExpectError([&] { p.Step(3); }, Code::kInvalidArgument,
              "ApplyAdam 'adam': m has shape [4] but var has shape [3]");
  p.Init({{p.m, 3}});
  ExpectError([&] { p.Step(5); }, Code::kInvalidArgument,
              "ApplyAdam 'adam': grad has shape [5] but var has shape [3]");
  ExpectError([&] { p.Step(3, Tensor::FromVector<float>({0.1f})); }, Code::kInvalidArgument,
              "ApplyAdam 'adam': lr must be a scalar, got shape [1]");
  p.Step(3);  // the session is still usable
}

TEST_CASE("an uninitialised slot gives a clear error and leaves var alone", "[training]") {
  PartialAdam p;
  p.Init({{p.var, 3}, {p.v, 3}});
  ExpectError([&] { p.Step(3); }, Code::kFailedPrecondition,
              "ApplyAdam 'adam': m (variable 'm') is uninitialised");
  Tensor zeros = Tensor::Zeros(DType::kFloat32, {3});
  ExpectEqual(p.session.Run({p.var})[0], zeros);
  p.Init({{p.m, 3}});
  p.Step(3);
  CHECK(p.session.Run({p.var})[0].data<float>()[0] < 0);
}

TEST_CASE("a variable given as var and as a slot is rejected", "[training]") {
  Scope s = Scope::NewRootScope();
  auto var = ops::Variable(s.WithOpName("var"), {2}, DType::kFloat32);
  auto init = ops::Assign(s, var, Tensor::FromVector<float>({1, 2}));
  auto apply = ops::ApplyMomentum(s.WithOpName("momentum"), var, var, 0.1f, {1.0f, 1.0f}, 0.9f);
  Session session(s);
  session.Run({}, {}, {init});
  ExpectError([&] { session.Run({apply}); }, Code::kInvalidArgument,
              "ApplyMomentum 'momentum': var and accum are the same variable 'var'");
  ExpectEqual(session.Run({var})[0], Tensor::FromVector<float>({1, 2}));
}

TEST_CASE("a value read before an update keeps the old value (copy-on-write)", "[training]") {
  Scope s = Scope::NewRootScope();
  auto var = ops::Variable(s.WithOpName("var"), {2}, DType::kFloat32);
  auto m = ops::Variable(s.WithOpName("m"), {2}, DType::kFloat32);
  auto v = ops::Variable(s.WithOpName("v"), {2}, DType::kFloat32);
  auto zeros = Tensor::Zeros(DType::kFloat32, {2});
  std::vector<TensorName> init = {ops::Assign(s, var, Tensor::FromVector<float>({1, 2})),
                                  ops::Assign(s, m, zeros), ops::Assign(s, v, zeros)};
  auto adam = ops::ApplyAdam(s, var, m, v, 0.9f, 0.99f, 0.1f, 0.9f, 0.99f, 1e-7f, {1.0f, -1.0f});
  Session session(s);
  session.Run({}, {}, init);
  std::vector<Tensor> before = session.Run({var, m, v});
  Tensor first = session.Run({adam})[0];
  Tensor second = session.Run({adam})[0];
  ExpectEqual(before[0], Tensor::FromVector<float>({1, 2}));
  ExpectEqual(before[1], zeros);
  ExpectEqual(before[2], zeros);
  CHECK(first.data<float>()[0] < 1);
  CHECK(second.data<float>()[0] < first.data<float>()[0]);
  ExpectEqual(session.Run({var})[0], second);
}
