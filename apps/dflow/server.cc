// dflow server: runs one worker task of a cluster until SIGINT or SIGTERM.
// It binds 127.0.0.1 at its task's port unless --bind says otherwise (and
// then warns, unless that is loopback too: whoever reaches the port can run graphs on this machine).
#include <csignal>
#include <cstdlib>
#include <iostream>

#include "apps/common/cli_checks.h"
#include "apps/dflow/commands.h"
#include "dist/runtime/worker_service.h"
#include "dist/transport/curve.h"

namespace dflow::cli {
namespace {

using dist::ClusterSpec;
using dist::ParseHostPort;
using dist::Message;
using dist::MessageServer;
using dist::TaskId;
using dist::WorkerService;

struct ServerArgs {
  std::string cluster_file;
  std::string job;
  int task = -1;
  std::string bind;
  int threads = 0;
  double step_timeout_s = dist::kDefaultStepTimeoutMs / 1000.0;
  bool insecure = false;
};

ClusterSpec ReadCluster(const ServerArgs& args, TaskId& task) {
  std::optional<ClusterSpec> cluster;
  if (!args.cluster_file.empty()) cluster = ClusterSpec::Load(args.cluster_file);
  else cluster = ClusterSpec::FromEnvironment();
  if (!cluster) Fail(Code::kInvalidArgument, "dflow server needs --cluster FILE or DFLOW_CLUSTER");
  if (!cluster->curve_keys().empty()) dist::SetProcessTransportKeys(cluster->curve_keys());
  task = cluster->self().value_or(TaskId{});
  if (!args.job.empty()) task.job = args.job;
  if (args.task >= 0) task.index = args.task;
  if (task.job.empty())
    Fail(Code::kInvalidArgument, "dflow server needs --job (the cluster document names no task)");
  return *cluster;
}

// The address to listen on: --bind, else 127.0.0.1 at the task's port.
std::string ListenAddress(const ServerArgs& args, const ClusterSpec& cluster, const TaskId& task) {
  int port = ParseHostPort(cluster.Address(task), "the task's cluster address").second;
  if (args.bind.empty()) return StrCat("127.0.0.1:", port);
  ParseHostPort(args.bind, "--bind");  // beyond loopback, the server needs CURVE keys or --insecure
  return args.bind;
}

void Serve(const ServerArgs& args) {
  if (args.insecure) setenv("DFLOW_INSECURE", "1", 1);
  TaskId task;
  ClusterSpec cluster = ReadCluster(args, task);
  std::string address = ListenAddress(args, cluster, task);
  // Block the stop signals before any thread starts, so every thread
  // inherits the mask and sigwait below is the one that receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  WorkerService service(cluster, task, args.threads, static_cast<int64_t>(args.step_timeout_s * 1000));
  MessageServer server(address, [&service](Message request, MessageServer::Respond respond,
                                           const std::string& client) {
    service.Handle(std::move(request), std::move(respond), client);
  });
  service.WatchClients(server.liveness());
  std::cerr << "dflow server: task " << service.task_prefix() << " listening on " << address
            << " (incarnation " << service.incarnation() << ")" << std::endl;
  int signal = 0;
  sigwait(&stop_signals, &signal);
  std::cerr << "dflow server: stopping on signal " << signal << std::endl;
  server.Stop();
}

}  // namespace

void AddServerCommand(CLI::App& app) {
  auto args = std::make_shared<ServerArgs>();
  CLI::App* command = app.add_subcommand("server", "run a worker task of a cluster (until SIGINT/SIGTERM)");
  command->add_option("--cluster", args->cluster_file, "cluster JSON file (default: $DFLOW_CLUSTER)");
  command->add_option("--job", args->job, "this task's job (default: the cluster document's task)");
  command->add_option("--task", args->task, "this task's index in its job (default: the cluster document's task)")
      ->check(apps::AtLeast(0));
  command->add_option("--bind", args->bind,
                      "listen on HOST:PORT instead of 127.0.0.1 (beyond loopback: with CURVE keys, or --insecure)");
  command->add_flag("--insecure", args->insecure,
                    "allow listening beyond loopback without CURVE keys (warns at every start)");
  command->add_option("--threads", args->threads, "threads per device (default: one per core)")
      ->check(apps::ThreadCount(/*zero_means_default=*/true));
  command->add_option("--step-timeout", args->step_timeout_s,
                      "abort and forget a step once its client has been silent this many seconds "
                      "(0: never; default 30)")
      ->check(apps::NonNegativeReal());
  command->callback([args] { Serve(*args); });
}

}  // namespace dflow::cli
