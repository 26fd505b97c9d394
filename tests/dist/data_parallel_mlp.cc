// A data-parallel trainer program for the multi-process tests
// (test_ring_processes.sh): the spiral MLP of replicated_mlp.h trained by the
// worker that DFLOW_CLUSTER names (start it with `dflow launch`), or by N
// threads of this process joined in memory (--in-process N: the reference
// the processes must match bit for bit). The chief writes checkpoints every
// K steps (global step included) and --resume continues from the last one.
// Worker k writes its final variables (name, then raw bytes) to OUT.k.
// Under `dflow launch --elastic` (DFLOW_ELASTIC set) the ring regroups when
// a worker dies or joins, and each member says so on stdout.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <iostream>
#include <thread>
#include <unistd.h>

#include "dist/cluster.h"
#include "dist/collectives/in_process_link.h"
#include "dist/training/elastic.h"
#include "dist/training/ring_training.h"
#include "models/checkpoint.h"
#include "tests/dist/replicated_mlp.h"

namespace dflow {
namespace {

struct Settings {
  std::string strategy = "ring";
  int in_process = 0;  // > 0: that many workers as threads, no cluster
  int64_t steps = 15, batch = 16, seed = 7;
  std::string out, checkpoint_dir;
  int64_t checkpoint_every = 0;
  bool resume = false;
  int step_sleep_ms = 0;  // pace the steps, so a test can kill a worker mid-training
  double startup_timeout_s = 60;
  std::string codec = "none";
};

void WriteVariables(Session& session, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  for (const std::string& name : session.resources().VariableNames()) {
    Tensor value = session.resources().FindVariable(name)->Read();
    out << name << " " << DTypeName(value.dtype()) << value.shape().ToString() << "\n";
    out.write(static_cast<const char*>(value.raw_data()), static_cast<std::streamsize>(value.TotalBytes()));
    out << "\n";
  }
  DFLOW_REQUIRE(out.good(), "cannot write the variables to '", path, "'");
}

// The share of held-out spiral points (another seed than training's) whose
// largest logit is their class.
double HeldOutAccuracy(Session& session, const testing::ReplicatedMlp& m) {
  auto held_out = models::MakeSpirals({.points_per_class = 200, .seed = 6});
  Tensor logits = session.Run({{m.x, held_out.points}}, {m.logits})[0];
  const int64_t rows = held_out.labels.NumElements(), classes = logits.shape().dim(1);
  int64_t right = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = logits.data<float>() + i * classes;
    right += std::max_element(row, row + classes) - row == held_out.labels.data<int32_t>()[i];
  }
  return static_cast<double>(right) / static_cast<double>(rows);
}

// One worker: build (seed + rank, so only the broadcast makes them equal),
// initialise or restore (chief), synchronise, train, write.
void Train(const Settings& settings, dist::DataParallelStrategy& strategy) {
  const int rank = strategy.worker();
  testing::ReplicatedMlp m = testing::BuildReplicatedMlp(settings.seed + rank);
  Saver saver(m.scope);
  Session session(m.scope, {.num_threads = 1});
  session.Run({}, {}, {m.init});
  if (settings.resume && strategy.is_chief()) {
    std::optional<std::string> latest = LatestCheckpoint(settings.checkpoint_dir);
    if (!latest) Fail(Code::kNotFound, "--resume: no checkpoint in '", settings.checkpoint_dir, "'");
    saver.Restore(session, *latest);
    std::cout << "restored " << *latest << std::endl;
  }
  strategy.SynchronizeVariables(session, session.resources().VariableNames());
  auto data = models::MakeSpirals({.points_per_class = 200, .seed = 5});
  testing::TrainReplica(session, m, strategy, data, settings.steps, settings.batch, [&](int64_t step) {
    if (strategy.is_chief() && settings.checkpoint_every > 0 && step % settings.checkpoint_every == 0)
      std::cout << "checkpoint " << saver.Save(session, settings.checkpoint_dir, step) << std::endl;
    if (settings.step_sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(settings.step_sleep_ms));
  });
  strategy.Finish();
  if (strategy.is_chief()) std::cout << "held-out accuracy " << HeldOutAccuracy(session, m) << std::endl;
  if (!settings.out.empty()) WriteVariables(session, settings.out + "." + std::to_string(rank));
}

// Train's loop under elastic membership: at a change, every member takes
// rank 0's variables (the global step with them) and goes on from there
// with its new rank's share of each batch.
void TrainElastic(const Settings& settings, dist::ElasticRingStrategy& strategy) {
  testing::ReplicatedMlp m = testing::BuildReplicatedMlp(settings.seed + strategy.worker());
  Session session(m.scope, {.num_threads = 1});
  session.Run({}, {}, {m.init});
  const std::vector<std::string> variables = session.resources().VariableNames();
  strategy.SynchronizeVariables(session, variables);
  auto data = models::MakeSpirals({.points_per_class = 200, .seed = 5});
  const dist::ReplicatedStep step_names = testing::ReplicatedStepOf(m);
  auto global_step = [&] { return session.resources().FindVariable("global_step")->Read().scalar<int64_t>(); };
  for (;;) {
    try {
      for (int64_t step = global_step(); step < settings.steps && !strategy.AnyWorker(false); step = global_step()) {
        models::LabelledPoints mine = testing::WorkerBatch(data, strategy.worker(), strategy.num_workers(),
                                                           static_cast<int>(step), settings.batch);
        dist::RunDataParallelStep(session, strategy, step_names, {{m.x, mine.points}, {m.labels, mine.labels}});
        if (strategy.is_chief()) std::cout << "step " << global_step() << " of " << strategy.num_workers() << std::endl;
        if (settings.step_sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(settings.step_sleep_ms));
      }
      strategy.Finish();
      break;
    } catch (const dist::MembershipChanged& change) {
      std::cout << "at step " << global_step() << ": " << change.message() << std::endl;
      for (bool synchronized = false; !synchronized;) {  // again if a worker dies during the broadcast
        try {
          strategy.Regroup(global_step());
          strategy.SynchronizeVariables(session, variables);
          synchronized = true;
        } catch (const dist::MembershipChanged& again) {
          std::cout << "at step " << global_step() << ": " << again.message() << std::endl;
        }
      }
      std::cout << "round " << strategy.round().number << ": rank " << strategy.worker() << " of "
                << strategy.num_workers() << " at step " << global_step() << " (" << strategy.round().change << ")"
                << std::endl;
    }
  }
  if (strategy.is_chief()) std::cout << "held-out accuracy " << HeldOutAccuracy(session, m) << std::endl;
  if (!settings.out.empty()) WriteVariables(session, settings.out + "." + std::to_string(strategy.worker()));
}

void TrainInProcess(const Settings& settings) {
  dist::InProcessNetwork network(settings.in_process);
  std::vector<std::string> errors(settings.in_process);
  std::vector<std::thread> threads;
  for (int r = 0; r < settings.in_process; ++r)
    threads.emplace_back([&, r] {
      try {
        testing::ReplicatedMlp probe = testing::BuildReplicatedMlp(settings.seed);
        dist::RingOptions options;
        options.codec = dist::ParseCodecKind(settings.codec);
        dist::RingAllReduceStrategy ring(network.endpoint(r), testing::GradientSpecsOf(probe), options);
        Train(settings, ring);
      } catch (const Error& e) {
        errors[r] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (const std::string& error : errors)
    if (!error.empty()) throw Error(Code::kInternal, error);
}

int Run(const Settings& settings) {
  DFLOW_REQUIRE(settings.checkpoint_every == 0 || !settings.checkpoint_dir.empty(),
                "--checkpoint-every needs --checkpoint-dir");
  DFLOW_REQUIRE(!settings.resume || !settings.checkpoint_dir.empty(), "--resume needs --checkpoint-dir");
  if (settings.in_process > 0) {
    TrainInProcess(settings);
    return 0;
  }
  if (std::optional<dist::ElasticWorker> elastic = dist::ElasticWorker::FromEnvironment()) {
    std::cout << "pid " << getpid() << std::endl;
    testing::ReplicatedMlp probe = testing::BuildReplicatedMlp(settings.seed);
    dist::ElasticRingStrategy strategy(*elastic, testing::GradientSpecsOf(probe));
    std::cout << "connected: rank " << strategy.worker() << " of " << strategy.num_workers() << std::endl;
    TrainElastic(settings, strategy);
    return 0;
  }
  std::optional<dist::ClusterSpec> cluster = dist::ClusterSpec::FromEnvironment();
  DFLOW_REQUIRE(cluster, "DFLOW_CLUSTER is not set: start this program with `dflow launch`, or pass --in-process N");
  std::cout << "pid " << getpid() << std::endl;
  testing::ReplicatedMlp probe = testing::BuildReplicatedMlp(settings.seed);
  dist::StrategyOptions options;
  options.startup_timeout = std::chrono::milliseconds(static_cast<int64_t>(settings.startup_timeout_s * 1000));
  options.codec = dist::ParseCodecKind(settings.codec);
  auto strategy = dist::MakeDataParallelStrategy(settings.strategy, *cluster, testing::GradientSpecsOf(probe), options);
  std::cout << "connected" << std::endl;
  Train(settings, *strategy);
  return 0;
}

}  // namespace
}  // namespace dflow

int main(int argc, char** argv) {
  dflow::Settings settings;
  CLI::App app("Train the spiral MLP data-parallel, one worker per process (or --in-process threads).");
  app.add_option("--strategy", settings.strategy, "ring (ps: not in this build)");
  app.add_option("--in-process", settings.in_process, "Run this many workers as threads instead");
  app.add_option("--steps", settings.steps, "Train until this global step")->check(CLI::NonNegativeNumber);
  app.add_option("--batch", settings.batch, "Batch per worker")->check(CLI::PositiveNumber);
  app.add_option("--seed", settings.seed, "Graph seed of worker 0 (worker k uses seed + k)");
  app.add_option("--out", settings.out, "Write worker k's final variables to OUT.k");
  app.add_option("--checkpoint-dir", settings.checkpoint_dir, "Chief's checkpoints");
  app.add_option("--checkpoint-every", settings.checkpoint_every, "Steps between checkpoints (0: none)");
  app.add_flag("--resume", settings.resume, "Restore the last checkpoint first (chief)");
  app.add_option("--step-sleep-ms", settings.step_sleep_ms, "Sleep after each step");
  app.add_option("--startup-timeout", settings.startup_timeout_s, "Seconds to wait for every worker");
  app.add_option("--codec", settings.codec, "Gradients on the wire: none, fp16 or 1bit")
      ->check(CLI::IsMember({"none", "fp16", "1bit"}));
  CLI11_PARSE(app, argc, argv);
  try {
    return dflow::Run(settings);
  } catch (const dflow::Error& e) {
    std::cerr << "data_parallel_mlp: error: " << e.what() << std::endl;
    return 1;
  }
}
