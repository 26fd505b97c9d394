// Graph rewrites that run before execution, each of which can be turned off:
// pruning to what fetches need, constant folding, rewrites that know concrete
// ops (registered by ops/, e.g. the conv fusions of ops/passes/), common-
// subexpression elimination and dead-node removal. They work on the session's
// private copy of the graph, never on the user's.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "graph/device.h"
#include "graph/graph.h"

namespace dflow {

struct PassOptions {
  bool constant_folding = true;
  bool common_subexpression_elimination = true;
  bool prune_dead_nodes = true;
  // Inference rewrites of conv layers (ops/passes/inference_passes.h): an
  // inference-mode FusedBatchNorm after a Conv2D with constant weights folds
  // into the filter and a bias; Conv2D -> BiasAdd [-> Relu | Relu6] becomes
  // one _FusedConv2D. (Last, so that positional initialisers of the three
  // above keep their meaning.)
  bool fold_batch_norm = true;
  bool fuse_conv_bias_activation = true;
};

// A rewrite that knows concrete ops. It lives with its ops and registers
// itself here (graph/ knows no concrete op); RunPasses runs the registered
// rewrites after constant folding, lowest `order` first, each while its
// PassOptions flag is set. `run` returns how many patterns it rewrote.
struct RewritePass {
  std::string name;
  int order = 0;
  bool PassOptions::*enabled = nullptr;
  std::function<int(Graph&, Device&, const std::set<std::string>& targets)> run;
};
// Throws kAlreadyExists for a second pass of the same name.
void RegisterRewritePass(RewritePass pass);

// Copies into a new graph only the nodes that `fetches` and `targets` need,
// replacing each fed output by an _Arg node (index = position in `feeds`)
// and adding a _Retval node per fetch (index = position in `fetches`).
// Backward traversal stops at fed outputs, so what lies behind a feed never
// runs. Throws kNotFound/kInvalidArgument naming a bad feed, fetch or target,
// and kInvalidArgument for a Placeholder that is needed but not fed.
std::unique_ptr<Graph> ExtractForExecution(const Graph& graph, const std::vector<NodeOut>& feeds,
                                           const std::vector<NodeOut>& fetches,
                                           const std::vector<Node*>& targets);

// The nodes passes must keep: _Arg, _Retval and the named targets.
bool IsSink(const Node& node, const std::set<std::string>& targets);

// Replaces each foldable subgraph (non-stateful ops whose inputs are all
// constant, and outputs whose value is known while building) by Const nodes,
// evaluating it with an Executor on `device`. Returns the number of nodes folded.
int FoldConstants(Graph& graph, Device& device);
// Merges nodes with the same op, attrs and inputs. Returns the number removed.
int EliminateCommonSubexpressions(Graph& graph, const std::set<std::string>& targets);
// Removes nodes from which no sink can be reached. Returns the number removed.
int PruneDeadNodes(Graph& graph, const std::set<std::string>& targets);

// Constant folding, the registered rewrites, CSE, then dead-node removal,
// each as `options` allows.
void RunPasses(Graph& graph, Device& device, const PassOptions& options,
               const std::set<std::string>& targets);

}  // namespace dflow
