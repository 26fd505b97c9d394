// MoDNN's Biased One-Dimensional Partition (dist/modnn/modnn_split.h) on this
// machine: VGG-16's conv3_3 layer (3x3 conv, 256 -> 256 channels on a 56x56
// image, + bias + ReLU + 2x2 max pool; MoDNN measures VGG-16), one
// image, float32, in one process with two CPU devices of one thread each.
// k = 1 runs the layer whole (it lands on one device); k = 2 splits it into
// two strips of equal speed, one per device, the input sliced and the
// strips joined on CPU:0. Counters: bytes_moved, the bytes that crossed
// between the devices in one traced step (the sum of the _Recv outputs),
// and busy_per_wall, that step's kernel time over its wall time (how much
// the two devices overlapped).
// The time is the step's wall time (UseRealTime: the work runs on the
// devices' threads, not the caller's).
#include <benchmark/benchmark.h>

#include <random>

#include "dist/modnn/modnn_split.h"
#include "graph/session.h"
#include "ops/ops.h"

namespace dflow {
namespace {

const std::string kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
const std::string kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";

Tensor Uniform(Shape shape, uint32_t seed) {
  Tensor t = Tensor::Zeros(DType::kFloat32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  float* data = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) data[i] = uniform(rng);
  return t;
}

struct Conv33 {
  Scope s = Scope::NewRootScope();
  Output x;
};

// conv3_3 + ReLU + pool3, its output named "out"; split into k strips when k > 1.
std::unique_ptr<Conv33> BuildConv33(int k) {
  auto layer = std::make_unique<Conv33>();
  Scope& s = layer->s;
  layer->x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, Shape{1, 56, 56, 256});
  auto w = ops::Const(s.WithOpName("w"), Uniform(Shape{3, 3, 256, 256}, 1));
  auto b = ops::Const(s.WithOpName("b"), Uniform(Shape{256}, 2));
  auto conv = ops::Conv2D(s.WithOpName("conv3_3"), layer->x, w);
  auto relu = ops::Relu(s.WithOpName("relu3_3"), ops::BiasAdd(s.WithOpName("bias3_3"), conv, b));
  ops::MaxPool(s.WithOpName("out"), relu, {{1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"});
  if (k > 1) {
    dist::ModnnSplitOptions options;
    options.owner_device = kCpu0;
    for (int i = 0; i < k; ++i) options.strips.push_back({i % 2 ? kCpu1 : kCpu0, 1.0});
    dist::ModnnSplit(s.graph(), "conv3_3", options);
  }
  return layer;
}

int64_t BytesMoved(const RunMetadata& metadata) {
  int64_t bytes = 0;
  for (const NodeExecStats& stats : metadata.step_stats)
    if (stats.op == "_Recv") bytes += stats.output_bytes;
  return bytes;
}

// Kernel time of the traced step over its wall time: about 1 when one
// thread works at a time, up to 2 when both devices compute at once.
double BusyPerWall(const RunMetadata& metadata) {
  int64_t busy = 0;
  for (const NodeExecStats& stats : metadata.step_stats)
    if (stats.op != "_Recv")  // asynchronous: its span includes the wait for the tensor
      busy += stats.end_ns - stats.start_ns;
  return metadata.step_ns > 0 ? static_cast<double>(busy) / metadata.step_ns : 0;
}

void BM_ModnnConv33(benchmark::State& state) {
  const int k = static_cast<int>(state.range(0));
  auto layer = BuildConv33(k);
  SessionOptions options;
  options.num_threads = 1;
  options.devices = {kCpu0, kCpu1};
  Session session(layer->s, options);
  FeedList feeds = {{layer->x, Uniform(Shape{1, 56, 56, 256}, 3)}};
  for (int i = 0; i < 2; ++i) session.Run(feeds, {TensorName("out")});  // warm-up
  RunMetadata metadata;
  session.Run(feeds, {TensorName("out")}, {}, {.trace = true}, &metadata);
  for (auto _ : state) benchmark::DoNotOptimize(session.Run(feeds, {TensorName("out")}));
  state.counters["strips"] = k;
  state.counters["bytes_moved"] = static_cast<double>(BytesMoved(metadata));
  state.counters["busy_per_wall"] = BusyPerWall(metadata);
}
BENCHMARK(BM_ModnnConv33)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace dflow

BENCHMARK_MAIN();
