// Data-parallel building blocks on one machine: gradient codec throughput
// (encode and decode of a 4 MiB float32 gradient) and all-reduce over the
// in-process link, reported as bus bandwidth (bytes per rank x 2(N-1)/N /
// time) beside the link's own one-way send/receive bandwidth.
//
//   build/bench/bench_data_parallel --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true   (one command line)
#include <benchmark/benchmark.h>

#include <thread>

#include "dist/collectives/communicator.h"
#include "dist/collectives/in_process_link.h"
#include "dist/training/gradient_codec.h"

namespace {

using namespace dflow;

const Shape kGradientShape{1024, 1024};  // 4 MiB of float32

Tensor Gradient() {
  Tensor g(DType::kFloat32, kGradientShape);
  float* values = g.data<float>();
  // A spread of values in [-1, 1] with both signs in every column.
  for (int64_t i = 0; i < g.NumElements(); ++i)
    values[i] = static_cast<float>((i * 7919) % 2001 - 1000) * 1e-3f;
  return g;
}

void BM_Encode(benchmark::State& state, dist::CodecKind kind) {
  Tensor g = Gradient();
  auto codec = dist::MakeGradientCodec(kind, kGradientShape);
  for (auto _ : state) benchmark::DoNotOptimize(codec->Encode(g));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(g.TotalBytes()));
  state.counters["wire_bytes"] = static_cast<double>(codec->Encode(g).size());
}

void BM_Decode(benchmark::State& state, dist::CodecKind kind) {
  Tensor g = Gradient();
  auto codec = dist::MakeGradientCodec(kind, kGradientShape);
  dist::Bytes wire = codec->Encode(g);
  for (auto _ : state) benchmark::DoNotOptimize(codec->Decode(wire));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(g.TotalBytes()));
}

BENCHMARK_CAPTURE(BM_Encode, fp16, dist::CodecKind::kFloat16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, fp16, dist::CodecKind::kFloat16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, one_bit, dist::CodecKind::kOneBit)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, one_bit, dist::CodecKind::kOneBit)->Unit(benchmark::kMillisecond);

// One-way: rank 0 sends 4 MiB, rank 1 receives it (the link's baseline).
void BM_LinkSendRecv(benchmark::State& state) {
  dist::InProcessNetwork network(2);
  const size_t bytes = static_cast<size_t>(kGradientShape.NumElements()) * sizeof(float);
  dist::Bytes payload(bytes, 1);
  for (auto _ : state) {
    std::thread receiver([&] {
      network.endpoint(1).Recv(0, "x", std::chrono::steady_clock::now() + std::chrono::seconds(60));
    });
    network.endpoint(0).Send(1, "x", payload);
    receiver.join();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_LinkSendRecv)->Unit(benchmark::kMillisecond)->UseRealTime();

// All-reduce of 4 MiB per rank over N threads; bus bandwidth as NCCL defines it.
void BM_AllReduce(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const auto order = state.range(1) ? dist::SumOrder::kRankOrder : dist::SumOrder::kRing;
  dist::InProcessNetwork network(ranks);
  std::vector<std::unique_ptr<dist::Communicator>> comms;
  std::vector<Tensor> tensors;
  for (int r = 0; r < ranks; ++r) {
    dist::CollectiveOptions options{.sum_order = order};
    comms.push_back(std::make_unique<dist::Communicator>(network.endpoint(r), options));
    tensors.push_back(Gradient());
  }
  for (auto _ : state) {
    std::vector<std::thread> others;
    for (int r = 1; r < ranks; ++r)
      others.emplace_back([&, r] { comms[r]->AllReduce("g", tensors[r]); });
    comms[0]->AllReduce("g", tensors[0]);
    for (std::thread& t : others) t.join();
  }
  double bytes = static_cast<double>(tensors[0].TotalBytes());
  state.counters["bus_bandwidth"] = benchmark::Counter(
      bytes * 2 * (ranks - 1) / ranks * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1024);
}
BENCHMARK(BM_AllReduce)
    ->ArgNames({"ranks", "rank_order"})
    ->Args({2, 0})->Args({3, 0})->Args({4, 0})->Args({4, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
