// Data-parallel training with compressed gradients, N workers simulated in
// one process: each computes gradients on its own shard, encodes them with
// its own codec (its own 1-bit residuals), the aggregator decodes and
// averages them (and, for 1-bit, quantizes the mean again with its own
// residual before "sending it back", as AdaLearner's coordinator does), and
// the mean is applied with Adam. 1-bit with error feedback must still learn
// the spirals about as well as uncompressed float32.
#include <catch2/catch.hpp>

#include "dist/training/gradient_codec.h"
#include "models/mlp.h"
#include "tests/dist/replicated_mlp.h"

namespace dflow {
namespace {

// Trains with `kind` on `num_workers` simulated workers; held-out accuracy.
double TrainDataParallel(dist::CodecKind kind, int num_workers, int steps) {
  auto train = models::MakeSpirals({.points_per_class = 400, .seed = 3});
  auto test = models::MakeSpirals({.points_per_class = 200, .seed = 4});
  testing::ReplicatedMlp m = testing::BuildReplicatedMlp();
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
      auto grads = testing::ComputeGradients(
          session, m, testing::WorkerBatch(train, k, num_workers, step, batch));
      for (size_t v = 0; v < num_vars; ++v) {
        Tensor decoded = codecs[k][v]->Decode(codecs[k][v]->Encode(grads[v]));
        if (k == 0) sums[v] = decoded;  // summed in worker order: deterministic
        else
          for (int64_t i = 0; i < decoded.NumElements(); ++i) sums[v].data<float>()[i] += decoded.data<float>()[i];
      }
    }
    std::vector<Tensor> means;
    for (size_t v = 0; v < num_vars; ++v) {
      for (float& g : sums[v].flat<float>()) g /= static_cast<float>(num_workers);
      means.push_back(back[v]->Decode(back[v]->Encode(sums[v])));
    }
    testing::ApplyGradients(session, m, means);
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
