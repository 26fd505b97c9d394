// Common-subexpression elimination: two non-stateful nodes with the same op,
// attrs, device request and inputs compute the same value, so one is enough.
#include <map>

#include "graph/passes.h"

namespace dflow {
namespace {

std::string CandidateKey(const Node& node) {
  std::string key = node.op() + "|" + node.requested_device() + "|";
  for (const NodeOut& in : node.inputs()) key += StrCat(in.node->id(), ":", in.index, ",");
  key += "|";
  for (Node* control : node.control_inputs()) key += StrCat(control->id(), ",");
  return key;
}

bool SameAttrs(const Node& a, const Node& b) {
  if (a.attrs().size() != b.attrs().size()) return false;
  for (const auto& [name, value] : a.attrs()) {
    auto it = b.attrs().find(name);
    if (it == b.attrs().end() || !AttrEquals(value, it->second)) return false;
  }
  return true;
}

}  // namespace

int EliminateCommonSubexpressions(Graph& graph, const std::set<std::string>& targets) {
  auto consumers = graph.Consumers();
  std::map<std::string, std::vector<Node*>> seen;
  int removed = 0;
  // Topological order: a node's inputs are already merged when it is keyed.
  for (Node* node : graph.TopologicalOrder()) {
    if (node->def().is_stateful || IsSink(*node, targets)) continue;
    auto& candidates = seen[CandidateKey(*node)];
    Node* same = nullptr;
    for (Node* candidate : candidates)
      if (SameAttrs(*candidate, *node)) same = candidate;
    if (!same) {
      candidates.push_back(node);
      continue;
    }
    graph.ReplaceUses(node, same, consumers[node->id()]);
    for (const auto& c : consumers[node->id()]) consumers[same->id()].push_back(c);
    graph.RemoveNode(node);
    ++removed;
  }
  return removed;
}

}  // namespace dflow
