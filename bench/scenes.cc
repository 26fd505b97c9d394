// Synthetic detection scenes (models/data/scene_generator.h) on one core:
// drawing alone, and drawing plus PNG encoding (what `dflow-detect generate`
// does per image), at 320x320 and 640x480 with the default options.
#include <cstdint>

#include <benchmark/benchmark.h>

#include "models/data/image.h"
#include "models/data/scene_generator.h"

namespace {

using namespace dflow::models;

void BM_GenerateScene(benchmark::State& state) {
  const SceneOptions options{.height = state.range(1), .width = state.range(0)};
  uint64_t index = 0, objects = 0;
  for (auto _ : state) objects += GenerateScene(options, index++).objects.size();
  state.counters["scenes/s"] = benchmark::Counter(double(index), benchmark::Counter::kIsRate);
  state.counters["objects/scene"] = double(objects) / double(index);
}
BENCHMARK(BM_GenerateScene)->Args({320, 320})->Args({640, 480})->Unit(benchmark::kMillisecond);

void BM_GenerateSceneAndPng(benchmark::State& state) {
  const SceneOptions options{.height = state.range(1), .width = state.range(0)};
  const std::string path = "/tmp/dflow_bench_scene.png";
  uint64_t index = 0;
  for (auto _ : state) WritePng(path, GenerateScene(options, index++).image);
  state.counters["scenes/s"] = benchmark::Counter(double(index), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_GenerateSceneAndPng)->Args({320, 320})->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
