// Ring all-reduce training across processes on one machine, per step split
// into compute (gradients + apply), waiting (a barrier before the
// all-reduce: the time the fastest worker waits for the slowest) and
// communication (the bucketed all-reduce itself); images/s over all workers;
// all-reduce bus bandwidth (gradient bytes x 2(N-1)/N / communication time)
// beside the link's own one-way bandwidth. --sleep-ms replaces compute by a
// fixed sleep (on 2 cores, N processes computing at once slow each other
// down; sleeping isolates the communication). --overlap hands each gradient
// to the ring as soon as backprop produced it (RunOptions::on_fetch_ready),
// so buckets are reduced while backprop goes on; communication is then the
// part not hidden (waiting for the last bucket after backprop), and waiting
// is inside it (no barrier). In sleep mode with --overlap, the sleep is a
// forward third and then, per gradient in backprop order, its share (by
// bytes) of the other two thirds before handing it over. Start it with
// dflow launch:
//
//   dflow launch -n 4 --base-port 47000 -- build/bench/bench_data_parallel_procs --steps 20 [--overlap]
//   dflow launch -n 4 --base-port 47000 -- build/bench/bench_data_parallel_procs --sleep-ms 60 [--overlap]
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "autodiff/gradients.h"
#include "bench/throughput_spread.h"
#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "dist/cluster.h"
#include "dist/transport/zmq_transport.h"
#include "dist/training/ring_training.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace {

using namespace dflow;
using Clock = std::chrono::steady_clock;

struct Settings {
  int steps = 20, warmup = 3;
  int64_t batch = 64, inputs = 784, hidden = 1024;
  double sleep_ms = 0;  // > 0: sleep instead of computing
  bool fp16 = false;
  bool overlap = false;  // hand gradients over as backprop makes them
};

// An MLP inputs -> hidden -> hidden -> 10 whose gradients are fetched and
// whose Adam update reads the averaged gradients from placeholders.
struct Model {
  Scope scope = Scope::NewRootScope();
  Output x, labels;
  std::vector<Output> vars, grads, feeds;
  Node* apply = nullptr;
  Node* init = nullptr;
};

Model BuildModel(const Settings& s) {
  Model m;
  const Scope& sc = m.scope;
  sc.graph().set_seed(1);
  m.x = ops::Placeholder(sc, DType::kFloat32, {-1, s.inputs});
  m.labels = ops::Placeholder(sc, DType::kInt32, {-1});
  Output h = m.x;
  for (int i = 0; i < 2; ++i)
    h = models::Dense(sc.NewSubScope("hidden"), h, s.hidden, {.activation = models::Activation::kRelu}).output;
  Output logits = models::Dense(sc.NewSubScope("logits"), h, 10).output;
  Output loss = ops::Mean(sc, ops::SparseSoftmaxCrossEntropyWithLogits(sc, logits, m.labels).loss, 0);
  m.vars = autodiff::TrainableVariables(sc.graph());
  // Backprop order (last layer first), so the first buckets fill first.
  std::reverse(m.vars.begin(), m.vars.end());
  m.grads = autodiff::AddGradients(sc, {loss}, m.vars);
  std::vector<autodiff::GradAndVar> apply;
  for (const Output& v : m.vars) {
    m.feeds.push_back(ops::Placeholder(sc, DType::kFloat32, v.shape()));
    apply.push_back({m.feeds.back(), v});
  }
  autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(sc, 1e-3));
  m.apply = adam.ApplyGradients(sc, apply);
  m.init = ops::GlobalVariablesInitializer(sc);
  return m;
}

double Seconds(Clock::time_point from) { return std::chrono::duration<double>(Clock::now() - from).count(); }

