// The products behind convolution forward passes and input gradients,
// c[m, n] = a[m, k] * b with a long m (every output pixel of the batch), on
// one thread: Eigen's general product (what cpu::Gemm runs) against
// FixedRhsGemm (ops/cpu/gemm_packed.h), packing included in both. The shapes
// are MobileNetV1-SSD300's at batch 4: pointwise layers forward (b = w) and
// input gradient (b = w^T), and the im2col products of its 3x3 heads; and
// the whole 3x3 head convolution kernel (im2col + product).
//
//   build/bench/bench_conv_kernels --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <Eigen/Core>

#include "bench/gemm_counters.h"

#include "ops/cpu/conv2d.h"
#include "ops/cpu/gemm_packed.h"

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// range(0..2) = m, k, n; range(3) = 1 when b is stored transposed ([n, k]).
struct Operands {
  Matrix a, b, c;
  bool transpose;
  explicit Operands(const benchmark::State& state)
      : a(Matrix::Random(state.range(0), state.range(1))),
        b(state.range(3) ? Matrix::Random(state.range(2), state.range(1))
                         : Matrix::Random(state.range(1), state.range(2))),
        c(state.range(0), state.range(2)),
        transpose(state.range(3) != 0) {}
};

void BM_Eigen(benchmark::State& state) {
  Operands x(state);
  for (auto _ : state) {
    if (x.transpose) x.c.noalias() = x.a * x.b.transpose();
    else x.c.noalias() = x.a * x.b;
    benchmark::DoNotOptimize(x.c.data());
  }
  SetGemmFlopCounter(state);
}

void BM_FixedRhs(benchmark::State& state) {
  Operands x(state);
  for (auto _ : state) {
    dflow::cpu::FixedRhsGemm<float> rhs(x.b.data(), x.a.cols(), x.c.cols(), x.transpose);
    rhs.Multiply(x.a.data(), x.a.rows(), x.c.data());
    benchmark::DoNotOptimize(x.c.data());
  }
  SetGemmFlopCounter(state);
}

void Shapes(benchmark::internal::Benchmark* bench) {
  const int64_t shapes[][4] = {
      // pointwise forward: [N*H*W, C] x [C, O]
      {90000, 32, 64, 0}, {22500, 64, 128, 0}, {22500, 128, 128, 0}, {5776, 128, 256, 0},
      {5776, 256, 256, 0}, {1444, 512, 512, 0}, {400, 1024, 1024, 0},
      // pointwise input gradient: [N*H*W, O] x [C, O]^T
      {90000, 64, 32, 1}, {22500, 128, 64, 1}, {1444, 512, 512, 1}, {400, 1024, 1024, 1},
      // 3x3 heads, im2col forward and input gradient
      {1444, 4608, 54, 0}, {1444, 4608, 24, 0}, {1444, 54, 4608, 1}};
  for (auto& s : shapes) bench->Args({s[0], s[1], s[2], s[3]});
  bench->ArgNames({"m", "k", "n", "bT"})->Unit(benchmark::kMillisecond);
}

// The whole Conv2D forward kernel (im2col chunks + product) at the 3x3
// SSD heads of MobileNetV1-SSD300, batch 4, one thread: range(0) = H = W,
// range(1) = input channels, range(2) = output channels.
void BM_Conv3x3Forward(benchmark::State& state) {
  const int64_t size = state.range(0), c = state.range(1), o = state.range(2);
  const dflow::ConvGeometry g =
      dflow::MakeConvGeometry({}, dflow::Shape{4, size, size, c}, dflow::Shape{3, 3, c, o});
  Matrix x = Matrix::Random(4 * size * size, c), w = Matrix::Random(9 * c, o);
  Matrix y(4 * g.out_h * g.out_w, o);
  static dflow::ThreadPool pool(1, "bench");
  for (auto _ : state) {
    dflow::cpu::Conv2DForward(pool, g, x.data(), w.data(), y.data());
    benchmark::DoNotOptimize(y.data());
  }
  const double gflop = 2e-9 * static_cast<double>(y.size() * 9 * c);
  state.counters["GFLOP"] = benchmark::Counter(gflop, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_Eigen)->Apply(Shapes);
BENCHMARK(BM_FixedRhs)->Apply(Shapes);
BENCHMARK(BM_Conv3x3Forward)
    ->Args({19, 512, 54})
    ->Args({19, 512, 24})
    ->Args({10, 1024, 54})
    ->ArgNames({"hw", "c", "o"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
