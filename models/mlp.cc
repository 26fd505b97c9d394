// The MLP classifier; see mlp.h.
#include "models/mlp.h"

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::models {

MlpClassifier BuildMlpClassifier(const Scope& s, const MlpOptions& options) {
  MlpClassifier m;
  m.x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, options.inputs});
  m.labels = ops::Placeholder(s.WithOpName("labels"), DType::kInt32, {-1});
  Output h = m.x;
  for (size_t i = 0; i < options.hidden.size(); ++i)
    h = Dense(s.NewSubScope("hidden" + std::to_string(i + 1)), h, options.hidden[i],
              {.activation = Activation::kRelu}).output;
  m.logits = Dense(s.NewSubScope("logits"), h, options.classes).output;
  auto xent = ops::SparseSoftmaxCrossEntropyWithLogits(s, m.logits, m.labels);
  m.loss = ops::Mean(s.WithOpName("loss"), xent.loss, 0);
  Output lr = options.decay_steps > 0
                  ? autodiff::CosineDecay(s, options.learning_rate, autodiff::GetOrCreateGlobalStep(s),
                                          {.decay_steps = options.decay_steps, .alpha = 0.05})
                  : autodiff::ConstantLearningRate(s, options.learning_rate);
  autodiff::AdamOptimizer adam(lr);
  m.train = adam.Minimize(s, m.loss);
  m.init = ops::GlobalVariablesInitializer(s.WithOpName("init"));
  return m;
}

double Accuracy(const Tensor& logits, const Tensor& labels) {
  DFLOW_REQUIRE(logits.rank() == 2 && labels.rank() == 1 && logits.dim(0) == labels.dim(0),
                "Accuracy: logits ", logits.shape().ToString(), " do not match labels ",
                labels.shape().ToString());
  int64_t n = labels.NumElements(), classes = logits.dim(1), correct = 0;
  const float* row = logits.data<float>();
  for (int64_t i = 0; i < n; ++i, row += classes) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) best = row[c] > row[best] ? c : best;
    correct += best == labels.data<int32_t>()[i];
  }
  return n == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(n);
}

}  // namespace dflow::models
