// Constant folding: evaluate, once, the parts of a graph whose value does not
// depend on feeds or state, and put Const nodes in their place. Evaluation
// uses the ordinary Executor, so folded values are exactly what a run would
// compute.
#include "graph/executor.h"
#include "graph/passes.h"

namespace dflow {
namespace {

enum Foldability : char { kNo = 0, kConst, kComputable, kKnownValue };

// Folded tensors are stored in the graph; skip ones bigger than this.
constexpr size_t kMaxFoldedBytes = 10 << 20;

std::vector<char> Classify(const Graph& graph, const std::vector<Node*>& order,
                           const std::string& device_type) {
  std::vector<char> kind(graph.id_bound(), kNo);
  for (Node* node : order) {
    if (node->op() == "Const") {
      kind[node->id()] = kConst;
      continue;
    }
    if (node->def().is_stateful || !node->control_inputs().empty()) continue;
    if (node->num_outputs() == 1 && KnownValue({node, 0})) {
      kind[node->id()] = kKnownValue;
      continue;
    }
    if (node->num_inputs() == 0 || !KernelRegistry::Global().Has(node->op(), device_type)) continue;
    bool all_constant = true;
    for (const NodeOut& in : node->inputs()) all_constant &= kind[in.node->id()] != kNo;
    if (all_constant) kind[node->id()] = kComputable;
  }
  return kind;
}

Node* AddConst(Graph& graph, const std::string& base, const Tensor& value, const std::string& device) {
  NodeSpec spec{.name = graph.UniqueName(base), .op = "Const",
                .attrs = {{"value", value}, {"dtype", value.dtype()}}, .device = device};
  return graph.AddNode(std::move(spec));
}

// Evaluates `outputs` (all of computable nodes) in a scratch graph.
std::vector<Tensor> Evaluate(const std::vector<NodeOut>& outputs, const std::vector<Node*>& order,
                             const std::vector<char>& kind, Device& device) {
  auto scratch = std::make_unique<Graph>();
  std::vector<Node*> copy_of(kind.size(), nullptr);
  std::vector<char> needed(kind.size(), 0);
  std::vector<Node*> stack;
  for (const NodeOut& out : outputs) stack.push_back(out.node);
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (needed[node->id()]) continue;
    needed[node->id()] = 1;
    if (kind[node->id()] == kComputable)
      for (const NodeOut& in : node->inputs()) stack.push_back(in.node);
  }
  for (Node* node : order) {
    if (!needed[node->id()]) continue;
    if (kind[node->id()] == kKnownValue) {
      copy_of[node->id()] = AddConst(*scratch, node->name(), *KnownValue({node, 0}), "");
      continue;
    }
    NodeSpec spec{.name = node->name(), .op = node->op(), .attrs = node->attrs()};
    for (const NodeOut& in : node->inputs()) spec.inputs.push_back({copy_of[in.node->id()], in.index});
    copy_of[node->id()] = scratch->AddNode(std::move(spec));
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    scratch->AddNode({.name = StrCat("_retval_", i), .op = "_Retval",
                      .inputs = {{copy_of[outputs[i].node->id()], outputs[i].index}},
                      .attrs = {{"index", static_cast<int64_t>(i)}}});
  ResourceStore scratch_resources;
  Executor executor(std::move(scratch), &device, &scratch_resources);
  return executor.Run({});
}

}  // namespace

int FoldConstants(Graph& graph, Device& device) {
  std::vector<Node*> order = graph.TopologicalOrder();
  std::vector<char> kind = Classify(graph, order, device.type());
  auto consumers = graph.Consumers();

  // Fold at the frontier: foldable outputs read by a node that is not.
  std::vector<NodeOut> frontier;
  std::vector<std::vector<Graph::Consumer>> frontier_uses;
  for (Node* node : order) {
    if (kind[node->id()] != kComputable && kind[node->id()] != kKnownValue) continue;
    for (int o = 0; o < node->num_outputs(); ++o) {
      std::vector<Graph::Consumer> uses;
      for (const auto& c : consumers[node->id()])
        if (c.input >= 0 && c.node->input(c.input).index == o && kind[c.node->id()] == kNo)
          uses.push_back(c);
      if (uses.empty()) continue;
      frontier.push_back({node, o});
      frontier_uses.push_back(std::move(uses));
    }
  }
  if (frontier.empty()) return 0;

  std::vector<NodeOut> to_evaluate;
  for (const NodeOut& out : frontier)
    if (kind[out.node->id()] == kComputable) to_evaluate.push_back(out);
  std::vector<Tensor> values = to_evaluate.empty() ? std::vector<Tensor>{}
                                                   : Evaluate(to_evaluate, order, kind, device);
  int folded = 0;
  for (size_t i = 0, next_value = 0; i < frontier.size(); ++i) {
    const NodeOut& out = frontier[i];
    Tensor value = kind[out.node->id()] == kKnownValue ? *KnownValue(out) : values[next_value++];
    if (value.TotalBytes() > kMaxFoldedBytes) continue;
    std::string base = out.node->name() + "/folded" + (out.index ? StrCat("_", out.index) : "");
    Node* constant = AddConst(graph, base, value, out.node->requested_device());
    for (const auto& use : frontier_uses[i]) graph.UpdateInput(use.node, use.input, {constant, 0});
    ++folded;
  }
  return folded;
}

}  // namespace dflow
