// MatMul throughput in GFLOP/s: dflow's MatMul run through a Session (two
// placeholders fed every step, so nothing is constant-folded; the session's
// pool has 2 threads, or 1) side by side with calling Eigen directly,
// threaded by Eigen itself (OpenMP, 2 threads) and single-threaded.
// Target: dflow >= 0.95x Eigen with 2 threads.
//
//   build/bench/bench_matmul --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <Eigen/Core>

#include "graph/session.h"
#include "ops/ops.h"

namespace {

using namespace dflow;

constexpr int kThreads = 2;

void SetFlopCounter(benchmark::State& state, int64_t n) {
  double gflop = 2.0 * static_cast<double>(n) * n * n * 1e-9;  // n^3 multiply-adds
  // Reported as "GFLOP=<n>/s": GFLOP per second of real time.
  state.counters["GFLOP"] = benchmark::Counter(gflop, benchmark::Counter::kIsIterationInvariantRate);
}

Tensor RandomMatrix(int64_t n, float scale) {
  Tensor t(DType::kFloat32, {n, n});
  Eigen::Map<Eigen::ArrayXf>(t.data<float>(), n * n) = Eigen::ArrayXf::Random(n * n) * scale;
  return t;
}

void BM_DflowMatMul(benchmark::State& state) {
  int64_t n = state.range(0);
  Scope s = Scope::NewRootScope();
  auto a = ops::Placeholder(s.WithOpName("a"), DType::kFloat32, {n, n});
  auto b = ops::Placeholder(s.WithOpName("b"), DType::kFloat32, {n, n});
  auto c = ops::MatMul(s.WithOpName("c"), a, b);
  Session session(s, SessionOptions{.num_threads = static_cast<int>(state.range(1))});
  FeedList feeds = {{a, RandomMatrix(n, 1)}, {b, RandomMatrix(n, 1)}};
  session.Run(feeds, {c});  // builds and caches the executor
  for (auto _ : state) {
    std::vector<Tensor> out = session.Run(feeds, {c});
    benchmark::DoNotOptimize(out[0].raw_data());
  }
  SetFlopCounter(state, n);
}

void BM_EigenMatMul(benchmark::State& state) {
  int64_t n = state.range(0);
  Eigen::setNbThreads(static_cast<int>(state.range(1)));
  Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf c(n, n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  SetFlopCounter(state, n);
}

// n x n times n x n, with kThreads threads and with one. Real time, since
// the work runs on several threads.
void Sizes(benchmark::internal::Benchmark* bench) {
  for (int64_t n : {256, 512, 1024}) bench->Args({n, kThreads})->Args({n, 1});
  bench->ArgNames({"n", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_DflowMatMul)->Apply(Sizes);
BENCHMARK(BM_EigenMatMul)->Apply(Sizes);

}  // namespace

BENCHMARK_MAIN();
