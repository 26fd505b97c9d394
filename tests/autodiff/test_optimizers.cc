// Optimizers end to end through a Session: the update each one applies
// (against hand-computed values), fed gradients, convergence on a quadratic,
// frozen variables, weight decay, clipping, the global step and the schedules.
#include <cmath>

#include <catch2/catch.hpp>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::autodiff;
using namespace dflow::testing;

namespace {

// loss = sum((w - target)^2) with w starting at `start`.
struct Quadratic {
  Scope s = Scope::NewRootScope();
  Output w, loss;
  explicit Quadratic(std::vector<double> start, std::vector<double> target = {1, -2, 3}) {
    w = ops::Variable(s.WithOpName("w"), Tensor::FromVector(start));
    loss = ops::Sum(s, ops::Square(s, ops::Sub(s, w, Tensor::FromVector(target))), 0);
  }
  // Runs `steps` training steps and returns w.
  Tensor Train(Node* train, int steps) {
    Session session(s);
    session.Run({}, {}, {ops::GlobalVariablesInitializer(s)});
    for (int i = 0; i < steps; ++i) session.Run({}, {}, {train});
    return session.Run({w})[0];
  }
};

Output Lr(const Scope& s, double lr) { return ConstantLearningRate(s, lr, DType::kFloat64); }

}  // namespace

TEST_CASE("gradient descent takes exactly lr * grad", "[optimizers]") {
  Quadratic q({0, 0, 0});
  GradientDescentOptimizer sgd(Lr(q.s, 0.1));
  // grad = 2 (w - target) = {-2, 4, -6}
  ExpectClose(q.Train(sgd.Minimize(q.s, q.loss), 1), Tensor::FromVector<double>({0.2, -0.4, 0.6}));
}

TEST_CASE("Adam's first steps match the formula with bias correction", "[optimizers]") {
  Quadratic q({0, 0, 0});
  AdamOptimizer adam(Lr(q.s, 0.1));
  Node* train = adam.Minimize(q.s, q.loss);
  // Step 1: m = 0.1 g, v = 0.001 g^2, lr_t = 0.1 sqrt(0.001) / 0.1, so the
  // step is lr * sign(g) (up to epsilon): every coordinate moves by 0.1.
  ExpectClose(q.Train(train, 1), Tensor::FromVector<double>({0.1, -0.1, 0.1}), 1e-6);
}

TEST_CASE("MinimizeWithFedGradients applies the gradients fed to it", "[optimizers]") {
  Quadratic q({0, 0, 0});
  GradientDescentOptimizer sgd(Lr(q.s, 0.1));
  FedGradients fed = sgd.MinimizeWithFedGradients(q.s, q.loss);
  REQUIRE(fed.gradients.size() == 1);
  REQUIRE(fed.feeds.size() == 1);
  CHECK(fed.feeds[0].node()->name() == "w/mean_gradient");
  Session session(q.s);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(q.s)});
  // The computed gradient, 2 (w - target), is fetched; the fed one is applied.
  ExpectClose(session.Run({fed.gradients[0]})[0], Tensor::FromVector<double>({-2, 4, -6}));
  session.Run({{fed.feeds[0], Tensor::FromVector<double>({1, 2, 3})}}, {}, {fed.apply});
  ExpectClose(session.Run({q.w})[0], Tensor::FromVector<double>({-0.1, -0.2, -0.3}));
}

TEST_CASE("every optimizer converges on a quadratic", "[optimizers]") {
  auto converge = [](auto make, int steps) {
    Quadratic q({0, 0, 0});
    auto optimizer = make(q.s);
    Tensor w = q.Train(optimizer.Minimize(q.s, q.loss), steps);
    ExpectClose(w, Tensor::FromVector<double>({1, -2, 3}), 1e-3, 1e-3);
  };
  converge([](const Scope& s) { return GradientDescentOptimizer(Lr(s, 0.1)); }, 100);
  converge([](const Scope& s) { return MomentumOptimizer(Lr(s, 0.05), 0.9); }, 300);
  converge([](const Scope& s) { return MomentumOptimizer(Lr(s, 0.05), 0.9, true); }, 300);
  converge([](const Scope& s) { return AdamOptimizer(Lr(s, 0.05)); }, 1000);
  converge([](const Scope& s) { return AdamWOptimizer(Lr(s, 0.05), {.weight_decay = 0}); }, 1000);
  converge([](const Scope& s) { return RMSPropOptimizer(Lr(s, 0.01)); }, 1500);
  converge([](const Scope& s) { return RMSPropOptimizer(Lr(s, 0.01), {.centered = true}); }, 1500);
}

