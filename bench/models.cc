// The benchmark networks in dflow, measured the way
// ../shared/reference/torch_models.py measures them in PyTorch, so that
// bench/compare_torch can set the two side by side: train images/s (forward,
// backward and optimizer step), inference images/s (forward, same batch,
// batch norm in inference mode), batch-1 latency, and the process's peak RSS.
// Prints one JSON line with the same keys, plus train_cpu_ms_per_step (the
// process's CPU time per training step: on a shared, loaded machine a steadier
// A/B figure than the wall time). --profile N first traces N training steps
// (with --latency-only: N batch-1 inference steps) and prints the slowest
// nodes and the time per op to stderr.
//   bench_models --model countnet --batch 8 --size 224 --threads 2 --steps 5
// For the inference graph passes: --freeze runs inference on the frozen
// graph (variables as Consts, so batch norms can fold), --conv-rewrites off
// turns the conv rewrites off, --latency-only skips training and batches:
//   bench_models --model mbv1ssd --size 300 --latency-only --freeze --conv-rewrites off
// --int8 (with --latency-only) also quantizes the frozen graph
// (models/compress/quantize_graph.h, calibrated on 4 random batches) and
// times it in the same run, fp32 and int8 side by side:
//   bench_models --model mbv1ssd --size 300 --latency-only --int8 --threads 2
//   bench_models --model mbv1ssd --batch 4 --size 300 --threads 2 --profile 3
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <iostream>

#include <CLI/CLI.hpp>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "bench/timing.h"
#include "graph/freeze.h"
#include "graph/graph_io.h"
#include "graph/run_metadata.h"
#include "graph/session.h"
#include "models/compress/quantize_graph.h"
#include "models/countnet.h"
#include "models/layers.h"
#include "models/mobilenet_ssd.h"
#include "ops/ops.h"

namespace {

using namespace dflow;
using bench::Timed;

struct Settings {
  std::string model = "countnet";
  int64_t batch = 8, size = 224;
  int threads = 2, steps = 5;
  std::string device;  // empty: the CPU; "/device:GPU:0" runs the whole graph there
  bool latency_only = false;
  bool freeze = false;        // inference on the frozen graph
  bool int8 = false;          // --latency-only: also the frozen graph quantized to int8
  bool conv_rewrites = true;  // PassOptions::fold_batch_norm and fuse_conv_bias_activation
  int profile = 0;  // > 0: trace this many training steps and print where the time goes
};

// A graph with its session and the step to time.
struct Bench {
  Scope scope = Scope::NewRootScope();
  std::unique_ptr<Session> session;
  std::function<void()> step;
  std::function<void(RunMetadata*)> traced_step;  // a training step with tracing on
  int64_t parameters = 0;  // the network's trainable parameters
  std::shared_ptr<Graph> frozen;      // inference with --freeze: the graph the session runs
  std::vector<std::string> fetches;   // inference: the outputs' names
};

Tensor Random(const Shape& shape, uint64_t seed) {
  Tensor t(DType::kFloat32, shape);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& v : t.flat<float>()) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = static_cast<float>(x % 2001) / 1000.0f - 1.0f;
  }
  return t;
}

