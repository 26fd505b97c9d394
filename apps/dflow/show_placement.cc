// `dflow run --show-placement`: where each node of the step went, and why.
// The session places the graph it runs (pruned to the fetches, then the
// graph passes), so this builds that same graph and places it with the same
// Place; the traced step must then agree, node for node.
#include <map>

#include "apps/dflow/commands.h"
#include "graph/placement.h"
#include "graph/passes.h"
#include "graph/thread_pool.h"

namespace dflow::cli {
namespace {

// The graph Session::Build runs for these feeds, fetches and targets.
std::unique_ptr<Graph> StepGraph(const Graph& graph, const FeedList& feeds,
                                 const std::vector<TensorName>& fetches,
                                 const std::vector<TensorName>& targets,
                                 const SessionOptions& options, Device& device) {
  std::vector<NodeOut> feed_outs, fetch_outs;
  std::vector<Node*> target_nodes;
  std::set<std::string> target_names;
  for (const auto& [name, value] : feeds) feed_outs.push_back(graph.ParseOutput(name.name));
  for (const TensorName& fetch : fetches) fetch_outs.push_back(graph.ParseOutput(fetch.name));
  for (const TensorName& target : targets) {
    target_nodes.push_back(&graph.GetNode(target.name));
    target_names.insert(target.name);
  }
  auto step = ExtractForExecution(graph, feed_outs, fetch_outs, target_nodes);
  RunPasses(*step, device, options.passes, target_names);
  return step;
}

// Every node the step ran must be where the placement says.
void CheckAgainstTrace(const Placement& placement, const RunMetadata& ran) {
  for (const NodeExecStats& stats : ran.step_stats) {
    auto it = placement.nodes.find(stats.node);
    if (it == placement.nodes.end()) continue;  // _Send / _Recv added by partitioning
    if (it->second.device != stats.device)
      Fail(Code::kInternal, "--show-placement put '", stats.node, "' on ", it->second.device,
           " but the session ran it on ", stats.device);
  }
}

}  // namespace

std::string RunPlacementText(const Graph& graph, const FeedList& feeds,
                             const std::vector<TensorName>& fetches,
                             const std::vector<TensorName>& targets,
                             const SessionOptions& options, const std::vector<std::string>& devices,
                             const RunMetadata& ran) {
  ThreadPool pool(1, "dflow-place");
  std::unique_ptr<Device> cpu = NewCpuDevice(0, &pool);
  auto step = StepGraph(graph, feeds, fetches, targets, options, *cpu);
  PlacementOptions placement_options;
  placement_options.allow_soft_placement = options.allow_soft_placement;
  Placement placement = Place(*step, devices, placement_options);
  CheckAgainstTrace(placement, ran);
  return PlacementToText(*step, placement);
}

}  // namespace dflow::cli
