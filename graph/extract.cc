// Pruning and rewriting a graph for one Run signature (see passes.h).
#include <map>

#include "graph/passes.h"

namespace dflow {

namespace {

std::string Sanitize(std::string name) {
  for (char& c : name)
    if (c == ':' || c == '/') c = '_';
  return name;
}

// A fed Placeholder never runs: its control edges come from its _Arg instead
// (as in TensorFlow), so feeding a placeholder that guards an update works.
bool IsFedPlaceholder(const Node* node, const std::set<std::pair<int, int>>& fed) {
  return node->op() == "Placeholder" && fed.count({node->id(), 0});
}

// Nodes reachable backwards from fetches and targets, not crossing fed outputs.
std::vector<char> NeededNodes(const Graph& graph, const std::set<std::pair<int, int>>& fed,
                              const std::vector<NodeOut>& fetches, const std::vector<Node*>& targets) {
  std::vector<char> needed(graph.id_bound(), 0);
  std::vector<Node*> stack(targets.begin(), targets.end());
  for (const NodeOut& fetch : fetches)
    if (!fed.count({fetch.node->id(), fetch.index})) stack.push_back(fetch.node);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (needed[node->id()]) continue;
    needed[node->id()] = 1;
    for (const NodeOut& in : node->inputs())
      if (!fed.count({in.node->id(), in.index})) stack.push_back(in.node);
    for (Node* control : node->control_inputs())
      if (!IsFedPlaceholder(control, fed)) stack.push_back(control);
  }
  return needed;
}

}  // namespace

bool IsSink(const Node& node, const std::set<std::string>& targets) {
  return node.op() == "_Arg" || node.op() == "_Retval" || targets.count(node.name()) != 0;
}

std::unique_ptr<Graph> ExtractForExecution(const Graph& graph, const std::vector<NodeOut>& feeds,
                                           const std::vector<NodeOut>& fetches,
                                           const std::vector<Node*>& targets) {
  auto out = std::make_unique<Graph>();
  out->set_seed(graph.seed());
  std::map<std::pair<int, int>, NodeOut> fed_copy;  // original output -> its _Arg
  std::set<std::pair<int, int>> fed;
  for (size_t i = 0; i < feeds.size(); ++i) {
    const NodeOut& feed = feeds[i];
    if (!fed.insert({feed.node->id(), feed.index}).second)
      Fail(Code::kInvalidArgument, "tensor '", feed.name(), "' is fed twice");
    NodeSpec arg{.name = StrCat("_arg_", Sanitize(feed.name()), "_", i), .op = "_Arg"};
    arg.attrs = {{"index", static_cast<int64_t>(i)},
                 {"T", feed.node->output_dtype(feed.index)},
                 {"shape", feed.node->output_shape(feed.index)}};
    fed_copy[{feed.node->id(), feed.index}] = {out->AddNode(std::move(arg)), 0};
  }

  std::vector<char> needed = NeededNodes(graph, fed, fetches, targets);
  std::vector<Node*> copy_of(graph.id_bound(), nullptr);
  for (Node* node : graph.TopologicalOrder()) {
    if (!needed[node->id()]) continue;
    NodeSpec spec{.name = node->name(), .op = node->op(), .attrs = node->attrs(),
                  .device = node->requested_device()};
    for (const NodeOut& in : node->inputs()) {
      auto it = fed_copy.find({in.node->id(), in.index});
      spec.inputs.push_back(it != fed_copy.end() ? it->second : NodeOut{copy_of[in.node->id()], in.index});
    }
    for (Node* control : node->control_inputs())
      spec.control_inputs.push_back(IsFedPlaceholder(control, fed)
                                        ? fed_copy[{control->id(), 0}].node
                                        : copy_of[control->id()]);
    copy_of[node->id()] = out->AddNode(std::move(spec));
  }

  for (size_t i = 0; i < fetches.size(); ++i) {
    const NodeOut& fetch = fetches[i];
    auto it = fed_copy.find({fetch.node->id(), fetch.index});
    NodeOut source = it != fed_copy.end() ? it->second : NodeOut{copy_of[fetch.node->id()], fetch.index};
    NodeSpec ret{.name = StrCat("_retval_", Sanitize(fetch.name()), "_", i), .op = "_Retval",
                 .inputs = {source}, .attrs = {{"index", static_cast<int64_t>(i)}}};
    out->AddNode(std::move(ret));
  }
  return out;
}

int PruneDeadNodes(Graph& graph, const std::set<std::string>& targets) {
  std::vector<char> live(graph.id_bound(), 0);
  std::vector<Node*> stack;
  for (Node* node : graph.nodes())
    if (IsSink(*node, targets)) stack.push_back(node);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (live[node->id()]) continue;
    live[node->id()] = 1;
    for (const NodeOut& in : node->inputs()) stack.push_back(in.node);
    for (Node* control : node->control_inputs()) stack.push_back(control);
  }
  int removed = 0;
  for (Node* node : graph.nodes())
    if (!live[node->id()]) {
      graph.RemoveNode(node);
      ++removed;
    }
  return removed;
}

}  // namespace dflow
