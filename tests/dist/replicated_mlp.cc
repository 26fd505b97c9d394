#include "tests/dist/replicated_mlp.h"

#include "autodiff/gradients.h"
#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "dist/training/gradient_accumulator.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace dflow::testing {

SpiralMlp BuildSpiralMlp(const Scope& s, int64_t seed) {
  SpiralMlp m;
  s.graph().set_seed(seed);
  m.x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 2});
  m.labels = ops::Placeholder(s.WithOpName("labels"), DType::kInt32, {-1});
  Output h = m.x;
  for (int i = 0; i < 2; ++i)
    h = models::Dense(s.NewSubScope("hidden"), h, 32, {.activation = models::Activation::kRelu}).output;
  m.logits = models::Dense(s.NewSubScope("logits"), h, 3).output;
  m.loss = ops::Mean(s, ops::SparseSoftmaxCrossEntropyWithLogits(s, m.logits, m.labels).loss, 0);
  return m;
}

ReplicatedMlp BuildReplicatedMlp(int64_t seed) {
  ReplicatedMlp m;
  const Scope& s = m.scope;
  SpiralMlp model = BuildSpiralMlp(s, seed);
  m.x = model.x;
  m.labels = model.labels;
  m.logits = model.logits;
  Output loss = model.loss;
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

dist::ReplicatedStep ReplicatedStepOf(const ReplicatedMlp& m) {
  dist::ReplicatedStep step;
  for (size_t v = 0; v < m.vars.size(); ++v) {
    step.gradients.push_back(m.grads[v]);
    step.gradient_feeds.push_back(m.mean_grads[v]);
  }
  step.apply.push_back(m.apply);
  return step;
}

std::vector<dist::GradientSpec> GradientSpecsOf(const ReplicatedMlp& m) {
  std::vector<dist::GradientSpec> specs;
  for (const Output& var : m.vars) specs.push_back({var.node()->name(), DType::kFloat32, var.shape()});
  return specs;
}

void TrainReplica(Session& session, const ReplicatedMlp& m, dist::DataParallelStrategy& strategy,
                  const models::LabelledPoints& data, int64_t steps, int64_t batch,
                  const std::function<void(int64_t)>& after_step) {
  const dist::ReplicatedStep step_names = ReplicatedStepOf(m);
  auto global_step = [&] { return session.resources().FindVariable("global_step")->Read().scalar<int64_t>(); };
  for (int64_t step = global_step(); step < steps; step = global_step()) {
    models::LabelledPoints mine = WorkerBatch(data, strategy.worker(), strategy.num_workers(),
                                              static_cast<int>(step), batch);
    dist::RunDataParallelStep(session, strategy, step_names, {{m.x, mine.points}, {m.labels, mine.labels}});
    if (after_step) after_step(global_step());
  }
}

std::vector<Tensor> TrainSyncInOneProcess(const models::LabelledPoints& data, int num_workers,
                                          int steps, int64_t batch) {
  ReplicatedMlp m = BuildReplicatedMlp(/*seed=*/7);
  Session session(m.scope, {.num_threads = 1});
  session.Run({}, {}, {m.init});
  dist::SyncGradientAccumulator accumulator(GradientSpecsOf(m), num_workers);
  for (int step = 0; step < steps; ++step) {
    std::vector<std::vector<Tensor>> grads(num_workers);
    for (int k = 0; k < num_workers; ++k)
      grads[k] = ComputeGradients(session, m, WorkerBatch(data, k, num_workers, step, batch));
    for (int i = 0; i < num_workers; ++i) {
      int k = (i + step) % num_workers;  // a different arrival order each step
      DFLOW_REQUIRE(accumulator.Push(k, step, grads[k]), "push of worker ", k, " at step ", step, " was stale");
    }
    ApplyGradients(session, m, accumulator.TakeMean(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
    accumulator.FinishStep();
  }
  return session.Run(std::vector<TensorName>(m.vars.begin(), m.vars.end()));
}

}  // namespace dflow::testing
