// Data-parallel training in the apps; see workers.h.
#include "apps/common/workers.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "apps/common/cli_checks.h"
#include "dist/cluster_environment.h"
#include "graph/device.h"
#include "graph/status.h"

namespace dflow::apps {
namespace {

namespace fs = std::filesystem;

// The gradients of `variables`, last layer first (InBackpropOrder's order).
std::vector<dist::GradientSpec> GradientSpecsInBackpropOrder(const std::vector<Output>& variables) {
  std::vector<dist::GradientSpec> specs;
  for (auto v = variables.rbegin(); v != variables.rend(); ++v)
    specs.push_back({v->node()->name(), v->dtype(), v->shape()});
  return specs;
}

// `dflow` beside this executable (the build tree and an install put them
// together), else whatever PATH finds.
std::string DflowExecutable() {
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    fs::path beside = self.parent_path() / "dflow";
    if (fs::exists(beside)) return beside.string();
  }
  return "dflow";
}

}  // namespace

void AddDataParallelOptions(CLI::App& app, DataParallelSettings& s) {
  app.add_option("--workers", s.workers,
                 "Data-parallel workers, one process each, started by dflow launch; --batch is per worker")
      ->check(IntegerRange(1, kMaxWorkers));
  app.add_option("--strategy", s.strategy,
                 "How the workers combine gradients: ring (all-reduce) or ps (parameter servers)");
  app.add_option("--ps", s.ps, "With --strategy ps: parameter-server processes (default 1)")
      ->check(IntegerRange(1, 64));
  app.add_option("--ps-mode", s.ps_mode, "With --strategy ps: sync (mean of all workers per step) or async");
  app.add_option("--codec", s.codec, "With --strategy ring: gradients on the wire, none, fp16 or 1bit (error feedback)")
      ->check(CLI::IsMember({"none", "fp16", "1bit"}));
  app.add_option("--base-port", s.base_port, "First port of the workers on 127.0.0.1 (default: dflow launch's, 2222)")
      ->check(IntegerRange(1, 65535));
  app.add_flag("--elastic", s.elastic,
               "With --strategy ring: workers may die (the others go on) or join later "
               "(started with DFLOW_ELASTIC set to the rendezvous dflow launch prints)");
  app.add_option("--min-workers", s.min_workers, "With --elastic: stop when fewer workers are left (default 1)")
      ->check(IntegerRange(1, kMaxWorkers));
  app.add_option("--max-workers", s.max_workers, "With --elastic: the most workers at once (default --workers)")
      ->check(IntegerRange(1, kMaxWorkers));
}

bool ShouldLaunchWorkers(const DataParallelSettings& settings) {
  return (settings.workers > 1 || !settings.split.empty()) && !LaunchedAsTask();
}

bool LaunchedAsTask() {
  return dist::DetectLauncher(dist::ProcessEnvironment()).has_value() || dist::ElasticWorker::FromEnvironment();
}

std::string StrategyName(const DataParallelSettings& settings) {
  return settings.strategy.empty() ? dist::StrategyFromEnvironment() : settings.strategy;
}

std::string PsModeName(const DataParallelSettings& settings) { return settings.ps_mode.empty() ? "sync" : settings.ps_mode; }

void CheckStrategy(const DataParallelSettings& settings) {
  const std::string strategy = StrategyName(settings);
  if (strategy != "ps") {
    dist::RequireStrategy(strategy);
    DFLOW_REQUIRE(settings.ps == 0 && settings.ps_mode.empty(), "train: --ps and --ps-mode go with ",
                  "--strategy ps; --strategy ", strategy, " has no parameter servers");
  } else {
    DFLOW_REQUIRE(settings.codec.empty() || settings.codec == "none", "train: --codec ", settings.codec,
                  " goes with --strategy ring; the parameter servers take float32 gradients");
  }
  const std::string mode = PsModeName(settings);
  DFLOW_REQUIRE(mode == "sync" || mode == "async", "train: --ps-mode must be sync or async, got '", mode, "'");
}

