// small_mlp: the smallest whole dflow training program, the one a new user
// writes first: an MLP (2 -> 64 -> 64 -> 3) learns the three spirals with
// Adam, then reports held-out accuracy. bench/mlp_lines counts its lines
// beside the same program in Python (small_mlp.py) and in libtorch.
#include <iostream>

#include "dflow.h"  // installed: <dflow/dflow.h>

using namespace dflow;

int main() {
  auto train = models::MakeSpirals({.points_per_class = 1000, .seed = 1});
  auto test = models::MakeSpirals({.points_per_class = 500, .seed = 2});

  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DType::kFloat32, {-1, 2});
  Output labels = ops::Placeholder(s, DType::kInt32, {-1});
  Output h = x;
  for (const char* name : {"hidden1", "hidden2"})
    h = models::Dense(s.NewSubScope(name), h, 64, {.activation = models::Activation::kRelu}).output;
  Output logits = models::Dense(s.NewSubScope("logits"), h, 3).output;
  Output loss = ops::Mean(s, ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, labels).loss, 0);
  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(s, 0.01));
  Node* train_op = adam.Minimize(s, loss);

  Session session(s);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(s)});
  for (int step = 1; step <= 1000; ++step) {
    auto out = session.Run({{x, train.points}, {labels, train.labels}}, {loss}, {train_op});
    if (step % 250 == 0) std::cout << "step " << step << " loss " << out[0].scalar<float>() << "\n";
  }
  Tensor test_logits = session.Run({{x, test.points}}, {logits})[0];
  std::cout << "held-out accuracy " << models::Accuracy(test_logits, test.labels) << "\n";
}
