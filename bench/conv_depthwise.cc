// The depthwise convolution kernels (ops/cpu/conv2d_depthwise.h) on one
// thread at MobileNetV1-SSD300's depthwise layers, batch 4, 3x3, SAME:
// forward, input gradient and filter gradient, in GFLOP/s (2 per tap that
// lands inside the input, counted as if none fell in the padding).
//
//   build/bench/bench_conv_depthwise --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <vector>

#include "ops/cpu/conv2d_depthwise.h"

namespace {

using namespace dflow;

// range(0) = H = W, range(1) = channels, range(2) = stride.
struct Layer {
  ConvGeometry g;
  std::vector<float> x, w, y;
  explicit Layer(const benchmark::State& state) {
    ConvParams params;
    params.stride_h = params.stride_w = state.range(2);
    const int64_t size = state.range(0), c = state.range(1);
    g = MakeConvGeometry(params, Shape{4, size, size, c}, Shape{3, 3, 1, c});
    x.resize(4 * size * size * c);
    w.resize(9 * c);
    y.resize(4 * g.out_h * g.out_w * c);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) * 0.1f - 0.8f;
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 5) * 0.2f - 0.4f;
    for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  }
  void Count(benchmark::State& state) const {
    const double gflop = 2e-9 * 9 * static_cast<double>(y.size());
    state.counters["GFLOP"] =
        benchmark::Counter(gflop, benchmark::Counter::kIsIterationInvariantRate);
  }
};

ThreadPool& OneThread() {
  static ThreadPool pool(1, "bench");
  return pool;
}

void BM_DepthwiseForward(benchmark::State& state) {
  Layer l(state);
  for (auto _ : state) cpu::DepthwiseConv2D(OneThread(), l.g, l.x.data(), l.w.data(), l.y.data());
  l.Count(state);
}

void BM_DepthwiseInputGrad(benchmark::State& state) {
  Layer l(state);
  for (auto _ : state)
    cpu::DepthwiseBackpropInput(OneThread(), l.g, l.w.data(), l.y.data(), l.x.data());
  l.Count(state);
}

void BM_DepthwiseFilterGrad(benchmark::State& state) {
  Layer l(state);
  for (auto _ : state)
    cpu::DepthwiseBackpropFilter(OneThread(), l.g, l.x.data(), l.y.data(), l.w.data());
  l.Count(state);
}

void Layers(benchmark::internal::Benchmark* bench) {
  const int64_t layers[][3] = {{150, 32, 1}, {150, 64, 2}, {75, 128, 1},
                               {38, 256, 1}, {19, 512, 1}, {10, 1024, 1}};
  for (auto& l : layers) bench->Args({l[0], l[1], l[2]});
  bench->ArgNames({"hw", "c", "stride"})->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_DepthwiseForward)->Apply(Layers);
BENCHMARK(BM_DepthwiseInputGrad)->Apply(Layers);
BENCHMARK(BM_DepthwiseFilterGrad)->Apply(Layers);

}  // namespace

BENCHMARK_MAIN();
