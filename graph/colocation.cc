#include "graph/colocation.h"

#include <algorithm>
#include <numeric>

namespace dflow {

ColocationGroups::ColocationGroups(const Graph& graph)
    : parent_(graph.id_bound()), members_(graph.id_bound()) {
  std::iota(parent_.begin(), parent_.end(), 0);
  for (Node* node : graph.nodes())
    for (int i = 0; i < node->num_inputs(); ++i)
      if (node->IsRefInput(i)) Union(node->id(), node->input(i).node->id());
  for (Node* node : graph.nodes()) members_[Find(node->id())].push_back(node);
}

int ColocationGroups::Find(int id) const {
  while (parent_[id] != id) {
    parent_[id] = parent_[parent_[id]];  // path halving keeps the trees shallow
    id = parent_[id];
  }
  return id;
}

void ColocationGroups::Union(int a, int b) {
  a = Find(a);
  b = Find(b);
  if (a != b) parent_[std::max(a, b)] = std::min(a, b);  // the oldest node represents
}

std::string ColocationGroups::Describe(int group) const {
  std::string text = "[";
  for (const Node* node : Members(group)) text += (text.size() > 1 ? ", " : "") + node->name();
  return text + "]";
}

}  // namespace dflow
