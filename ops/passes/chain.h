// Helpers the conv rewrites (ops/passes/) share: whether a node's only use is
// one input of the next node in a chain, and replacing a chain's last node.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/passes.h"

namespace dflow::passes {

// True when `producer` (not a sink, no control edges out) is used exactly
// once, as data input 0 of `consumer`, both asking for the same device.
bool FeedsOnly(const Node& producer, const Node& consumer,
               const std::vector<std::vector<Graph::Consumer>>& consumers,
               const std::set<std::string>& targets);

// Points every use of `last` at `replacement`, removes `removed` (which must
// include `last` and have no other uses left), moves their control inputs to
// `replacement` and gives it `last`'s name.
void ReplaceChain(Graph& graph, Node* last, Node* replacement, const std::vector<Node*>& removed);

// The ids of the graph's nodes in topological order: a pass that removes
// nodes looks each id up again (node_by_id is null once removed).
std::vector<int> TopologicalIds(const Graph& graph);

// Visits the nodes in topological order, skipping those a rewrite removed:
// match(node) gives an optional chain, rewrite(chain) replaces it. Returns
// the number of chains rewritten.
template <typename Match, typename Rewrite>
int RewriteChains(Graph& graph, Match match, Rewrite rewrite) {
  int rewritten = 0;
  for (int id : TopologicalIds(graph)) {
    Node* node = graph.node_by_id(id);
    if (!node) continue;
    auto chain = match(node);
    if (!chain) continue;
    rewrite(*chain);
    ++rewritten;
  }
  return rewritten;
}

}  // namespace dflow::passes
