// A multi-layer perceptron classifier with its loss and train op: the model
// of the spiral example, the MLP benchmark and tests.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/scope.h"

namespace dflow::models {

struct MlpOptions {
  int64_t inputs = 2;
  std::vector<int64_t> hidden = {128, 128};  // ReLU layers
  int64_t classes = 3;
  double learning_rate = 0.01;  // Adam
  // Cosine-decay the learning rate to 5% over this many steps (0: constant).
  int64_t decay_steps = 0;
};

struct MlpClassifier {
  Output x;       // float32 [batch, inputs], fed
  Output labels;  // int32 [batch], fed
  Output logits;  // float32 [batch, classes]
  Output loss;    // mean sparse softmax cross-entropy
  Node* train = nullptr;  // one Adam step ("Adam/train")
  Node* init = nullptr;   // initialises every variable ("init")
};

MlpClassifier BuildMlpClassifier(const Scope& scope, const MlpOptions& options);

// The fraction of rows whose largest logit is at the label.
double Accuracy(const Tensor& logits, const Tensor& labels);

}  // namespace dflow::models