// One-way bandwidth of the link: rank 0 sends `bytes` to rank 1 five times,
// each acknowledged; the best of five, in bytes per second.
double LinkBandwidth(dist::ZmqLink& link, size_t bytes) {
  if (link.num_ranks() < 2 || link.rank() > 1) return 0;
  double best = 1e30;
  auto deadline = [] { return Clock::now() + std::chrono::seconds(60); };
  for (int i = 0; i < 5; ++i) {
    auto start = Clock::now();
    if (link.rank() == 0) {
      link.Send(1, "bandwidth", dist::Bytes(bytes, 1));
      link.Recv(1, "bandwidth/ack", deadline());
    } else {
      link.Recv(0, "bandwidth", deadline());
      link.Send(0, "bandwidth/ack", dist::Bytes(1, 1));
    }
    best = std::min(best, Seconds(start));
  }
  return static_cast<double>(bytes) / best;
}

// Sleep mode with overlap: a forward third of the sleep, then each gradient
// after its share (by bytes, as backprop's work per weight) of the rest.
void SleepHandingOver(double sleep_ms, const std::vector<Tensor>& grads, dist::DataParallelStrategy& strategy) {
  using Ms = std::chrono::duration<double, std::milli>;
  double total_bytes = 0;
  for (const Tensor& g : grads) total_bytes += static_cast<double>(g.TotalBytes());
  std::this_thread::sleep_for(Ms(sleep_ms / 3));
  for (size_t i = 0; i < grads.size(); ++i) {
    double share = static_cast<double>(grads[i].TotalBytes()) / total_bytes;
    std::this_thread::sleep_for(Ms(sleep_ms * 2 / 3 * share));
    strategy.GradientReady(static_cast<int>(i), grads[i]);
  }
}