TEST_CASE("a var_list freezes the other variables", "[optimizers]") {
  Scope s = Scope::NewRootScope();
  auto a = ops::Variable(s.WithOpName("a"), Tensor::FromVector<double>({1}));
  auto b = ops::Variable(s.WithOpName("b"), Tensor::FromVector<double>({1}));
  auto loss = ops::Sum(s, ops::Mul(s, a, b), 0);
  GradientDescentOptimizer sgd(Lr(s, 0.5));
  Node* train = sgd.Minimize(s, loss, {b});
  Session session(s);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(s)});
  session.Run({}, {}, {train});
  auto out = session.Run({a, b});
  ExpectClose(out[0], Tensor::FromVector<double>({1}));
  ExpectClose(out[1], Tensor::FromVector<double>({0.5}));
  CHECK(TrainableVariables(s.graph()).size() == 2);  // not global_step
}

TEST_CASE("weight decay, clipping and the global step", "[optimizers]") {
  Quadratic q({0, 0, 0});
  // L2 decay adds 0.5 * w = 0 at w = 0; clipping scales g = {-2, 4, -6}
  // (norm sqrt(56)) to norm 1.
  GradientDescentOptimizer sgd(Lr(q.s, 1.0), {.weight_decay = 0.5, .clip_global_norm = 1.0});
  Node* train = sgd.Minimize(q.s, q.loss);
  Session session(q.s);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(q.s)});
  session.Run({}, {}, {train});
  double n = std::sqrt(56.0);
  ExpectClose(session.Run({q.w})[0], Tensor::FromVector<double>({2 / n, -4 / n, 6 / n}), 1e-9);
  session.Run({}, {}, {train});
  CHECK(session.Run({GetOrCreateGlobalStep(q.s)})[0].scalar<int64_t>() == 2);
}

TEST_CASE("learning-rate schedules follow the global step", "[optimizers]") {
  Scope s = Scope::NewRootScope();
  Output step = GetOrCreateGlobalStep(s);
  auto decay = StepDecay(s, 1.0, step, {.decay_steps = 10, .decay_rate = 0.5}, DType::kFloat64);
  auto cosine = CosineDecay(s, 2.0, step, {.decay_steps = 100, .alpha = 0.1}, DType::kFloat64);
  auto warm = LinearWarmup(s, ConstantLearningRate(s, 1.0, DType::kFloat64), step, 4);
  auto set = ops::Placeholder(s.WithOpName("set"), DType::kInt64, {});
  auto assign = ops::Assign(s, step, set);
  Session session(s);
  auto at = [&](int64_t value) {
    session.Run({{set, Tensor::Scalar<int64_t>(value)}}, {}, {assign});
    auto out = session.Run({decay, cosine, warm});
    return std::vector<double>{out[0].scalar<double>(), out[1].scalar<double>(),
                               out[2].scalar<double>()};
  };
  auto v = at(0);
  CHECK(v == std::vector<double>{1.0, 2.0, 0.25});
  v = at(25);
  CHECK(v[0] == 0.25);
  CHECK(v[1] == Approx(2 * (0.9 * 0.5 * (1 + std::cos(M_PI / 4)) + 0.1)));
  CHECK(v[2] == 1.0);
  CHECK(at(500)[1] == Approx(0.2));  // past decay_steps: the floor alpha * lr
}

TEST_CASE("optimizer errors name what is wrong", "[optimizers]") {
  Scope s = Scope::NewRootScope();
  auto w = ops::Variable(s.WithOpName("w"), Tensor::FromVector<double>({1}));
  auto other = ops::Variable(s.WithOpName("other"), Tensor::FromVector<double>({1}));
  auto loss = ops::Sum(s.WithOpName("loss"), ops::Square(s, w), 0);
  GradientDescentOptimizer sgd(Lr(s, 0.1));
  ExpectError([&] { sgd.Minimize(s, loss, {other}); }, Code::kInvalidArgument,
              "no variable in the list gets a gradient from loss 'loss'");
  ExpectError([&] { GradientDescentOptimizer bad(ops::Const(s, Tensor::FromVector<double>({1, 2}))); },
              Code::kInvalidArgument, "the learning rate must be a float scalar");
}
