#include "dist/runtime/serve_task.h"

#include <signal.h>

#include <iostream>
#include <thread>

#include "dist/runtime/worker_service.h"
#include "graph/session.h"
#include "ops/state.h"
#include "dist/transport/zmq_channel.h"
#include "dist/transport/zmq_server.h"

namespace dflow::dist {
namespace {

// A stop signal that reached a thread other than the serving one: in a
// process with threads started before the mask was set (Python's, or its
// BLAS pool), SIGTERM may be delivered to any of them, and its default
// action would end the process mid-way (even mid-line of the last log).
volatile sig_atomic_t g_stop_signal = 0;
void RecordStopSignal(int signal) { g_stop_signal = signal; }

// The code a client assigned to the stop variable; 0 while unset.
int64_t StopCode(WorkerService& service, const std::string& stop_variable) {
  Variable* stop = service.resources().FindVariable(stop_variable);
  if (!stop || !stop->initialized()) return 0;
  return *stop->Read().data<int64_t>();
}

std::string ListenAddress(const ClusterSpec& cluster, const TaskId& task) {
  int port = ParseHostPort(cluster.Address(task), "the task's cluster address").second;
  return StrCat("127.0.0.1:", port);
}

}  // namespace

int ServeTaskUntilStopped(const ClusterSpec& cluster, const TaskId& task, const ServeTaskOptions& options) {
  // SIGINT/SIGTERM are taken by sigtimedwait below: blocked before any
  // thread starts, so every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  g_stop_signal = 0;
  struct sigaction record {}, old_int {}, old_term {};
  record.sa_handler = RecordStopSignal;
  record.sa_flags = SA_RESTART;  // other threads' calls go on (the transport's poll loops also take EINTR)
  sigemptyset(&record.sa_mask);
  sigaction(SIGINT, &record, &old_int);
  sigaction(SIGTERM, &record, &old_term);
  WorkerService service(cluster, task, options.num_threads);
  const std::string address = ListenAddress(cluster, task);
  MessageServer server(address, [&service](Message request, MessageServer::Respond respond) {
    service.Handle(std::move(request), std::move(respond));
  });
  const std::string who = options.role + " " + service.task_prefix();
  std::cerr << who << " serving on " << address << std::endl;
  const timespec poll = {0, 50'000'000};  // 50 ms
  int64_t code = 0;
  int signal = 0;
  while ((code = StopCode(service, options.stop_variable)) == 0 && signal <= 0) {
    signal = sigtimedwait(&stop_signals, nullptr, &poll);
    if (signal <= 0 && g_stop_signal != 0) signal = g_stop_signal;
  }
  // A signal may come right after the stop (the launcher ends the tasks
  // once its workers are done): the stop code is what the client meant.
  if (code == 0) code = StopCode(service, options.stop_variable);
  std::string why = code == 0   ? StrCat("stopping on signal ", signal)
                    : code == 1 ? "told to stop (training finished)"
                                : "told to stop (after an error)";
  // What it served: a model-part task holds its part's variables. One write, so the line comes whole.
  std::cerr << StrCat(who, ": ", why, ", holding ", service.resources().VariableNames().size(), " variable(s)\n")
            << std::flush;
  // The variable is set before the client's step replies: give the reply time to leave.
  if (code != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  server.Stop();
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return code == 0 || code == 1 ? 0 : 1;
}

void StopServedTasks(const ClusterSpec& cluster, const std::vector<ServedTask>& tasks, int64_t code) {
  if (tasks.empty()) return;
  Scope root = Scope::NewRootScope();
  SessionOptions options;
  options.target = "zmq://" + cluster.Address(tasks.front().task);
  std::vector<TensorName> stops;
  for (const ServedTask& served : tasks) {
    const std::string device = ClusterSpec::TaskPrefix(served.task);
    options.device_filters.push_back(device);
    Scope on_task = root.WithDevice(device + "/device:CPU:0");  // StopCode reads it on the host
    Output stop = ops::Variable(on_task.WithOpName(served.stop_variable), Shape(), DType::kInt64);
    stops.emplace_back(ops::Assign(on_task, stop, Tensor::Scalar<int64_t>(code)).node());
  }
  Session session(root, options);
  session.Run({}, {}, stops);
}

}  // namespace dflow::dist
