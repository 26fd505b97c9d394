// The gradient registry and AddGradients, the backward-pass builder.
//
// AddGradients walks the forward graph once, in reverse topological order,
// over the nodes that lie on a path from some x to some y. Each node's
// output gradients are the sum (AddN) of what its consumers sent back
// (fan-out); its rule turns them into input gradients, which are sent on to
// the producers. Because consumers come after producers in topological
// order, a node's gradients are complete by the time it is visited.
#include "autodiff/gradients.h"

#include <algorithm>
#include <deque>

#include "ops/array.h"
#include "ops/math.h"
#include "ops/reduce.h"

namespace dflow::autodiff {

GradientRegistry& GradientRegistry::Global() {
  static auto* registry = new GradientRegistry;  // never destroyed: used by static registrars
  return *registry;
}

void GradientRegistry::Register(const std::string& op, GradientFn fn) {
  if (!rules_.emplace(op, fn).second)
    Fail(Code::kAlreadyExists, "a gradient for op '", op, "' is declared twice");
}

void GradientRegistry::RegisterNoGradient(const std::string& op) { Register(op, nullptr); }

GradientFn GradientRegistry::Find(const std::string& op) const {
  auto it = rules_.find(op);
  return it == rules_.end() ? nullptr : it->second;
}

bool IsDifferentiable(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16;
}

namespace {

using OutputKey = std::pair<int, int>;  // (node id, output index)

OutputKey KeyOf(const Output& out) { return {out.node()->id(), out.index()}; }

// The nodes reachable from `starts` by repeatedly following `next`.
template <typename Next>
std::vector<bool> Closure(const Graph& graph, const std::vector<Output>& starts, Next next) {
  std::vector<bool> seen(graph.id_bound(), false);
  std::deque<Node*> queue;
  for (const Output& out : starts) queue.push_back(out.node());
  while (!queue.empty()) {
    Node* node = queue.front();
    queue.pop_front();
    if (seen[node->id()]) continue;
    seen[node->id()] = true;
    next(node, queue);
  }
  return seen;
}

// Nodes from which some y can be reached along data edges.
std::vector<bool> ReachesAny(const Graph& graph, const std::vector<Output>& ys) {
  return Closure(graph, ys, [](Node* node, std::deque<Node*>& queue) {
    for (const NodeOut& in : node->inputs()) queue.push_back(in.node);
  });
}

// Nodes that can be reached from some x along data edges.
std::vector<bool> ReachableFrom(const Graph& graph, const std::vector<Output>& xs) {
  auto consumers = graph.Consumers();
  return Closure(graph, xs, [&](Node* node, std::deque<Node*>& queue) {
    for (const Graph::Consumer& c : consumers[node->id()])
      if (c.input >= 0) queue.push_back(c.node);
  });
}

// Sums the contributions to one output; a single one passes through. The
// sum is named by the scope ("AddN", then "AddN_1", ...), never fixed: a
// node with several outputs (Split) may need one sum per output.
Output SumContributions(const Scope& scope, const std::vector<Output>& parts) {
  if (parts.size() == 1) return parts[0];
  std::vector<Input> inputs(parts.begin(), parts.end());
  return ops::AddN(scope, inputs);
}

// The gradient of an input that the op broadcast, summed back to the
// input's shape (the inverse of numpy broadcasting). Skipped when the
// shapes are known to agree.
Output Unbroadcast(const Scope& scope, const Output& dx, const Output& x) {
  if (x.shape().IsFullyDefined() && dx.shape() == x.shape()) return dx;
  return ops::SumToShape(scope, dx, ops::Shape(scope, x));
}

class GradientBuilder {
 public:
  GradientBuilder(const Scope& scope, const std::vector<Output>& ys, const std::vector<Output>& xs)
      : scope_(scope.NewSubScope("gradients")),
        on_path_(ReachesAny(scope.graph(), ys)),
        from_x_(ReachableFrom(scope.graph(), xs)) {
    for (size_t i = 0; i < on_path_.size(); ++i) on_path_[i] = on_path_[i] && from_x_[i];
  }

  // Starts the backward pass at y with `grad` (ones of y's shape when invalid).
  void Seed(const Output& y, const Output& grad) {
    pending_[KeyOf(y)].push_back(grad.valid() ? grad : ops::OnesLike(scope_, y));
  }

  void Run(const std::vector<Node*>& topological_order) {
    for (auto it = topological_order.rbegin(); it != topological_order.rend(); ++it)
      if (on_path_[(*it)->id()]) Visit(*it);
  }

  // The summed gradient of x, or an invalid Output when none reached it.
  Output GradientOf(const Output& x) const {
    auto it = summed_.find(KeyOf(x));
    return it == summed_.end() ? Output() : it->second;
  }

