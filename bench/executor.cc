// Executor overhead: a chain of tiny Adds (4 float32 elements each) run by
// Session::Run. Each node does almost no arithmetic, so the time per node is
// what the engine itself costs per node: dependency counting, kernel call,
// output bookkeeping and buffer reuse. Target: under 1 µs per node.
#include <chrono>

#include <benchmark/benchmark.h>

#include "graph/session.h"
#include "ops/ops.h"

namespace dflow {
namespace {

// y_0 = x, y_i = y_(i-1) + x, fetch y_n. x is fed through a Placeholder, so
// constant folding cannot remove the chain, and CSE finds nothing to merge.
void BM_AddChain(benchmark::State& state) {
  const int64_t length = state.range(0);
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {4});
  Output y = x;
  for (int64_t i = 0; i < length; ++i) y = ops::Add(s, y, x);
  Session session(s);
  FeedList feeds = {{x, Tensor::FromVector<float>({1, 2, 3, 4})}};
  std::vector<TensorName> fetches = {y};

  // The first Run builds and caches the executor; it also checks the answer.
  std::vector<float> got = session.Run(feeds, fetches)[0].ToVector<float>();
  float n = static_cast<float>(length + 1);
  if (got != std::vector<float>{n, 2 * n, 3 * n, 4 * n}) {
    state.SkipWithError("wrong result");
    return;
  }
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) benchmark::DoNotOptimize(session.Run(feeds, fetches));
  double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  state.counters["ns_per_node"] = ns / (static_cast<double>(state.iterations()) * static_cast<double>(length));
  state.counters["nodes"] = static_cast<double>(length);
}
BENCHMARK(BM_AddChain)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->UseRealTime();

}  // namespace
}  // namespace dflow

BENCHMARK_MAIN();
