// Data-parallel training with compressed gradients, N workers simulated in
// one process: each computes gradients on its own shard, encodes them with
// its own codec (its own 1-bit residuals), the aggregator decodes and
// averages them (and, for 1-bit, quantizes the mean again with its own
// residual before "sending it back", as AdaLearner's coordinator does), and
// the mean is applied with Adam. 1-bit with error feedback must still learn
// the spirals about as well as uncompressed float32.
#include <catch2/catch.hpp>
#include <numeric>

#include "autodiff/gradients.h"
#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "dist/gradient_codec.h"
#include "graph/session.h"
#include "models/data/spirals.h"
#include "models/layers.h"
#include "models/mlp.h"
#include "ops/ops.h"

namespace dflow {
namespace {

struct ReplicatedMlp {
  Scope scope = Scope::NewRootScope();
  Output x, labels, logits;
  std::vector<Output> vars, grads, mean_grads;  // mean_grads are fed
  Node* apply = nullptr;
  Node* init = nullptr;
};

ReplicatedMlp BuildMlp() {
  ReplicatedMlp m;
  const Scope& s = m.scope;
  s.graph().set_seed(7);
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

// Rows of worker k's shard: every num_workers-th point, starting at k.
std::vector<int64_t> Shard(int64_t rows, int k, int num_workers) {
  std::vector<int64_t> shard;
  for (int64_t i = k; i < rows; i += num_workers) shard.push_back(i);
  return shard;
}

// Trains with `kind` on `num_workers` simulated workers; held-out accuracy.
double TrainDataParallel(dist::CodecKind kind, int num_workers, int steps) {
  auto train = models::MakeSpirals({.points_per_class = 400, .seed = 3});
  auto test = models::MakeSpirals({.points_per_class = 200, .seed = 4});
  ReplicatedMlp m = BuildMlp();
  Session session(m.scope, {.num_threads = 1});
  session.Run({}, {}, {m.init});
  const size_t num_vars = m.vars.size();
  // codecs[k][v]: worker k's encoder of variable v; back[v]: the aggregator's.
  std::vector<std::vector<std::unique_ptr<dist::GradientCodec>>> codecs(num_workers);
  std::vector<std::unique_ptr<dist::GradientCodec>> back;
  for (size_t v = 0; v < num_vars; ++v) {
    for (auto& worker : codecs) worker.push_back(dist::MakeGradientCodec(kind, m.vars[v].shape()));
    back.push_back(dist::MakeGradientCodec(kind, m.vars[v].shape()));
  }
  const int64_t batch = 16;
  for (int step = 0; step < steps; ++step) {
    std::vector<Tensor> sums(num_vars);
    for (int k = 0; k < num_workers; ++k) {
      std::vector<int64_t> shard = Shard(train.labels.NumElements(), k, num_workers);
      std::vector<int64_t> rows;
      for (int64_t i = 0; i < batch; ++i) rows.push_back(shard[(step * batch + i) % shard.size()]);
      auto data = models::Gather(train, rows);
      std::vector<TensorName> fetches(m.grads.begin(), m.grads.end());
      auto grads = session.Run({{m.x, data.points}, {m.labels, data.labels}}, fetches);
      for (size_t v = 0; v < num_vars; ++v) {
        Tensor decoded = codecs[k][v]->Decode(codecs[k][v]->Encode(grads[v]));
        if (k == 0) sums[v] = decoded;  // summed in worker order: deterministic
        else
          for (int64_t i = 0; i < decoded.NumElements(); ++i) sums[v].data<float>()[i] += decoded.data<float>()[i];
      }
    }
    FeedList feeds;
    for (size_t v = 0; v < num_vars; ++v) {
      for (float& g : sums[v].flat<float>()) g /= static_cast<float>(num_workers);
      feeds.push_back({m.mean_grads[v], back[v]->Decode(back[v]->Encode(sums[v]))});
    }
    session.Run(feeds, {}, {m.apply});
  }
  return models::Accuracy(session.Run({{m.x, test.points}}, {m.logits})[0], test.labels);
}

TEST_CASE("1-bit gradients with error feedback still train the spiral MLP", "[codecs][training]") {
  const int workers = 4, steps = 400;
  double plain = TrainDataParallel(dist::CodecKind::kNone, workers, steps);
  double half = TrainDataParallel(dist::CodecKind::kFloat16, workers, steps);
  double one_bit = TrainDataParallel(dist::CodecKind::kOneBit, workers, steps);
  INFO("accuracy: float32 " << plain << ", fp16 " << half << ", 1-bit " << one_bit);
  CHECK(plain > 0.9);
  CHECK(half > plain - 0.02);
  CHECK(one_bit > 0.9);
  CHECK(one_bit > plain - 0.05);
}

}  // namespace
}  // namespace dflow