 private:
  void Visit(Node* node) {
    bool any = false;
    for (int i = 0; i < node->num_outputs(); ++i) any = any || pending_.count({node->id(), i});
    if (!any) return;  // no gradient reached it: add no nodes, reserve no names
    Scope scope = NodeScope(node);
    std::vector<Output> dy(node->num_outputs());
    for (int i = 0; i < node->num_outputs(); ++i) {
      auto it = pending_.find({node->id(), i});
      if (it == pending_.end()) continue;
      dy[i] = SumContributions(scope, it->second);
      summed_[{node->id(), i}] = dy[i];
    }
    if (!HasInputOnPath(node)) return;
    GradientFn rule = RuleFor(node);
    if (!rule) return;  // declared without gradient: the path ends here
    for (int i = 0; i < node->num_outputs(); ++i)
      if (!dy[i].valid() && IsDifferentiable(node->output_dtype(i)))
        dy[i] = ops::ZerosLike(scope, OutputOf(node, i));
    std::vector<Output> dx = rule(scope, node, dy);
    if (static_cast<int>(dx.size()) != node->num_inputs())
      Fail(Code::kInternal, "the gradient of ", node->Describe(), " returned ", dx.size(),
           " gradients for ", node->num_inputs(), " inputs");
    for (int i = 0; i < node->num_inputs(); ++i) SendBack(scope, node, i, dx[i]);
  }

  void SendBack(const Scope& scope, Node* node, int i, Output dx) {
    Output x = InputOf(node, i);
    if (!dx.valid() || !IsDifferentiable(x.dtype()) || !from_x_[x.node()->id()]) return;
    if (node->def().broadcasts) dx = Unbroadcast(scope, dx, x);
    pending_[KeyOf(x)].push_back(dx);
  }

  bool HasInputOnPath(Node* node) const {
    return std::any_of(node->inputs().begin(), node->inputs().end(), [&](const NodeOut& in) {
      return from_x_[in.node->id()] && IsDifferentiable(in.node->output_dtype(in.index));
    });
  }

  static GradientFn RuleFor(Node* node) {
    const GradientRegistry& registry = GradientRegistry::Global();
    if (!registry.IsDeclared(node->op()))
      Fail(Code::kUnimplemented, "no gradient is declared for op ", node->op(), " (node '",
           node->name(), "'): register one with REGISTER_GRADIENT, or REGISTER_NO_GRADIENT "
           "if it has none");
    return registry.Find(node->op());
  }

  // Gradient nodes of `node` are named "gradients/<node>_grad/..." and ask
  // for the forward node's device (TF's colocate_gradients_with_ops).
  Scope NodeScope(Node* node) const {
    Scope s = scope_.NewSubScope(node->name() + "_grad");
    return node->requested_device().empty() ? s : s.WithDevice(node->requested_device());
  }

  Scope scope_;
  std::vector<bool> on_path_;
  std::vector<bool> from_x_;
  std::map<OutputKey, std::vector<Output>> pending_;
  std::map<OutputKey, Output> summed_;
};

// Every tensor must be a valid output of a node of `graph`.
void CheckTensors(const Graph& graph, const std::vector<Output>& tensors, const char* what) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Output& out = tensors[i];
    DFLOW_REQUIRE(out.valid(), "AddGradients: ", what, "[", i, "] is an empty Output");
    DFLOW_REQUIRE(graph.FindNode(out.node()->name()) == out.node(), "AddGradients: ", what, "[",
                  i, "] '", out.name(), "' belongs to another graph than the scope's");
  }
}

void CheckArguments(const Graph& graph, const std::vector<Output>& ys,
                    const std::vector<Output>& xs, const std::vector<Output>& grad_ys) {
  DFLOW_REQUIRE(!ys.empty(), "AddGradients: no ys given");
  DFLOW_REQUIRE(grad_ys.empty() || grad_ys.size() == ys.size(), "AddGradients: ", grad_ys.size(),
                " grad_ys for ", ys.size(), " ys");
  CheckTensors(graph, ys, "ys");
  CheckTensors(graph, xs, "xs");
  CheckTensors(graph, grad_ys, "grad_ys");
  for (size_t i = 0; i < grad_ys.size(); ++i) {
    DFLOW_REQUIRE(grad_ys[i].dtype() == ys[i].dtype(), "AddGradients: grad_ys[", i, "] is ",
                  DTypeName(grad_ys[i].dtype()), " but y '", ys[i].name(), "' is ",
                  DTypeName(ys[i].dtype()));
    DFLOW_REQUIRE(grad_ys[i].shape().IsCompatibleWith(ys[i].shape()), "AddGradients: grad_ys[",
                  i, "] has shape ", grad_ys[i].shape().ToString(), " but y '", ys[i].name(),
                  "' has shape ", ys[i].shape().ToString());
  }
}

}  // namespace

std::vector<Output> AddGradients(const Scope& scope, const std::vector<Output>& ys,
                                 const std::vector<Output>& xs,
                                 const std::vector<Output>& grad_ys) {
  CheckArguments(scope.graph(), ys, xs, grad_ys);
  std::vector<Node*> order = scope.graph().TopologicalOrder();
  GradientBuilder builder(scope, ys, xs);
  for (size_t i = 0; i < ys.size(); ++i)
    if (IsDifferentiable(ys[i].dtype())) builder.Seed(ys[i], grad_ys.empty() ? Output() : grad_ys[i]);
  builder.Run(order);
  std::vector<Output> result;
  for (const Output& x : xs) result.push_back(builder.GradientOf(x));
  return result;
}

}  // namespace dflow::autodiff
