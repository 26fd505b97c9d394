// Training-step time of the spiral MLP (2 -> 128 -> 128 -> 3, ReLU, sparse
// softmax cross-entropy, Adam), batch 64, float32: one Session::Run that
// feeds the batch, fetches the loss and runs the train op (forward,
// backward and six fused Adam updates). The same model in PyTorch:
// bench/torch_mlp.py; side by side: bench/compare_mlp.
#include <benchmark/benchmark.h>

#include "graph/session.h"
#include "models/data/spirals.h"
#include "models/mlp.h"

namespace dflow {
namespace {

void BM_MlpTrainStep(benchmark::State& state) {
  const int64_t batch = state.range(0);
  Scope s = Scope::NewRootScope();
  s.graph().set_seed(1);
  models::MlpClassifier net = models::BuildMlpClassifier(s, {});
  Session session(s, {.num_threads = static_cast<int>(state.range(1))});
  session.Run({}, {}, {net.init});
  models::LabelledPoints data = models::MakeSpirals({.points_per_class = batch});
  std::vector<int64_t> rows(batch);
  for (int64_t i = 0; i < batch; ++i) rows[i] = i * 3 % (3 * batch);  // all three classes
  models::LabelledPoints b = models::Gather(data, rows);
  FeedList feeds = {{net.x, b.points}, {net.labels, b.labels}};
  for (int i = 0; i < 20; ++i) session.Run(feeds, {net.loss}, {net.train});  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(session.Run(feeds, {net.loss}, {net.train}));
  state.counters["us_per_step"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 1e-6,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_MlpTrainStep)->Args({64, 2})->Args({64, 1})->UseRealTime();

}  // namespace
}  // namespace dflow

BENCHMARK_MAIN();
