// Colocation groups: sets of nodes that must run on one device. A variable
// lives in one device's memory, so every op that takes its ref input (Assign,
// AssignAdd, the optimizers' Apply ops) must run where the variable lives.
// Ops that only read the value may run elsewhere: they receive a copy.
//
// Solved by union-find over node ids. Invariant: after construction, two
// nodes have the same GroupOf() exactly when a chain of ref edges joins them.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace dflow {

class ColocationGroups {
 public:
  explicit ColocationGroups(const Graph& graph);

  // A representative node id for the group of `node`.
  int GroupOf(const Node& node) const { return Find(node.id()); }
  // The group's members in creation order.
  const std::vector<Node*>& Members(int group) const { return members_.at(group); }
  // "[w, w/init, train/w/apply]" — for error messages and reasons.
  std::string Describe(int group) const;

 private:
  int Find(int id) const;
  void Union(int a, int b);

  mutable std::vector<int> parent_;
  std::vector<std::vector<Node*>> members_;  // by representative id
};

}  // namespace dflow