// Builds the network (training or inference) and the step that runs it.
void Build(Bench& b, const Settings& s, int64_t batch, bool training) {
  Scope& scope = b.scope;
  scope.graph().set_seed(1);
  Shape shape{batch, s.size, s.size, 3};
  auto images = ops::Placeholder(scope.WithOpName("images"), DType::kFloat32, shape);
  std::vector<Output> outputs, variables, updates;
  Output loss;
  if (s.model == "countnet") {
    models::CountNet net = models::BuildCountNet(scope, images);
    auto target = ops::Const(scope, Random({batch, s.size, s.size, 1}, 2));
    loss = models::CountLoss(scope, net.density, target);
    outputs = {net.density};
    variables = net.variables;
  } else {
    models::MobileNetSsd net = models::BuildMobileNetSsd(scope, images, {.training = training});
    loss = ops::Add(scope, ops::Mean(scope, ops::Square(scope, net.boxes), {0, 1}),
                    ops::Mean(scope, ops::Square(scope, net.classes), {0, 1}));
    outputs = {net.boxes, net.classes};
    variables = net.variables;
    updates = net.batch_norm_updates;
  }
  b.parameters = models::CountParameters(variables);
  SessionOptions options{.num_threads = s.threads};
  if (!s.device.empty()) options.devices = {s.device};
  if (!training)
    options.passes.fold_batch_norm = options.passes.fuse_conv_bias_activation = s.conv_rewrites;
  b.session = std::make_unique<Session>(scope, options);
  FeedList feeds = {{images, Random(shape, 1)}};
  if (!training) {
    b.session->Run({}, {}, {ops::GlobalVariablesInitializer(scope)});
    std::vector<TensorName> fetches(outputs.begin(), outputs.end());
    for (const Output& out : outputs) b.fetches.push_back(out.name());
    if (s.freeze) {
      b.frozen = FreezeGraph(*b.session, b.fetches);
      b.session = std::make_unique<Session>(b.frozen, options);
    }
    b.step = [&b, feeds, fetches] { b.session->Run(feeds, fetches); };
    b.traced_step = [&b, feeds, fetches](RunMetadata* metadata) {
      b.session->Run(feeds, fetches, {}, RunOptions{.trace = true}, metadata);
    };
    return;
  }
  Node* train;
  if (s.model == "countnet") {  // as the reference: Adam(1e-5)
    autodiff::AdamOptimizer adam(autodiff::ConstantLearningRate(scope, 1e-5));
    train = adam.Minimize(scope, loss, variables);
  } else {  // SGD(1e-3, momentum 0.9), batch-norm moving averages with each step
    autodiff::MomentumOptimizer sgd(autodiff::ConstantLearningRate(scope, 1e-3), 0.9);
    std::vector<Output> deps(updates);
    deps.emplace_back(sgd.Minimize(scope, loss, variables));
    train = ops::NoOp(scope.WithControlDependencies(deps).WithOpName("train_all"));
  }
  b.session->Run({}, {}, {ops::GlobalVariablesInitializer(scope)});
  b.step = [&b, feeds, loss, train] { b.session->Run(feeds, {loss}, {train}); };
  b.traced_step = [&b, feeds, loss, train](RunMetadata* metadata) {
    b.session->Run(feeds, {loss}, {train}, RunOptions{.trace = true}, metadata);
  };
}

// Traces `steps` steps (training, or inference for --latency-only) after two
// warm-up steps and prints the per-node and per-op summary (each node's mean
// over the steps) to stderr.
void Profile(const Bench& b, int steps, const std::string& what) {
  for (int i = 0; i < 2; ++i) b.step();
  std::vector<RunMetadata> traced(steps);
  for (RunMetadata& m : traced) b.traced_step(&m);
  std::cerr << what << ", mean of " << steps << " traced steps:\n"
            << TraceSummary(MeanOfSteps(traced), 400);
}

// Batch-1 latency only: {"model", "size", "threads", "freeze", "conv_rewrites", "latency_ms"}.
// The size of the graph's file (SaveGraph).
int64_t SavedBytes(const Graph& graph) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("bench_models_" + std::to_string(::getpid()) + ".json");
  SaveGraph(graph, path.string());
  const auto bytes = static_cast<int64_t>(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  return bytes;
}

// The frozen graph of `b` quantized to int8 (4 random calibration batches)
// and its batch-1 latency in seconds; `layers` gets "quantized of total",
// `file_bytes` the sizes of the float and the int8 graph files.
double Int8LatencySeconds(const Bench& b, const Settings& s, std::string& layers,
                          std::pair<int64_t, int64_t>& file_bytes) {
  std::vector<FeedList> calibration;
  for (int i = 0; i < 4; ++i) calibration.push_back({{std::string("images"), Random({1, s.size, s.size, 3}, 10 + i)}});
  models::QuantizeResult q = models::QuantizeGraph(*b.frozen, b.fetches, calibration);
  file_bytes = {SavedBytes(*b.frozen), SavedBytes(*q.graph)};
  int quantized = 0;
  for (const models::QuantizedLayer& layer : q.layers) quantized += layer.quantized;
  layers = std::to_string(quantized) + " of " + std::to_string(q.layers.size());
  Bench int8;
  SessionOptions options{.num_threads = s.threads};
  if (!s.device.empty()) options.devices = {s.device};  // as the float graph (calibration ran on the CPU)
  int8.session = std::make_unique<Session>(q.graph, options);
  const FeedList feeds = {{std::string("images"), Random({1, s.size, s.size, 3}, 1)}};
  const std::vector<TensorName> fetches(b.fetches.begin(), b.fetches.end());
  int8.step = [&] { int8.session->Run(feeds, fetches); };
  int8.traced_step = [&](RunMetadata* metadata) {
    int8.session->Run(feeds, fetches, {}, RunOptions{.trace = true}, metadata);
  };
  if (s.profile > 0) Profile(int8, s.profile, "int8 batch-1 inference");
  return Timed(int8.step, 3 * s.steps);
}