int Run(const Settings& s) {
  std::optional<dist::ClusterSpec> cluster = dist::ClusterSpec::FromEnvironment();
  DFLOW_REQUIRE(cluster, "DFLOW_CLUSTER is not set: start this with dflow launch");
  Model m = BuildModel(s);
  Session session(m.scope, {.num_threads = 1});
  session.Run({}, {}, {m.init});
  std::vector<dist::GradientSpec> specs;
  size_t gradient_bytes = 0;
  for (const Output& v : m.vars) {
    specs.push_back({v.node()->name(), DType::kFloat32, v.shape()});
    gradient_bytes += static_cast<size_t>(v.shape().NumElements()) * 4;
  }
  std::unique_ptr<dist::ZmqLink> link = dist::ZmqLink::ForCluster(*cluster);
  const int n = link->num_ranks(), rank = link->rank();
  double link_bandwidth = LinkBandwidth(*link, gradient_bytes);
  dist::RingOptions options;
  options.buckets.fp16_on_wire = s.fp16;
  dist::RingAllReduceStrategy strategy(*link, specs, options);
  strategy.SynchronizeVariables(session, session.resources().VariableNames());

  Tensor x(DType::kFloat32, Shape{s.batch, s.inputs});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = static_cast<float>((i * 37 + rank) % 101) / 101.0f;
  Tensor labels(DType::kInt32, Shape{s.batch});
  for (int64_t i = 0; i < s.batch; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>((i + rank) % 10);
  std::vector<TensorName> fetches(m.grads.begin(), m.grads.end());
  std::vector<Tensor> fixed_grads = session.Run({{m.x, x}, {m.labels, labels}}, fetches);

  // [compute, waiting, communication, step] seconds summed over measured steps.
  Tensor totals = Tensor::Zeros(DType::kFloat64, Shape{4});
  double* t = totals.data<double>();
  std::vector<double> step_seconds;  // this rank's measured steps, for the throughput's spread
  for (int step = 0; step < s.warmup + s.steps; ++step) {
    const bool measured = step >= s.warmup;
    auto step_start = Clock::now();
    std::vector<Tensor> grads;
    if (s.overlap) {
      if (s.sleep_ms > 0) {
        SleepHandingOver(s.sleep_ms, fixed_grads, strategy);
      } else {
        RunOptions options;
        options.on_fetch_ready = [&](size_t i, const Tensor& g) { strategy.GradientReady(static_cast<int>(i), g); };
        session.Run({{m.x, x}, {m.labels, labels}}, fetches, {}, options);
      }
    } else if (s.sleep_ms > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(s.sleep_ms));
      grads = fixed_grads;
    } else {
      grads = session.Run({{m.x, x}, {m.labels, labels}}, fetches);
    }
    double compute = Seconds(step_start);
    auto wait_start = Clock::now();
    if (!s.overlap) strategy.AnyWorker(false);  // the barrier: everyone has its gradients
    double waiting = Seconds(wait_start);
    auto comm_start = Clock::now();
    std::vector<Tensor> mean = s.overlap ? strategy.AverageReadyGradients() : strategy.AverageGradients(grads);
    double communication = Seconds(comm_start);
    auto apply_start = Clock::now();
    if (s.sleep_ms <= 0) {
      FeedList feeds;
      for (size_t v = 0; v < mean.size(); ++v) feeds.push_back({m.feeds[v], mean[v]});
      session.Run(feeds, {}, {m.apply});
    }
    compute += Seconds(apply_start);
    if (measured) {
      t[0] += compute, t[1] += waiting, t[2] += communication, t[3] += Seconds(step_start);
      step_seconds.push_back(Seconds(step_start));
    }
  }
  // The mean over workers of each figure (the communicator is free between steps).
  strategy.communicator().AllReduce("bench/totals", totals, dist::ReduceOp::kMean);
  strategy.Finish();
  if (rank == 0) {
    bench::ThroughputSpread spread = bench::SpreadOf(step_seconds, static_cast<double>(n * s.batch));
    double per_step = t[3] / s.steps, comm_s = t[2] / s.steps;
    // With overlap, communication is only the part backprop did not hide: no bandwidth from it.
    double bus = n > 1 && !s.overlap ? static_cast<double>(gradient_bytes) * 2.0 * (n - 1) / n / comm_s : 0;
    std::printf("{\"workers\": %d, \"mode\": \"%s%s\", \"gradient_bytes\": %zu, \"step_ms\": %.2f, "
                "\"compute_ms\": %.2f, \"waiting_ms\": %.2f, \"communication_ms\": %.2f, "
                "\"images_per_s\": %.1f, \"bus_bandwidth_GBps\": %.3f, \"link_bandwidth_GBps\": %.3f, "
                "\"per_step_images_per_s\": {\"mean\": %.1f, \"stddev\": %.1f}}\n",
                n, s.sleep_ms > 0 ? "sleep" : "compute", s.overlap ? "+overlap" : "", gradient_bytes,
                1e3 * per_step, 1e3 * t[0] / s.steps, 1e3 * t[1] / s.steps, 1e3 * comm_s,
                n * s.batch / per_step, bus / 1e9, link_bandwidth / 1e9, spread.mean, spread.deviation);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  dflow::dist::KeepFreedMemoryForReceives();  // as dflow's own programs do
  Settings s;
  CLI::App app("Ring all-reduce training across processes: step time split, images/s, bus bandwidth.");
  app.add_option("--steps", s.steps, "Measured steps")->check(CLI::PositiveNumber);
  app.add_option("--warmup", s.warmup, "Steps before measuring")->check(CLI::NonNegativeNumber);
  app.add_option("--batch", s.batch, "Images per worker per step")->check(CLI::PositiveNumber);
  app.add_option("--hidden", s.hidden, "Units of the two hidden layers")->check(CLI::PositiveNumber);
  app.add_option("--sleep-ms", s.sleep_ms, "Sleep this long instead of computing");
  app.add_flag("--fp16", s.fp16, "fp16 on the wire");
  app.add_flag("--overlap", s.overlap, "Hand each gradient to the ring as backprop produces it");
  CLI11_PARSE(app, argc, argv);
  try {
    return Run(s);
  } catch (const dflow::Error& e) {
    std::cerr << "bench_data_parallel_procs: " << e.what() << std::endl;
    return 1;
  }
}
