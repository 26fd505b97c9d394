// `dflow profile`: where a step's time goes. Loads a graph file, optionally
// runs an init target once, runs a few warm-up steps, then traces N steps
// and prints the slowest nodes and the time per op, each node's time being
// its mean over the traced steps (the step time is the median). --trace
// writes that mean step as a Chrome trace: a measured profile for
// `dflow place --profile`. --remote profiles the graph on the cluster of a
// `dflow server`, one process track per task on one timeline.
#include <iostream>
#include <memory>

#include "apps/common/cli_checks.h"
#include "apps/dflow/commands.h"
#include "graph/graph_io.h"
#include "graph/run_metadata.h"

namespace dflow::cli {
namespace {

struct ProfileArgs {
  std::string graph;
  std::vector<std::string> feeds, fetches, targets;
  std::string init;
  int warmup = 3;
  int steps = 10;
  int top = 15;
  int threads = 0;
  std::string trace;
  std::string remote;  // zmq://HOST:PORT, or "" for this process
};

void Profile(const ProfileArgs& args) {
  if (args.fetches.empty() && args.targets.empty())
    Fail(Code::kInvalidArgument, "nothing to profile: give at least one --fetch or --target");
  std::shared_ptr<Graph> graph = LoadGraph(args.graph);
  FeedList feeds = ReadFeeds(args.feeds);
  SessionOptions options;
  options.num_threads = args.threads;
  options.target = args.remote;
  Session session(graph, options);
  if (!args.init.empty()) session.Run({}, {}, {args.init});
  std::vector<TensorName> fetches(args.fetches.begin(), args.fetches.end());
  std::vector<TensorName> targets(args.targets.begin(), args.targets.end());
  for (int i = 0; i < args.warmup; ++i) session.Run(feeds, fetches, targets);
  std::vector<RunMetadata> steps(args.steps);
  RunOptions trace;
  trace.trace = true;
  for (RunMetadata& step : steps) session.Run(feeds, fetches, targets, trace, &step);
  RunMetadata mean = MeanOfSteps(steps);
  std::cout << "mean of " << args.steps << " traced steps after " << args.warmup
            << " warm-up steps (step time: median)\n"
            << TraceSummary(mean, args.top);
  if (!args.trace.empty()) {
    WriteChromeTrace(mean, args.trace);
    std::cout << "\nmean step written to " << args.trace << " (for dflow place --profile)\n";
  }
}

}  // namespace

void AddProfileCommand(CLI::App& app) {
  auto args = std::make_shared<ProfileArgs>();
  CLI::App* cmd = app.add_subcommand(
      "profile", "Trace several steps of a graph file and print where the time goes.");
  cmd->add_option("graph", args->graph, "Graph file (JSON, see docs/graph-format.md).")->required();
  AddRepeatable(cmd, "--feed", args->feeds, "NAME=FILE.npy: feed the tensor NAME[:i].");
  AddRepeatable(cmd, "--fetch", args->fetches, "NAME[:i]: a tensor each step computes.");
  AddRepeatable(cmd, "--target", args->targets, "NODE: a node each step runs (a train op).");
  cmd->add_option("--init", args->init, "NODE to run once first (a variable initializer).");
  cmd->add_option("--warmup", args->warmup, "Untraced steps first.")->check(apps::IntegerRange(0, 100000));
  cmd->add_option("--steps", args->steps, "Traced steps.")->check(apps::IntegerRange(1, 100000));
  cmd->add_option("--top", args->top, "Slowest nodes to list.")->check(apps::IntegerRange(0, 100000));
  cmd->add_option("--threads", args->threads, "Worker threads (default: one per core).")
      ->check(apps::ThreadCount(/*zero_means_default=*/true));
  cmd->add_option("--remote", args->remote,
                  "zmq://HOST:PORT: profile on the cluster of the `dflow server` listening there "
                  "(nodes ask for its tasks' devices, e.g. /job:worker/task:1).");
  cmd->add_option("--trace", args->trace,
                  "Write the mean step as a Chrome trace (a profile for dflow place --profile).");
  cmd->callback([args] { Profile(*args); });
}

}  // namespace dflow::cli
