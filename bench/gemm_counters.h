// The GFLOP/s counter the GEMM benchmarks report: 2 * M * K * N flops per
// iteration, from the benchmark's first three ranges (M, K, N).
#pragma once

#include <benchmark/benchmark.h>

inline void SetGemmFlopCounter(benchmark::State& state) {
  double gflop = 2e-9 * static_cast<double>(state.range(0) * state.range(1) * state.range(2));
  state.counters["GFLOP"] = benchmark::Counter(gflop, benchmark::Counter::kIsIterationInvariantRate);
}
