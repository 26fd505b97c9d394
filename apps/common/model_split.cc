#include "apps/common/model_split.h"

#include <algorithm>
#include <iostream>

#include "apps/common/workers.h"

namespace dflow::apps {
namespace {

const std::vector<std::string> kParts = {"backbone", "extras", "heads"};

std::vector<std::string> SplitOn(const std::string& text, char separator) {
  std::vector<std::string> pieces(1);
  for (char c : text) {
    if (c == separator) pieces.emplace_back();
    else pieces.back() += c;
  }
  return pieces;
}

std::string StopVariable(int part_task) { return StrCat("model_part/stop_", part_task); }

// The cluster's part task `index` as its worker stops it.
dist::ServedTask PartTask(int index) { return {{kModelPartJob, index}, StopVariable(index)}; }

void SetDevice(models::ModelPartDevices& devices, const std::string& part, const std::string& device) {
  if (part == "backbone") devices.backbone = device;
  else if (part == "extras") devices.extras = device;
  else devices.heads = device;
}

}  // namespace

void AddModelSplitOption(CLI::App& app, DataParallelSettings& settings) {
  app.add_option("--split", settings.split,
                 "Model parallelism: the network's parts (backbone, extras, heads) on tasks of their own, "
                 "one per comma-separated group, '+' joining parts in one task (backbone,extras,heads: three "
                 "tasks per worker); started by dflow launch --model-parts");
}

std::vector<std::vector<std::string>> ParseModelSplit(const std::string& split) {
  std::vector<std::vector<std::string>> groups;
  std::vector<std::string> seen;
  for (const std::string& group : SplitOn(split, ',')) {
    groups.emplace_back();
    for (const std::string& part : SplitOn(group, '+')) {
      DFLOW_REQUIRE(std::find(kParts.begin(), kParts.end(), part) != kParts.end(), "--split: unknown part \"",
                    part, "\" in \"", split, "\" (the parts are backbone, extras and heads)");
      DFLOW_REQUIRE(std::find(seen.begin(), seen.end(), part) == seen.end(), "--split: part \"", part,
                    "\" is named twice in \"", split, "\"");
      seen.push_back(part);
      groups.back().push_back(part);
    }
  }
  for (const std::string& part : kParts)
    DFLOW_REQUIRE(std::find(seen.begin(), seen.end(), part) != seen.end(), "--split: \"", split,
                  "\" leaves out the ", part, " (every part goes to one task)");
  return groups;
}

void CheckModelSplit(const DataParallelSettings& settings) {
  if (settings.split.empty()) return;
  ParseModelSplit(settings.split);
  DFLOW_REQUIRE(StrategyName(settings) != "ps", "--split goes with --strategy ring (or one worker): under ",
                "parameter servers the ps tasks hold every variable, so no part has a task of its own");
}

std::optional<ModelSplit> WorkerModelSplit(const DataParallelSettings& settings, const std::string& device,
                                           int threads) {
  if (settings.split.empty()) return std::nullopt;
  CheckModelSplit(settings);
  const std::vector<std::vector<std::string>> groups = ParseModelSplit(settings.split);
  RequireCpuWhenDistributed(device);
  std::optional<dist::ClusterSpec> cluster = dist::ClusterSpec::FromEnvironment();
  DFLOW_REQUIRE(cluster && cluster->self() && cluster->self()->job == "worker",
                "train: --split needs DFLOW_CLUSTER naming this process a worker (start it with dflow launch ",
                "--model-parts G, or let train start the tasks itself)");
  const int per_worker = static_cast<int>(groups.size());
  const int workers = cluster->num_tasks("worker"), parts = cluster->num_tasks(kModelPartJob);
  DFLOW_REQUIRE(parts == workers * per_worker, "train: --split ", settings.split, " needs ", per_worker,
                " part task(s) per worker, ", workers * per_worker, " for ", workers,
                " worker(s); DFLOW_CLUSTER lists ", parts);
  ModelSplit split{.cluster = *cluster, .devices = {}, .tasks = {}, .session = {}};
  const int first = cluster->self()->index * per_worker;
  for (int g = 0; g < per_worker; ++g) {
    dist::ServedTask task = PartTask(first + g);
    for (const std::string& part : groups[g]) SetDevice(split.devices, part, dist::ClusterSpec::TaskPrefix(task.task));
    split.session.device_filters.push_back(dist::ClusterSpec::TaskPrefix(task.task));
    split.tasks.push_back(std::move(task));
  }
  split.session.target = "zmq://" + cluster->Address(split.tasks.front().task);
  split.session.num_threads = threads;
  return split;
}

bool IsModelPartTask() {
  std::optional<dist::ClusterSpec> cluster = dist::ClusterSpec::FromEnvironment();
  return cluster && cluster->self() && cluster->self()->job == kModelPartJob;
}

int ServeModelPart(int threads) {
  const dist::ClusterSpec cluster = *dist::ClusterSpec::FromEnvironment();
  const dist::TaskId task = *cluster.self();
  return dist::ServeTaskUntilStopped(
      cluster, task, {.stop_variable = StopVariable(task.index), .role = "model-part task", .num_threads = threads});
}

void StopModelParts(const ModelSplit& split, int64_t code) {
  if (code == 1) return dist::StopServedTasks(split.cluster, split.tasks, code);
  try {
    dist::StopServedTasks(split.cluster, split.tasks, code);
  } catch (const Error& e) {
    std::cerr << "could not stop the model-part tasks: " << e.message() << std::endl;
  }
}

}  // namespace dflow::apps
