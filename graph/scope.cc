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
  if (!name.empty()) s.prefix_ = graph_->UniqueScopeName(prefix_ + name) + "/";
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

namespace {

// The arg each flattened input belongs to; a list arg takes what the fixed
// args leave over.
std::vector<const ArgDef*> ArgOfEachInput(const OpDef& def, size_t num_inputs) {
  size_t fixed = 0;
  for (const ArgDef& arg : def.inputs) fixed += arg.number_attr.empty();
  size_t list_length = num_inputs > fixed ? num_inputs - fixed : 0;
  std::vector<const ArgDef*> arg_of;
  for (const ArgDef& arg : def.inputs)
    arg_of.insert(arg_of.end(), arg.number_attr.empty() ? 1 : list_length, &arg);
  arg_of.resize(num_inputs, nullptr);  // too many inputs: AddNode reports it
  return arg_of;
}

// The dtype a literal should have: its arg's fixed dtype, or the dtype its
// type attr gets from the attrs or from the non-literal inputs.
DType LiteralDType(const ArgDef* arg, const std::vector<const ArgDef*>& arg_of,
                   const std::vector<Output>& resolved, const AttrMap& attrs) {
  if (!arg) return DType::kInvalid;
  if (arg->fixed_type != DType::kInvalid) return arg->fixed_type;
  auto it = attrs.find(arg->type_attr);
  if (it != attrs.end() && std::holds_alternative<DType>(it->second)) return std::get<DType>(it->second);
  for (size_t j = 0; j < resolved.size(); ++j)
    if (resolved[j].node() && arg_of[j] && arg_of[j]->fixed_type == DType::kInvalid &&
        arg_of[j]->type_attr == arg->type_attr)
      return resolved[j].dtype();
  return DType::kInvalid;
}

}  // namespace

Node* Scope::AddOp(std::string_view op, const std::vector<Input>& inputs, AttrMap attrs) const {
  // Literals take the dtype their arg needs, so Mul(x64, 2.0) multiplies by
  // a float64 2 while Sum(x, {0, 1}) keeps an integer axis.
  std::vector<Output> resolved(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].is_literal()) resolved[i] = inputs[i].ToOutput(*this);
  const OpDef* def = OpRegistry::Global().Find(op);
  std::vector<const ArgDef*> arg_of =
      def ? ArgOfEachInput(*def, inputs.size()) : std::vector<const ArgDef*>(inputs.size(), nullptr);
  NodeSpec spec;
  spec.op = std::string(op);
  spec.name = NodeName(op);
  Scope literal_scope = NewSubScope(spec.name.substr(prefix_.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is_literal()) continue;
    DType like = LiteralDType(arg_of[i], arg_of, resolved, attrs);
    resolved[i] = inputs[i].ToOutput(literal_scope.WithOpName(StrCat("input_", i)), like);
  }
  spec.inputs.assign(resolved.begin(), resolved.end());
  spec.control_inputs = control_deps_;
  spec.attrs = std::move(attrs);
  spec.device = device_;
  return graph_->AddNode(std::move(spec));
}

}  // namespace dflow
