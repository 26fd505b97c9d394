// The products behind convolution filter gradients, dw = x^T * dy with a
// long inner dimension (every pixel of the batch) and a small output, on one
// thread: Eigen's general product (what cpu::Gemm calls for other shapes)
// against GemmLongK (ops/cpu/gemm_long_k.h). The shapes are MobileNetV1-SSD300's
// at batch 4: its pointwise layers (k = N*H*W) and im2col chunks of its 3x3
// convolutions. This is what LongKPays is tuned on.
//
//   build/bench/bench_conv_gemm --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <Eigen/Core>

#include "bench/gemm_counters.h"

#include "ops/cpu/gemm_long_k.h"

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Operands {
  Matrix a, b, c;  // a [k, m], b [k, n], c [m, n]
  explicit Operands(const benchmark::State& state)
      : a(Matrix::Random(state.range(1), state.range(0))),
        b(Matrix::Random(state.range(1), state.range(2))),
        c(state.range(0), state.range(2)) {}
};

void BM_Eigen(benchmark::State& state) {
  Operands x(state);
  for (auto _ : state) {
    x.c.noalias() = x.a.transpose() * x.b;
    benchmark::DoNotOptimize(x.c.data());
  }
  SetGemmFlopCounter(state);
}

void BM_LongK(benchmark::State& state) {
  Operands x(state);
  for (auto _ : state) {
    dflow::cpu::GemmLongK(nullptr, x.a.data(), x.b.data(), x.c.data(), x.c.rows(), x.a.rows(),
                          x.c.cols());
    benchmark::DoNotOptimize(x.c.data());
  }
  SetGemmFlopCounter(state);
}

void Shapes(benchmark::internal::Benchmark* bench) {
  const int64_t shapes[][3] = {
      {32, 90000, 64},  {64, 22500, 128}, {128, 22500, 128}, {256, 5776, 256}, {512, 1444, 512},
      {1024, 400, 1024}, {27, 38700, 32},  {4608, 209, 24},   {4608, 209, 126}, {9216, 100, 24},
      {256, 100, 512}};
  for (auto& s : shapes) bench->Args({s[0], s[1], s[2]});
  bench->ArgNames({"m", "k", "n"})->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_Eigen)->Apply(Shapes);
BENCHMARK(BM_LongK)->Apply(Shapes);

}  // namespace

BENCHMARK_MAIN();
