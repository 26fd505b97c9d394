// Helpers the conv rewrites share (ops/passes/chain.h).
#include "ops/passes/chain.h"

#include <algorithm>

namespace dflow::passes {

bool FeedsOnly(const Node& producer, const Node& consumer,
               const std::vector<std::vector<Graph::Consumer>>& consumers,
               const std::set<std::string>& targets) {
  const auto& uses = consumers[producer.id()];
  return uses.size() == 1 && uses[0].node == &consumer && uses[0].input == 0 &&
         !IsSink(producer, targets) && producer.requested_device() == consumer.requested_device();
}

void ReplaceChain(Graph& graph, Node* last, Node* replacement, const std::vector<Node*>& removed) {
  std::string name = last->name();
  graph.ReplaceUses(last, replacement, graph.Consumers()[last->id()]);
  std::vector<Node*> controls;
  for (Node* node : removed)
    for (Node* control : node->control_inputs())
      if (std::find(removed.begin(), removed.end(), control) == removed.end())
        controls.push_back(control);
  for (Node* node : removed) graph.RemoveNode(node);
  for (Node* control : controls) graph.AddControlInput(replacement, control);
  graph.RenameNode(replacement, name);
}

std::vector<int> TopologicalIds(const Graph& graph) {
  std::vector<int> ids;
  for (Node* node : graph.TopologicalOrder()) ids.push_back(node->id());
  return ids;
}

}  // namespace dflow::passes
