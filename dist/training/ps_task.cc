// A parameter-server process: who it is (DFLOW_CLUSTER, DFLOW_STRATEGY) and
// the ps task's serving loop, which the chief ends through a stop variable.
#include <cstdlib>
#include <iostream>

#include "dist/runtime/serve_task.h"
#include "dist/training/ps_training_graph.h"

namespace dflow::dist {

PsTask PsTaskFromEnvironment() {
  const char* strategy = std::getenv("DFLOW_STRATEGY");
  if (strategy && *strategy && std::string(strategy) != "ps")
    Fail(Code::kInvalidArgument, "DFLOW_STRATEGY is '", strategy, "'; parameter-server training needs 'ps'");
  std::optional<ClusterSpec> cluster = ClusterSpec::FromEnvironment();
  if (!cluster) Fail(Code::kInvalidArgument, "DFLOW_CLUSTER is not set (start the tasks with dflow launch --ps N)");
  if (!cluster->self()) Fail(Code::kInvalidArgument, "DFLOW_CLUSTER names no task (its \"task\" field)");
  PsTask task{*cluster, *cluster->self()};
  if (task.task.job != "ps" && task.task.job != "worker")
    Fail(Code::kInvalidArgument, "DFLOW_CLUSTER's task is of job '", task.task.job,
         "'; parameter-server training has 'ps' and 'worker' tasks");
  if (task.num_ps() < 1 || task.num_workers() < 1)
    Fail(Code::kInvalidArgument, "DFLOW_CLUSTER needs a 'ps' and a 'worker' job, it has ", task.num_ps(),
         " ps and ", task.num_workers(), " worker task(s)");
  return task;
}

int ServeParameterServer(const PsTask& task, int num_threads) {
  return ServeTaskUntilStopped(task.cluster, task.task,
                               {.stop_variable = PsStopVariableName(task.task.index),
                                .role = "ps task",
                                .num_threads = num_threads});
}

int RunPsTask(const std::function<void(const PsTask& task)>& train_worker, int ps_threads) {
  std::string who = "parameter-server training";
  try {
    PsTask task = PsTaskFromEnvironment();
    who = ClusterSpec::TaskPrefix(task.task);
    if (task.is_ps()) return ServeParameterServer(task, ps_threads);
    train_worker(task);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << who << ": " << e.what() << std::endl;
    return 1;
  }
}

}  // namespace dflow::dist