void LaunchWorkers(const DataParallelSettings& settings, int argc, char** argv) {
  const std::string strategy = StrategyName(settings);
  CheckStrategy(settings);
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  std::vector<std::string> args = {DflowExecutable(), "launch", "-n", std::to_string(settings.workers),
                                   "--strategy", strategy};
  if (strategy == "ps") args.insert(args.end(), {"--ps", std::to_string(settings.ps > 0 ? settings.ps : 1)});
  if (settings.elastic) {
    DFLOW_REQUIRE(strategy == "ring" && settings.split.empty(), "train: --elastic goes with --strategy ring and no --split");
    args.insert(args.end(), {"--elastic", "--min-workers", std::to_string(std::max(settings.min_workers, 1)),
                             "--max-workers", std::to_string(std::max(settings.max_workers, settings.workers))});
  }
  if (settings.base_port > 0) args.insert(args.end(), {"--base-port", std::to_string(settings.base_port)});
  // --split's groups, one part task each (the app checked them: ParseModelSplit).
  if (!settings.split.empty()) {
    auto groups = 1 + std::count(settings.split.begin(), settings.split.end(), ',');
    args.insert(args.end(), {"--model-parts", std::to_string(groups)});
  }
  args.push_back("--");
  args.push_back(error ? argv[0] : self.string());
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  std::vector<char*> exec_args;
  for (std::string& arg : args) exec_args.push_back(arg.data());
  exec_args.push_back(nullptr);
  execvp(exec_args[0], exec_args.data());
  Fail(Code::kUnavailable, "train --workers ", settings.workers, ": cannot run '", args[0],
       "' to start the workers: ", std::strerror(errno));
}

std::optional<dist::ElasticWorker> ElasticTrainingWorker(const DataParallelSettings& settings,
                                                         const std::string& device) {
  std::optional<dist::ElasticWorker> worker = dist::ElasticWorker::FromEnvironment();
  if (!worker) return std::nullopt;
  DFLOW_REQUIRE(StrategyName(settings) == "ring" && settings.split.empty(),
                "train: an elastic job (DFLOW_ELASTIC) trains with --strategy ring and no --split");
  RequireCpuWhenDistributed(device);
  return worker;
}

int ProvisionalWorkerIndex(const dist::ElasticWorker& worker) {
  return worker.preferred_rank >= 0 ? worker.preferred_rank : 1;
}

std::unique_ptr<dist::DataParallelStrategy> MakeElasticStrategy(const DataParallelSettings& settings,
                                                                const dist::ElasticWorker& worker,
                                                                const std::vector<Output>& variables) {
  dist::RingOptions options;
  options.codec = dist::ParseCodecKind(settings.codec.empty() ? "none" : settings.codec);
  auto strategy = std::make_unique<dist::ElasticRingStrategy>(worker, GradientSpecsInBackpropOrder(variables), options);
  std::cout << worker.id << ": elastic round " << strategy->round().number << ", rank " << strategy->worker()
            << " of " << strategy->num_workers() << std::endl;
  return strategy;
}

namespace {

// Every worker's variables become the chief's, without a fallback.
void BroadcastVariables(Session& session, const Saver& saver, dist::DataParallelStrategy& strategy) {
  std::vector<Tensor> values = saver.Values(session);
  const std::vector<std::string> names = saver.variable_names();
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = values[i].Clone();  // the broadcast writes into it
    strategy.BroadcastFromChief(names[i], values[i]);
  }
  saver.Assign(session, values);  // only once every value came: a broken broadcast leaves them as they were
}

// Joins the next round and takes its rank 0's variables, again while the
// workers keep changing (one may die during the broadcast).
void RegroupAndSynchronize(dist::DataParallelStrategy& strategy, Session& session, const Saver& saver,
                           int64_t completed_step, std::string why) {
  auto* elastic = dynamic_cast<dist::ElasticRingStrategy*>(&strategy);
  DFLOW_REQUIRE(elastic, "train: a membership change in a job that is not elastic: ", why);
  for (;;) {
    std::cout << "\nafter step " << completed_step << ": " << why << std::endl;
    try {
      elastic->Regroup(completed_step);
      BroadcastVariables(session, saver, strategy);
      return;
    } catch (const dist::MembershipChanged& again) {
      why = again.message();
    }
  }
}

}  // namespace

