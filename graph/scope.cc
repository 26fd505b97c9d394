#include "graph/scope.h"

namespace dflow {

Input::Input(std::initializer_list<int> v) {
  std::vector<int32_t> values(v.begin(), v.end());
  literal_ = Tensor::FromVector(values);
}

Output Input::ToOutput(const Scope& scope, DType like) const {
  if (!is_literal()) {
    if (!output_.node()) Fail(Code::kInvalidArgument, "builder input is an empty Output");
    return output_;
  }
  Tensor value = literal_;
  bool numeric = value.dtype() != DType::kBool;
  if (like != DType::kInvalid && like != DType::kBool && numeric && like != value.dtype())
    value = value.CastTo(like);
  AttrMap attrs{{"value", value}, {"dtype", value.dtype()}};
  return scope.AddOp("Const", {}, std::move(attrs));
}

Scope Scope::NewRootScope() { return ForGraph(std::make_shared<Graph>()); }

Scope Scope::ForGraph(std::shared_ptr<Graph> graph) {
  Scope s;
  s.graph_ = std::move(graph);
  return s;
}

Scope Scope::WithOpName(std::string name) const {
  Scope s = *this;
  s.op_name_ = std::move(name);
  return s;
}

Scope Scope::NewSubScope(std::string name) const {
  Scope s = *this;
  s.op_name_.clear();
  if (!name.empty()) s.prefix_ = graph_->UniqueName(prefix_ + name) + "/";
  return s;
}

Scope Scope::WithDevice(std::string device) const {
  Scope s = *this;
  s.device_ = std::move(device);
  return s;
}

Scope Scope::WithControlDependencies(std::vector<Output> deps) const {
  Scope s = *this;
  for (const Output& dep : deps) s.control_deps_.push_back(dep.node());
  return s;
}

std::string Scope::NodeName(std::string_view op) const {
  if (!op_name_.empty()) return prefix_ + op_name_;
  return graph_->UniqueName(prefix_ + std::string(op));
}

Node* Scope::AddOp(std::string_view op, const std::vector<Input>& inputs, AttrMap attrs) const {
  // Literals take the dtype of the first real input, so Mul(x64, 2.0) works.
  DType like = DType::kInvalid;
  for (const Input& in : inputs)
    if (!in.is_literal()) {
      like = in.ToOutput(*this).dtype();
      break;
    }
  NodeSpec spec;
  spec.op = std::string(op);
  Scope literal_scope = NewSubScope("").WithOpName("");
  for (const Input& in : inputs) spec.inputs.push_back(in.ToOutput(literal_scope, like));
  spec.name = NodeName(op);
  spec.control_inputs = control_deps_;
  spec.attrs = std::move(attrs);
  spec.device = device_;
  return graph_->AddNode(std::move(spec));
}

}  // namespace dflow
