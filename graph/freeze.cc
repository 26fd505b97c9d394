// FreezeGraph (graph/freeze.h): copy what the outputs need, variables as Consts.
#include "graph/freeze.h"

namespace dflow {
namespace {

// Nodes reachable backwards from `outputs` over data and control edges.
std::vector<char> NeededNodes(const Graph& graph, const std::vector<std::string>& outputs) {
  std::vector<char> needed(graph.id_bound(), 0);
  std::vector<Node*> stack;
  for (const std::string& name : outputs) {
    NodeOut out = graph.ParseOutput(name);
    stack.push_back(out.node);
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    if (needed[node->id()]) continue;
    needed[node->id()] = 1;
    for (int i = 0; i < node->num_inputs(); ++i) {
      if (node->IsRefInput(i))
        Fail(Code::kInvalidArgument, "cannot freeze: an output needs ", node->Describe(),
             ", which writes variable '", node->input(i).node->name(),
             "'; a frozen graph has no variables (fetch a value computed before the update)");
      stack.push_back(node->input(i).node);
    }
    for (Node* control : node->control_inputs()) stack.push_back(control);
  }
  return needed;
}

}  // namespace

std::shared_ptr<Graph> FreezeGraph(Session& session, const std::vector<std::string>& outputs) {
  const Graph& graph = session.graph();
  std::vector<char> needed = NeededNodes(graph, outputs);
  std::vector<Node*> order = graph.TopologicalOrder();

  std::vector<TensorName> variables;
  for (Node* node : order)
    if (needed[node->id()] && node->def().is_variable) variables.emplace_back(node->name());
  std::vector<Tensor> values = variables.empty() ? std::vector<Tensor>{} : session.Run(variables);

  auto frozen = std::make_shared<Graph>();
  frozen->set_seed(graph.seed());
  for (const auto& [key, value] : graph.metadata()) frozen->set_metadata(key, value);
  std::vector<Node*> copy_of(graph.id_bound(), nullptr);
  size_t next_value = 0;
  for (Node* node : order) {
    if (!needed[node->id()]) continue;
    NodeSpec spec{.name = node->name(), .op = node->op(), .attrs = node->attrs(),
                  .device = node->requested_device()};
    if (node->def().is_variable) {
      // A copy: the session may later update the variable's buffer in place.
      Tensor value = values[next_value++].Clone();
      spec.op = "Const";
      spec.attrs = {{"value", value}, {"dtype", value.dtype()}};
    }
    for (const NodeOut& in : node->inputs())
      spec.inputs.push_back({copy_of[in.node->id()], in.index});
    for (Node* control : node->control_inputs())
      spec.control_inputs.push_back(copy_of[control->id()]);
    copy_of[node->id()] = frozen->AddNode(std::move(spec));
  }
  return frozen;
}

}  // namespace dflow
