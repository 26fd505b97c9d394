// `dflow run`: loads a graph file, feeds .npy files, runs one step, writes
// each fetch as DIR/<fetch name with '/' and ':' as '_'>.npy and prints it;
// --trace also writes a Chrome trace and prints the step summary;
// --devices runs on several CPU and GPU devices, --device on one GPU, --remote on
// the cluster of a `dflow server`; --show-placement says where each node ran
// and why.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "apps/common/cli_checks.h"
#include "apps/dflow/commands.h"
#include "graph/graph_io.h"
#include "graph/npy.h"
#include "graph/run_metadata.h"
#include "graph/session.h"

namespace dflow::cli {
namespace {

struct RunArgs {
  std::string graph;
  std::vector<std::string> feeds;
  std::vector<std::string> fetches;
  std::vector<std::string> targets;
  std::string out;
  std::string trace;
  int threads = 0;
  std::string devices;
  std::string device;
  std::string remote;
  bool soft_placement = false;
  bool show_placement = false;
};

// "dense/mm:1" -> "dense_mm_1.npy"
std::string FetchFileName(std::string name) {
  for (char& c : name)
    if (c == '/' || c == ':') c = '_';
  return name + ".npy";
}

// Checks, before any work is done, that the fetches map to distinct files,
// that DIR can hold them and that the trace's directory exists.
std::vector<std::string> PlanOutputs(const RunArgs& args) {
  std::error_code ec;
  if (!args.trace.empty()) {
    auto parent = std::filesystem::path(args.trace).parent_path();
    if (!parent.empty() && !std::filesystem::is_directory(parent, ec))
      Fail(Code::kNotFound, "--trace '", args.trace, "': directory '", parent.string(),
           "' does not exist");
  }
  if (args.out.empty()) return {};
  std::vector<std::string> paths;
  std::map<std::string, std::string> by_file;
  for (const std::string& fetch : args.fetches) {
    std::string file = FetchFileName(fetch);
    auto [it, added] = by_file.emplace(file, fetch);
    if (!added)
      Fail(Code::kInvalidArgument, "fetches '", it->second, "' and '", fetch,
           "' would both be written to ", file);
    paths.push_back((std::filesystem::path(args.out) / file).string());
  }
  std::filesystem::create_directories(args.out, ec);
  if (ec || !std::filesystem::is_directory(args.out))
    Fail(Code::kInvalidArgument, "--out '", args.out, "': cannot create directory",
         ec ? ": " + ec.message() : std::string());
  return paths;
}

void Run(const RunArgs& args) {
  if (args.fetches.empty() && args.targets.empty())
    Fail(Code::kInvalidArgument, "nothing to run: give at least one --fetch or --target");
  std::shared_ptr<Graph> graph = LoadGraph(args.graph);
  FeedList feeds = ReadFeeds(args.feeds);
  std::vector<std::string> out_paths = PlanOutputs(args);

  SessionOptions session_options;
  session_options.num_threads = args.threads;
  session_options.devices = args.device.empty() ? SplitCommas(args.devices) : std::vector<std::string>{args.device};
  session_options.target = args.remote;
  session_options.allow_soft_placement = args.soft_placement;
  Session session(graph, session_options);
  std::vector<TensorName> fetches(args.fetches.begin(), args.fetches.end());
  std::vector<TensorName> targets(args.targets.begin(), args.targets.end());
  RunOptions run_options;
  run_options.trace = !args.trace.empty() || args.show_placement;
  RunMetadata metadata;
  std::vector<Tensor> results = session.Run(feeds, fetches, targets, run_options, &metadata);

  for (size_t i = 0; i < results.size(); ++i) {
    std::cout << args.fetches[i] << ": " << results[i].DebugString(8);
    if (!out_paths.empty()) {
      WriteNpy(out_paths[i], results[i]);
      std::cout << " -> " << out_paths[i];
    }
    std::cout << "\n";
  }
  if (args.show_placement)
    std::cout << "\nplacement:\n"
              << RunPlacementText(*graph, feeds, fetches, targets, session_options,
                                  session.cluster().devices(), metadata);
  if (!args.trace.empty()) {
    WriteChromeTrace(metadata, args.trace);
    std::cout << "\ntrace written to " << args.trace << "\n" << TraceSummary(metadata);
  }
}

}  // namespace

void AddRunCommand(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* run = app.add_subcommand("run", "Run a graph file once on .npy feeds.");
  run->add_option("graph", args->graph, "Graph file (JSON, see docs/graph-format.md).")->required();
  AddRepeatable(run, "--feed", args->feeds,
             "NAME=FILE.npy: feed the tensor NAME[:i] from a .npy file.");
  AddRepeatable(run, "--fetch", args->fetches, "NAME[:i]: a tensor to compute and write.");
  AddRepeatable(run, "--target", args->targets, "NODE: a node to run for its effect only.");
  run->add_option("--out", args->out, "DIR for the fetched .npy files (created if missing).");
  run->add_option("--trace", args->trace, "Write a Chrome trace (chrome://tracing, Perfetto).");
  run->add_option("--threads", args->threads, "Worker threads (default: one per core).")
      ->check(apps::ThreadCount(/*zero_means_default=*/true));
  run->add_option("--devices", args->devices,
                  "Comma-separated CPU and GPU devices by full name, each with its own --threads, e.g. "
                  "/job:localhost/replica:0/task:0/device:CPU:0,/job:localhost/replica:0/task:0/device:CPU:1.");
  run->add_option("--device", args->device,
                  "The one device to run on: /device:CPU:0 (the default) or /device:GPU:N (with "
                  "--soft-placement, ops without a GPU kernel run on the host).")
      ->excludes("--devices");
  run->add_option("--remote", args->remote,
                  "zmq://HOST:PORT: run on the cluster of the `dflow server` listening there "
                  "(nodes ask for its tasks' devices, e.g. /job:worker/task:1).");
  run->add_flag("--soft-placement", args->soft_placement,
                "A node asking for a device the session lacks, or one without a kernel for its "
                "op, runs on a device that has one instead of failing.");
  run->add_flag("--show-placement", args->show_placement,
                "Print the device of every node of the step, and why.");
  run->callback([args] { Run(*args); });
}

}  // namespace dflow::cli
