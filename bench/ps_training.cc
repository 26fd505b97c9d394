// Parameter-server training on loopback: one process of a `dflow launch
// --strategy ps` cluster. A 784-H-H-10 MLP (H = --hidden) on random data,
// batch --batch per worker; the chief prints the mean step time split into
// compute (the same gradient step measured alone in this process, with local
// variables, after training) and the rest (communication with the ps and waiting), and
// images/s. --sleep-ms replaces the compute by a fixed sleep: the gradients
// are then var * 0 (the same bytes travel, almost no arithmetic), which
// isolates communication on a machine with fewer cores than processes.
//
//   dflow launch -n 4 --ps 1 --strategy ps -- bench_ps_training --steps 30 [--sleep-ms 3]
//       [--mode async] [--placement size]   (variables over the ps tasks by size, not round-robin)
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>

#include "autodiff/gradients.h"
#include "bench/throughput_spread.h"
#include "autodiff/learning_rate.h"
#include "dist/training/ps_training.h"
#include "dist/transport/zmq_transport.h"
#include "models/layers.h"
#include "ops/ops.h"

namespace dflow {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  dist::PsMode mode = dist::PsMode::kSync;
  int64_t steps = 30, warmup = 3, hidden = 512, batch = 64, sleep_ms = 0;
  dist::PsStrategy placement = dist::PsStrategy::kRoundRobin;
};

struct Model {
  Scope scope = Scope::NewRootScope();
  Output x, labels, loss;
  std::vector<autodiff::GradAndVar> grads_and_vars;
};

// With sleep_ms the gradients are var * 0: same shapes, no real compute.
std::unique_ptr<Model> BuildModel(const Args& args) {
  auto m = std::make_unique<Model>();
  const Scope& s = m->scope;
  s.graph().set_seed(1);
  m->x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {-1, 784});
  m->labels = ops::Placeholder(s.WithOpName("labels"), DType::kInt32, {-1});
  Output h = m->x;
  for (int i = 0; i < 2; ++i)
    h = models::Dense(s.NewSubScope("hidden"), h, args.hidden, {.activation = models::Activation::kRelu}).output;
  Output logits = models::Dense(s.NewSubScope("logits"), h, 10).output;
  m->loss = ops::Mean(s, ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, m->labels).loss, 0);
  std::vector<Output> vars = autodiff::TrainableVariables(s.graph());
  std::vector<Output> grads = autodiff::AddGradients(s, {m->loss}, vars);
  for (size_t i = 0; i < vars.size(); ++i) {
    Output grad = args.sleep_ms > 0 ? ops::Mul(s, vars[i], Tensor::Scalar<float>(0)) : grads[i];
    m->grads_and_vars.push_back({grad, vars[i]});
  }
  return m;
}

