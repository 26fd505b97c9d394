// The 2-layer MLP that the multi-device and multi-process tests train and
// compare bit for bit: y = relu(x w1 + b1) w2 + b2, a squared-error loss and
// Adam, layer 1 asking for one device and layer 2 for another ("" = any).
// Also WithDeadline, so that a hung step fails the test program loudly.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <vector>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

namespace dflow::testing {

// Runs `fn` on its own thread and exits the test program when it takes more
// than `seconds` (the future's destructor would wait forever).
template <typename Fn>
auto WithDeadline(Fn fn, int seconds = 30) {
  auto result = std::async(std::launch::async, std::move(fn));
  if (result.wait_for(std::chrono::seconds(seconds)) != std::future_status::ready) {
    std::fprintf(stderr, "did not finish within %d s: something hangs\n", seconds);
    std::_Exit(3);
  }
  return result.get();
}

struct TwoLayerMlp {
  Scope s = Scope::NewRootScope();
  Output x, target, loss;
  std::vector<Output> variables;
  Node* train = nullptr;

  TwoLayerMlp(const std::string& device1, const std::string& device2) {
    Scope layer1 = s.WithDevice(device1), layer2 = s.WithDevice(device2);
    x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, Shape({8, 5}));
    target = ops::Placeholder(s.WithOpName("target"), DType::kFloat32, Shape({8, 3}));
    auto w1 = ops::Variable(layer1.WithOpName("w1"), RandomTensor(DType::kFloat32, Shape({5, 16}), 1));
    auto b1 = ops::Variable(layer1.WithOpName("b1"), RandomTensor(DType::kFloat32, Shape({16}), 2));
    auto w2 = ops::Variable(layer2.WithOpName("w2"), RandomTensor(DType::kFloat32, Shape({16, 3}), 3));
    auto b2 = ops::Variable(layer2.WithOpName("b2"), RandomTensor(DType::kFloat32, Shape({3}), 4));
    auto hidden = ops::Relu(layer1, ops::Add(layer1, ops::MatMul(layer1, x, w1), b1));
    auto y = ops::Add(layer2, ops::MatMul(layer2, hidden, w2), b2);
    loss = ops::Mean(s.WithOpName("loss"), ops::Square(s, ops::Sub(s, y, target)), {0, 1});
    variables = {w1, b1, w2, b2};
    autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(s, 0.01));
    train = adam.Minimize(s, loss);
  }

  // The losses of `steps` training steps, then the variables' final values
  // (what the gradients updated).
  std::vector<Tensor> Train(Session& session, int steps) {
    session.Run({}, {}, {ops::GlobalVariablesInitializer(s)});
    std::vector<Tensor> results;
    for (int i = 0; i < steps; ++i) {
      FeedList feeds = {{x, RandomTensor(DType::kFloat32, Shape({8, 5}), 100 + i)},
                        {target, RandomTensor(DType::kFloat32, Shape({8, 3}), 200 + i)}};
      results.push_back(session.Run(feeds, {loss}, {train})[0]);
    }
    std::vector<TensorName> fetches(variables.begin(), variables.end());
    for (Tensor& value : session.Run(fetches)) results.push_back(value);
    return results;
  }
};

}  // namespace dflow::testing
