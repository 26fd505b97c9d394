#include "tests/dist/replicated_mlp.h"

#include "autodiff/gradients.h"
#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::testing {

ReplicatedMlp BuildReplicatedMlp(int64_t seed) {
  ReplicatedMlp m;
  const Scope& s = m.scope;
  s.graph().set_seed(seed);
  m.x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 2});
  m.labels = ops::Placeholder(s.WithOpName("labels"), DType::kInt32, {-1});
  Output h = m.x;
  for (int i = 0; i < 2; ++i)
    h = models::Dense(s.NewSubScope("hidden"), h, 32, {.activation = models::Activation::kRelu}).output;
  m.logits = models::Dense(s.NewSubScope("logits"), h, 3).output;
  Output loss = ops::Mean(s, ops::SparseSoftmaxCrossEntropyWithLogits(s, m.logits, m.labels).loss, 0);
  m.vars = autodiff::TrainableVariables(s.graph());
  m.grads = autodiff::AddGradients(s, {loss}, m.vars);
  std::vector<autodiff::GradAndVar> apply;
  for (const Output& var : m.vars) {
    m.mean_grads.push_back(ops::Placeholder(s, DType::kFloat32, var.shape()));
    apply.push_back({m.mean_grads.back(), var});
  }
  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(s, 0.01));
  m.apply = adam.ApplyGradients(s, apply);
  m.init = ops::GlobalVariablesInitializer(s);
  return m;
}

models::LabelledPoints WorkerBatch(const models::LabelledPoints& data, int k, int num_workers,
                                   int step, int64_t batch) {
  const int64_t rows = data.labels.NumElements();
  const int64_t shard_rows = (rows - k + num_workers - 1) / num_workers;
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < batch; ++i)
    picked.push_back(k + ((step * batch + i) % shard_rows) * num_workers);
  return models::Gather(data, picked);
}

std::vector<Tensor> ComputeGradients(Session& session, const ReplicatedMlp& m,
                                     const models::LabelledPoints& batch) {
  std::vector<TensorName> fetches(m.grads.begin(), m.grads.end());
  return session.Run({{m.x, batch.points}, {m.labels, batch.labels}}, fetches);
}

void ApplyGradients(Session& session, const ReplicatedMlp& m, const std::vector<Tensor>& grads) {
  FeedList feeds;
  for (size_t v = 0; v < grads.size(); ++v) feeds.push_back({m.mean_grads[v], grads[v]});
  session.Run(feeds, {}, {m.apply});
}

}  // namespace dflow::testing