FeedList RandomBatch(const Model& m, int64_t batch, uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal;
  Tensor x(DType::kFloat32, Shape{batch, 784});
  for (int64_t i = 0; i < x.NumElements(); ++i) x.data<float>()[i] = normal(random);
  Tensor labels(DType::kInt32, Shape{batch});
  for (int64_t i = 0; i < batch; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(random() % 10);
  return {{m.x, x}, {m.labels, labels}};
}

// The gradient step alone, variables local, one thread: the compute share.
double ComputeMilliseconds(const Args& args, const FeedList& batch) {
  auto m = BuildModel(args);
  Session session(m->scope, {.num_threads = 1});
  session.Run({}, {}, {ops::GlobalVariablesInitializer(m->scope)});
  std::vector<TensorName> grads;
  for (const auto& gv : m->grads_and_vars) grads.push_back(gv.grad);
  FeedList feeds = RandomBatch(*m, args.batch, 1);
  for (int i = 0; i < 3; ++i) session.Run(feeds, grads);
  auto start = Clock::now();
  for (int i = 0; i < 20; ++i) session.Run(feeds, grads);
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count() / 20;
  return ms + static_cast<double>(args.sleep_ms);
}

void Train(const dist::PsTask& task, const Args& args) {
  auto m = BuildModel(args);
  autodiff::GradientDescentOptimizer sgd(autodiff::ConstantLearningRate(m->scope, 0.01));
  int64_t steps = (args.warmup + args.steps) * (args.mode == dist::PsMode::kSync ? 1 : task.num_workers());
  dist::PsWorker worker(m->scope, m->grads_and_vars, sgd, task,
                        {.mode = args.mode, .num_steps = steps, .placement = args.placement});
  FeedList batch = RandomBatch(*m, args.batch, 100 + task.task.index);
  int64_t done = 0;
  Clock::time_point start, last;
  std::vector<double> step_seconds;  // each measured step
  auto batches = [&](int64_t) {
    if (args.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(args.sleep_ms));
    return batch;
  };
  auto on_step = [&](const dist::PsStepResult&) {
    Clock::time_point now = Clock::now();
    if (done >= args.warmup) step_seconds.push_back(std::chrono::duration<double>(now - last).count());
    last = now;
    if (++done == args.warmup) start = last;
  };
  worker.Train(batches, {}, on_step);
  if (!task.is_chief()) return;
  double compute_ms = ComputeMilliseconds(args, batch);  // now, with the other processes gone
  int64_t timed = done - args.warmup;
  double mean_step_ms = std::chrono::duration<double, std::milli>(last - start).count() / static_cast<double>(timed);
  // Sync: every worker's batch per step. Async: assumes the others ran at the chief's rate.
  double images = static_cast<double>(args.batch * timed * task.num_workers());
  bench::ThroughputSpread spread = bench::SpreadOf(step_seconds, static_cast<double>(args.batch * task.num_workers()));
  std::printf("ps %s workers %d hidden %lld batch %lld sleep_ms %lld: step %.2f ms = compute %.2f + "
              "communication/waiting %.2f; chief's steps %lld; %.0f images/s (per step: mean %.0f, standard "
              "deviation %.0f)%s\n",
              args.mode == dist::PsMode::kSync ? "sync" : "async", task.num_workers(),
              static_cast<long long>(args.hidden), static_cast<long long>(args.batch),
              static_cast<long long>(args.sleep_ms), mean_step_ms, compute_ms, mean_step_ms - compute_ms,
              static_cast<long long>(timed), images * 1000.0 / (mean_step_ms * static_cast<double>(timed)), spread.mean, spread.deviation,
              args.mode == dist::PsMode::kSync ? "" : " (all workers at the chief's rate)");
}

}  // namespace
}  // namespace dflow

int main(int argc, char** argv) {
  dflow::dist::KeepFreedMemoryForReceives();  // as dflow's own programs do
  dflow::Args args;
  std::string mode = "sync", placement = "round-robin";
  CLI::App app("Parameter-server training across processes (start with dflow launch --strategy ps).");
  app.add_option("--steps", args.steps, "Measured steps")->check(CLI::PositiveNumber);
  app.add_option("--hidden", args.hidden, "Units of the two hidden layers")->check(CLI::PositiveNumber);
  app.add_option("--batch", args.batch, "Images per worker per step")->check(CLI::PositiveNumber);
  app.add_option("--sleep-ms", args.sleep_ms, "Sleep this long instead of computing")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--mode", mode, "sync or async")->check(CLI::IsMember({"sync", "async"}));
  app.add_option("--placement", placement, "Variables over the ps tasks: round-robin or size")
      ->check(CLI::IsMember({"round-robin", "size"}));
  CLI11_PARSE(app, argc, argv);
  args.mode = mode == "async" ? dflow::dist::PsMode::kAsync : dflow::dist::PsMode::kSync;
  args.placement = placement == "size" ? dflow::dist::PsStrategy::kSizeBalanced : dflow::dist::PsStrategy::kRoundRobin;
  return dflow::dist::RunPsTask([&](const dflow::dist::PsTask& task) { dflow::Train(task, args); }, 1);
}
