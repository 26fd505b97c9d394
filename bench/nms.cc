// NonMaxSuppressionV5 through Session::Run with fed boxes and scores, on
// 1k, 10k and 100k random boxes (IoU 0.5, max_output_size = N); and
// CombinedNonMaxSuppression (NMS per class) on the same boxes, each given
// class i % 80 (its score in that column, 0 in the others, score threshold 0),
// as torchvision.ops.batched_nms does per class. The boxes
// come from splitmix64 draws that bench/torch_nms.py repeats bit for bit, so
// bench/compare_nms times torchvision.ops.nms on the very same boxes:
// centres uniform in a 1000 x 1000 scene, sides uniform in [16, 112),
// scores uniform in [0, 1) (24-bit).
#include <cstdint>
#include <limits>
#include <vector>

#include <benchmark/benchmark.h>

#include "graph/session.h"
#include "ops/ops.h"

namespace dflow {
namespace {

// Draw i of the stream: splitmix64's output for state seed + (i + 1) * golden.
float Uniform(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// Box i uses draws 5i .. 5i + 4: centre y, centre x, height, width, score.
void RandomBoxes(int64_t n, uint64_t seed, Tensor& boxes, Tensor& scores) {
  boxes = Tensor::Zeros(DType::kFloat32, {n, 4});
  scores = Tensor::Zeros(DType::kFloat32, {n});
  float* b = boxes.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    auto u = [&](int k) { return Uniform(seed, 5 * i + k); };
    float cy = 1000.0f * u(0), cx = 1000.0f * u(1);
    float h = 16.0f + 96.0f * u(2), w = 16.0f + 96.0f * u(3);
    b[4 * i] = cy - 0.5f * h, b[4 * i + 1] = cx - 0.5f * w;
    b[4 * i + 2] = cy + 0.5f * h, b[4 * i + 3] = cx + 0.5f * w;
    scores.data<float>()[i] = u(4);
  }
}

void BM_NonMaxSuppressionV5(benchmark::State& state) {
  const int64_t n = state.range(0);
  Scope s = Scope::NewRootScope();
  Output boxes = ops::Placeholder(s.WithOpName("boxes"), DType::kFloat32, {n, 4});
  Output scores = ops::Placeholder(s.WithOpName("scores"), DType::kFloat32, {n});
  const float no_threshold = -std::numeric_limits<float>::infinity();
  auto nms = ops::NonMaxSuppressionV5(s.WithOpName("nms"), boxes, scores,
                                      static_cast<int32_t>(n), 0.5f, no_threshold, 0.0f);
  SessionOptions options;
  options.num_threads = 2;
  Session session(s, options);
  Tensor box_values, score_values;
  RandomBoxes(n, 1, box_values, score_values);
  FeedList feeds = {{boxes, box_values}, {scores, score_values}};
  std::vector<TensorName> fetches = {nms.selected_indices, nms.valid_outputs};
  int32_t kept = session.Run(feeds, fetches)[1].scalar<int32_t>();  // builds the executor
  for (auto _ : state) benchmark::DoNotOptimize(session.Run(feeds, fetches));
  state.counters["kept"] = kept;
}
BENCHMARK(BM_NonMaxSuppressionV5)->Arg(1000)->Arg(10000)->Arg(100000)
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

constexpr int64_t kClasses = 80;

// Each box's score in the column of its class i % kClasses; 0 elsewhere.
Tensor PerClassScores(const Tensor& scores) {
  const int64_t n = scores.shape().dim(0);
  Tensor out = Tensor::Zeros(DType::kFloat32, {1, n, kClasses});
  for (int64_t i = 0; i < n; ++i) out.data<float>()[i * kClasses + i % kClasses] = scores.data<float>()[i];
  return out;
}

void BM_CombinedNonMaxSuppression(benchmark::State& state) {
  const int64_t n = state.range(0);
  Scope s = Scope::NewRootScope();
  Output boxes = ops::Placeholder(s.WithOpName("boxes"), DType::kFloat32, {1, n, 1, 4});
  Output scores = ops::Placeholder(s.WithOpName("scores"), DType::kFloat32, {1, n, kClasses});
  auto nms = ops::CombinedNonMaxSuppression(
      s.WithOpName("nms"), boxes, scores, ops::Const(s, static_cast<int32_t>(n)),
      ops::Const(s, static_cast<int32_t>(n)), 0.5f, 0.0f, {.pad_per_class = false, .clip_boxes = false});
  SessionOptions options;
  options.num_threads = 2;
  Session session(s, options);
  Tensor box_values, score_values;
  RandomBoxes(n, 1, box_values, score_values);
  FeedList feeds = {{boxes, box_values.Reshaped({1, n, 1, 4})}, {scores, PerClassScores(score_values)}};
  std::vector<TensorName> fetches = {nms.nmsed_boxes, nms.nmsed_scores, nms.nmsed_classes,
                                     nms.valid_detections};
  int32_t kept = session.Run(feeds, fetches)[3].data<int32_t>()[0];  // builds the executor
  for (auto _ : state) benchmark::DoNotOptimize(session.Run(feeds, fetches));
  state.counters["kept"] = kept;
}
BENCHMARK(BM_CombinedNonMaxSuppression)->Arg(1000)->Arg(10000)->Arg(100000)
    ->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace dflow

BENCHMARK_MAIN();
