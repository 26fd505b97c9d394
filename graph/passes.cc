// The pass pipeline (RunPasses) and the registry of op-aware rewrites that
// ops/ adds to it (graph/passes.h).
#include <algorithm>
#include <mutex>

#include "graph/passes.h"

namespace dflow {
namespace {

struct RewriteRegistry {
  std::mutex mu;
  std::vector<RewritePass> passes;  // sorted by order
};

RewriteRegistry& Rewrites() {
  static RewriteRegistry registry;
  return registry;
}

std::vector<RewritePass> RegisteredRewrites() {
  RewriteRegistry& registry = Rewrites();
  std::lock_guard<std::mutex> lock(registry.mu);
  return registry.passes;
}

// Constant folding evaluates on the host whatever the target device: the
// folded values become Const attrs (host memory) anyway, and the host has
// kernels for every dtype. Never destroyed, like the host allocator.
Device& HostDeviceForFolding() {
  static Device* host = NewCpuDevice(0, new ThreadPool(1, "dflow-fold")).release();
  return *host;
}

}  // namespace

void RegisterRewritePass(RewritePass pass) {
  if (!pass.enabled || !pass.run)
    Fail(Code::kInvalidArgument, "rewrite pass '", pass.name, "' needs a flag and a function");
  RewriteRegistry& registry = Rewrites();
  std::lock_guard<std::mutex> lock(registry.mu);
  for (const RewritePass& other : registry.passes)
    if (other.name == pass.name)
      Fail(Code::kAlreadyExists, "rewrite pass '", pass.name, "' is registered twice");
  auto later = std::upper_bound(registry.passes.begin(), registry.passes.end(), pass.order,
                                [](int order, const RewritePass& p) { return order < p.order; });
  registry.passes.insert(later, std::move(pass));
}

void RunPasses(Graph& graph, Device& device, const PassOptions& options,
               const std::set<std::string>& targets) {
  if (options.constant_folding)
    FoldConstants(graph, device.type() == "CPU" ? device : HostDeviceForFolding());
  for (const RewritePass& pass : RegisteredRewrites())
    if (options.*pass.enabled) pass.run(graph, device, targets);
  if (options.common_subexpression_elimination) EliminateCommonSubexpressions(graph, targets);
  if (options.prune_dead_nodes) PruneDeadNodes(graph, targets);
}

}  // namespace dflow