// Batch-1 latency only: {"model", "size", "threads", "freeze", "conv_rewrites",
// "latency_ms"}, with --int8 also "int8_latency_ms", "int8_layers" and the
// graph files' sizes "fp32_file_mb", "int8_file_mb".
void RunLatency(const Settings& s) {
  Bench single;
  Build(single, s, 1, false);
  if (s.profile > 0) Profile(single, s.profile, "batch-1 inference");
  double latency_s = Timed(single.step, 3 * s.steps);
  std::cout << "{\"model\": \"" << s.model << "\", \"size\": " << s.size
            << ", \"threads\": " << s.threads << ", \"freeze\": " << s.freeze
            << ", \"conv_rewrites\": " << s.conv_rewrites
            << ", \"latency_ms\": " << latency_s * 1000;
  if (s.int8) {
    std::string layers;
    std::pair<int64_t, int64_t> file_bytes;
    const double int8_s = Int8LatencySeconds(single, s, layers, file_bytes);
    std::cout << ", \"int8_latency_ms\": " << int8_s * 1000 << ", \"int8_layers\": \"" << layers << "\""
              << ", \"fp32_file_mb\": " << file_bytes.first / 1e6 << ", \"int8_file_mb\": " << file_bytes.second / 1e6;
  }
  std::cout << "}" << std::endl;
}

void Run(const Settings& s) {
  if (s.latency_only) return RunLatency(s);
  Bench train;
  Build(train, s, s.batch, true);
  if (s.profile > 0) Profile(train, s.profile, "training step");
  double train_cpu_s = 0;
  double train_s = Timed(train.step, s.steps, &train_cpu_s);
  int64_t params = train.parameters;
  train = Bench();  // free the training graph's memory, as PyTorch frees its grads
  Bench infer, single;
  Build(infer, s, s.batch, false);
  double infer_s = Timed(infer.step, s.steps);
  Build(single, s, 1, false);
  double latency_s = Timed(single.step, 3 * s.steps);
  std::cout << "{\"model\": \"" << s.model << "\", \"batch\": " << s.batch << ", \"size\": " << s.size
            << ", \"threads\": " << s.threads << ", \"params\": " << params
            << ", \"train_img_per_s\": " << s.batch / train_s
            << ", \"infer_img_per_s\": " << s.batch / infer_s
            << ", \"latency_ms\": " << latency_s * 1000
            << ", \"train_cpu_ms_per_step\": " << train_cpu_s * 1000
            << ", \"peak_rss_mb\": " << bench::PeakRssMb() << "}" << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  CLI::App app("Benchmark dflow's CountNet and MobileNetV1-SSD like torch_models.py.");
  app.add_option("--model", s.model)->check(CLI::IsMember({"countnet", "mbv1ssd"}))->required();
  app.add_option("--batch", s.batch)->check(CLI::PositiveNumber);
  app.add_option("--size", s.size)->check(CLI::PositiveNumber);
  app.add_option("--threads", s.threads)->check(CLI::Range(1, 256));
  app.add_option("--steps", s.steps)->check(CLI::PositiveNumber);
  app.add_option("--device", s.device, "run every node on this device, e.g. /device:GPU:0 (default: the CPU)");
  app.add_flag("--latency-only", s.latency_only, "only the batch-1 inference latency");
  app.add_flag("--freeze", s.freeze, "run inference on the frozen graph (FreezeGraph)");
  app.add_flag("--int8", s.int8, "with --latency-only: also the frozen graph quantized to int8 (implies --freeze)");
  app.add_option("--conv-rewrites", s.conv_rewrites,
                 "batch-norm folding and conv fusion in inference (on/off)");
  app.add_option("--profile", s.profile,
                 "Also trace this many training steps (--latency-only: batch-1 inference steps) "
                 "first and print the top nodes and ops to stderr.")->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  if (s.int8 && !s.latency_only) {
    std::cerr << "bench_models: --int8 times batch-1 latency; add --latency-only\n";
    return 1;
  }
  s.freeze = s.freeze || s.int8;
  try {
    Run(s);
  } catch (const dflow::Error& e) {
    std::cerr << "bench_models: " << e.what() << "\n";
    return 1;
  }
}