int64_t Regroup(dist::DataParallelStrategy& strategy, Session& session, const Saver& saver, const Output& global_step,
                int64_t completed_step, const std::string& why) {
  RegroupAndSynchronize(strategy, session, saver, completed_step, why);
  const int64_t step = session.Run({global_step})[0].scalar<int64_t>();
  const dist::Round& round = dynamic_cast<dist::ElasticRingStrategy&>(strategy).round();
  std::cout << "elastic round " << round.number << " (" << round.change << "): rank " << round.rank << " of "
            << round.ids.size() << ", going on after step " << step << std::endl;
  return step;
}

std::optional<dist::ClusterSpec> TrainingCluster(const DataParallelSettings& settings, const std::string& device) {
  std::optional<dist::ClusterSpec> cluster = dist::ClusterSpec::FromEnvironment();
  if (!cluster) return std::nullopt;
  const int workers = cluster->num_tasks("worker");
  if (workers == 1 && settings.workers <= 1) return std::nullopt;  // the single-process run
  DFLOW_REQUIRE(cluster->self() && cluster->self()->job == "worker", "train: DFLOW_CLUSTER does not name ",
                "this process as a \"worker\" task; a parameter server runs no training loop");
  DFLOW_REQUIRE(settings.workers <= 1 || settings.workers == workers, "train: --workers ", settings.workers,
                " but DFLOW_CLUSTER lists ", workers, " workers");
  CheckStrategy(settings);
  RequireCpuWhenDistributed(device);
  return cluster;
}

bool IsChiefProcess() {
  std::optional<dist::ClusterSpec> cluster = dist::ClusterSpec::FromEnvironment();
  return !cluster || !cluster->self() || *cluster->self() == dist::TaskId{"worker", 0};
}

int WorkerIndex(const std::optional<dist::ClusterSpec>& cluster) { return cluster ? cluster->self()->index : 0; }

int NumWorkers(const std::optional<dist::ClusterSpec>& cluster) {
  return cluster ? cluster->num_tasks("worker") : 1;
}

bool UsesParameterServers(const DataParallelSettings& settings, const std::string& device) {
  if (!LaunchedAsTask() || StrategyName(settings) != "ps") return false;
  RequireCpuWhenDistributed(device);
  return true;
}

void CheckPsWorker(const DataParallelSettings& settings, const std::string& device, const dist::PsTask& task) {
  TrainingCluster(settings, device);
  DFLOW_REQUIRE(settings.ps == 0 || settings.ps == task.num_ps(), "train: --ps ", settings.ps,
                " but DFLOW_CLUSTER lists ", task.num_ps(), " ps tasks");
}

void RequireCpuWhenDistributed(const std::string& device) {
  if (device.empty() || DeviceName::Parse(device).type == "CPU") return;
  Fail(Code::kInvalidArgument, "train: --device ", device,
       " is for single-process training; data-parallel workers run on the CPU");
}

std::unique_ptr<dist::DataParallelStrategy> MakeStrategy(const DataParallelSettings& settings,
                                                         const dist::ClusterSpec& cluster,
                                                         const std::vector<Output>& variables) {
  dist::StrategyOptions options;
  options.codec = dist::ParseCodecKind(settings.codec.empty() ? "none" : settings.codec);
  return dist::MakeDataParallelStrategy(StrategyName(settings), cluster, GradientSpecsInBackpropOrder(variables),
                                        options);
}

void SynchronizeVariables(Session& session, const Saver& saver, dist::DataParallelStrategy& strategy) {
  try {
    BroadcastVariables(session, saver, strategy);
  } catch (const dist::MembershipChanged& change) {  // an elastic job changed while starting
    RegroupAndSynchronize(strategy, session, saver, 0, change.message());
  }
}

dist::ReplicatedStep InBackpropOrder(dist::ReplicatedStep step) {
  std::reverse(step.gradients.begin(), step.gradients.end());
  std::reverse(step.gradient_feeds.begin(), step.gradient_feeds.end());
  return step;
}

}  // namespace dflow::apps
