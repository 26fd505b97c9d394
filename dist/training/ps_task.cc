// A parameter-server process: who it is (DFLOW_CLUSTER, DFLOW_STRATEGY) and
// the ps task's serving loop, which the chief ends through a stop variable.
#include <signal.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include "dist/training/ps_training_graph.h"
#include "dist/runtime/worker_service.h"
#include "dist/transport/zmq_server.h"

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

namespace {

// The code the chief assigned to this task's stop variable; 0 while unset.
int64_t StopCode(WorkerService& service, int ps_task) {
  Variable* stop = service.resources().FindVariable(PsStopVariableName(ps_task));
  if (!stop || !stop->initialized()) return 0;
  return *stop->Read().data<int64_t>();
}

std::string ListenAddress(const PsTask& task) {
  int port = ParseHostPort(task.cluster.Address(task.task), "the task's cluster address").second;
  return StrCat("127.0.0.1:", port);
}

}  // namespace

int ServeParameterServer(const PsTask& task, int num_threads) {
  // SIGINT/SIGTERM are taken by sigtimedwait below: blocked before any
  // thread starts, so every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  WorkerService service(task.cluster, task.task, num_threads);
  MessageServer server(ListenAddress(task), [&service](Message request, MessageServer::Respond respond) {
    service.Handle(std::move(request), std::move(respond));
  });
  std::cerr << "ps task " << service.task_prefix() << " serving on " << ListenAddress(task) << std::endl;
  const timespec poll = {0, 50'000'000};  // 50 ms
  int64_t code = 0;
  while ((code = StopCode(service, task.task.index)) == 0) {
    int signal = sigtimedwait(&stop_signals, nullptr, &poll);
    if (signal > 0) {
      std::cerr << "ps task " << service.task_prefix() << ": stopping on signal " << signal << std::endl;
      server.Stop();
      return 0;
    }
  }
  std::cerr << "ps task " << service.task_prefix() << ": the chief says stop ("
            << (code == 1 ? "training finished" : "after an error") << ")" << std::endl;
  // The variable is set before the chief's step replies: give the reply time to leave.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  server.Stop();
  return code == 1 ? 0 : 1;
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
