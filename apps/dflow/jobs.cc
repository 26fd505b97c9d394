// dflow jobs serve [--bind HOST] [--port P] --data-root DIR [--db FILE] [--token-file FILE]
// dflow jobs node --server URL --token-file FILE [--every S]
// The job service (apps/jobs/service.h, docs/jobs.md) and the node daemon
// that reports each machine's resources to it.
#include <signal.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <httplib.h>
#include <iostream>
#include <thread>

#include "apps/common/cli_checks.h"
#include "apps/dflow/commands.h"
#include "apps/jobs/runner.h"
#include "apps/jobs/service.h"
#include "graph/status.h"

namespace dflow::cli {
namespace {

namespace fs = std::filesystem;

struct ServeSettings {
  std::string bind = "127.0.0.1";
  int port = 8470;
  std::string data_root, db, token_file;
  bool allow_remote = false;
  double node_timeout_seconds = 10;
};

struct NodeSettings {
  std::string server, token_file, name;
  double every_seconds = 2;
  int beats = 0;  // 0: until stopped
};

// The directory of this executable: where dflow-count and dflow-detect are.
std::string BinDir() {
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  return error ? std::string(".") : self.parent_path().string();
}

std::string ReadToken(const std::string& path) {
  std::ifstream in(path);
  std::string token;
  std::getline(in, token);
  DFLOW_REQUIRE(!token.empty(), "no token in ", path, " (the job service writes it on its first start)");
  return token;
}

void Serve(ServeSettings s) {
  DFLOW_REQUIRE(s.bind == "127.0.0.1" || s.bind == "localhost" || s.allow_remote, "jobs serve: --bind ", s.bind,
                " would expose the service beyond this machine; add --allow-remote to mean it");
  fs::create_directories(s.data_root);
  s.data_root = fs::canonical(s.data_root).string();
  fs::create_directories(s.data_root + "/runs");
  if (s.db.empty()) s.db = s.data_root + "/jobs.sqlite";
  if (s.token_file.empty()) s.token_file = s.db + ".token";
  jobs::Store store(s.db);
  // Jobs left running by an earlier service are not watched by this one.
  for (const jobs::Job& job : store.Jobs())
    if (job.status == jobs::JobStatus::kRunning || job.status == jobs::JobStatus::kQueued)
      store.SetFinished(job.id, jobs::JobStatus::kFailed, "the job service stopped while it ran; resume it");
  const std::string token = jobs::LoadOrCreateToken(s.token_file);
  jobs::Runner runner(store, {.bin_dir = BinDir()});
  jobs::Service service(store, runner,
                        {.data_root = s.data_root, .token = token, .node_lost_seconds = s.node_timeout_seconds});
  const int port = service.Bind(s.bind, s.port);
  // SIGINT/SIGTERM stop the server from a thread of their own.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::thread stopper([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    std::cerr << "dflow jobs: stopping on signal " << signal << std::endl;
    service.Stop();
  });
  std::cerr << "dflow jobs: serving http://" << s.bind << ":" << port << "/?token=" << token << "\n"
            << "dflow jobs: data root " << s.data_root << ", database " << s.db << ", token in " << s.token_file
            << std::endl;
  std::cout << "port " << port << std::endl;  // for scripts that asked for --port 0
  service.Serve();
  kill(getpid(), SIGTERM);  // wakes the stopper if the server ended by itself
  stopper.join();
}

// This machine's resources, as the node list shows them.
nlohmann::json NodeInfo(const std::string& name) {
  struct sysinfo info {};
  sysinfo(&info);
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  nlohmann::json gpus = nlohmann::json::array();
  if (FILE* smi = popen("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null", "r")) {
    char line[256];
    while (fgets(line, sizeof line, smi)) {
      std::string gpu(line);
      while (!gpu.empty() && (gpu.back() == '\n' || gpu.back() == '\r')) gpu.pop_back();
      if (!gpu.empty()) gpus.push_back(gpu);
    }
    pclose(smi);
  }
  return {{"name", name},
          {"cores", static_cast<int64_t>(std::thread::hardware_concurrency())},
          {"memory_bytes", static_cast<int64_t>(info.totalram) * info.mem_unit},
          {"load", load},
          {"gpus", gpus}};
}

void RunNode(NodeSettings s) {
  if (s.name.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    s.name = host;
  }
  const std::string token = ReadToken(s.token_file);
  httplib::Client client(s.server);
  client.set_bearer_token_auth(token);
  client.set_connection_timeout(2);
  for (int beat = 0; s.beats == 0 || beat < s.beats; ++beat) {
    if (beat > 0) std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(s.every_seconds * 1000)));
    auto result = client.Post("/api/nodes", NodeInfo(s.name).dump(), "application/json");
    if (!result)
      std::cerr << "dflow jobs node: " << s.server << " did not answer (" << httplib::to_string(result.error())
                << "); trying again" << std::endl;
    else if (result->status != 200)
      Fail(Code::kInvalidArgument, "dflow jobs node: ", s.server, " refused the heartbeat (", result->status, "): ",
           result->body);
  }
}

}  // namespace

void AddJobsCommand(CLI::App& app) {
  CLI::App* jobs = app.add_subcommand("jobs", "The job service: submit, watch and stop training jobs");
  jobs->require_subcommand(1);
  auto serve = std::make_shared<ServeSettings>();
  CLI::App* serve_cmd = jobs->add_subcommand("serve", "Serve the REST API and the web page");
  serve_cmd->add_option("--data-root", serve->data_root, "Folder shared by the nodes: datasets, runs/")->required();
  serve_cmd->add_option("--bind", serve->bind, "Address to listen on (default 127.0.0.1)");
  serve_cmd->add_option("--port", serve->port, "Port (default 8470; 0: a free one, printed)")
      ->check(apps::IntegerRange(0, 65535));
  serve_cmd->add_option("--db", serve->db, "SQLite file (default DATA_ROOT/jobs.sqlite)");
  serve_cmd->add_option("--token-file", serve->token_file, "Bearer token, made on first start (default DB.token)");
  serve_cmd->add_flag("--allow-remote", serve->allow_remote, "Allow --bind beyond this machine");
  serve_cmd->add_option("--node-timeout", serve->node_timeout_seconds,
                        "Seconds without a heartbeat before a node is shown lost (default 10)")
      ->check(apps::PositiveReal());
  serve_cmd->callback([serve] { Serve(*serve); });

  auto node = std::make_shared<NodeSettings>();
  CLI::App* node_cmd = jobs->add_subcommand("node", "Report this machine to a job service every few seconds");
  node_cmd->add_option("--server", node->server, "The service, http://HOST:PORT")->required();
  node_cmd->add_option("--token-file", node->token_file, "The service's token file")->required();
  node_cmd->add_option("--name", node->name, "This node's name (default: the host name)");
  node_cmd->add_option("--every", node->every_seconds, "Seconds between heartbeats")->check(apps::PositiveReal());
  node_cmd->add_option("--beats", node->beats, "Stop after this many heartbeats (0: never)")
      ->check(apps::IntegerRange(0, 1000000));
  node_cmd->callback([node] { RunNode(*node); });
}

}  // namespace dflow::cli
