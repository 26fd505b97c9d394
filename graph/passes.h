// Graph rewrites that run before execution, each of which can be turned off:
// pruning to what fetches need, constant folding, common-subexpression
// elimination and dead-node removal. They work on the session's private copy
// of the graph, never on the user's.
#pragma once

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
};

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

void RunPasses(Graph& graph, Device& device, const PassOptions& options,
               const std::set<std::string>& targets);

}  // namespace dflow
