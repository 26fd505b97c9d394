#include "graph/graph.h"

#include <algorithm>
#include <charconv>
#include <unordered_set>

namespace dflow {

std::string NodeOut::name() const {
  std::string s = node->name();
  if (index != 0) s.append(":").append(std::to_string(index));
  return s;
}

DType Node::input_dtype(int i) const {
  const NodeOut& in = inputs_.at(i);
  return in.node->output_dtype(in.index);
}

const Shape& Node::input_shape(int i) const {
  const NodeOut& in = inputs_.at(i);
  return in.node->output_shape(in.index);
}

namespace {
int ArgCount(const ArgDef& arg, const AttrMap& attrs);
}  // namespace

std::pair<int, int> Node::InputRange(std::string_view arg_name) const {
  int first = 0;
  for (const ArgDef& arg : def_->inputs) {
    int count = ArgCount(arg, attrs_);
    if (arg.name == arg_name) return {first, first + count};
    first += count;
  }
  Fail(Code::kNotFound, Describe(), " has no input arg '", arg_name, "'");
}

bool Node::IsRefInput(int i) const {
  int first = 0;
  for (const ArgDef& arg : def_->inputs) {
    int count = ArgCount(arg, attrs_);
    if (i < first + count) return arg.is_ref;
    first += count;
  }
  return false;
}

namespace {

// Number of tensors an arg stands for: 1, or the value of its number attr.
int ArgCount(const ArgDef& arg, const AttrMap& attrs) {
  if (arg.number_attr.empty()) return 1;
  auto it = attrs.find(arg.number_attr);
  return it == attrs.end() ? 0 : static_cast<int>(std::get<int64_t>(it->second));
}

bool IsValidNodeName(std::string_view name) {
  if (name.empty()) return false;
  auto ok = [](char c, bool first) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
        c == '_')  // a leading '_' marks dflow's internal nodes
      return true;
    return !first && (c == '_' || c == '-' || c == '/');
  };
  if (!ok(name[0], true)) return false;
  for (char c : name.substr(1))
    if (!ok(c, false)) return false;
  return true;
}

// Sets N for the (at most one) list input from the number of inputs given.
void InferListLength(const OpDef& def, const NodeSpec& spec, AttrMap& attrs) {
  int fixed = 0;
  const ArgDef* list = nullptr;
  for (const ArgDef& arg : def.inputs) {
    if (arg.number_attr.empty()) ++fixed;
    else list = &arg;
  }
  int given = static_cast<int>(spec.inputs.size());
  if (!list) {
    if (given != fixed)
      Fail(Code::kInvalidArgument, "expects ", fixed, " input", fixed == 1 ? "" : "s", " (",
           def.Signature(), "), got ", given);
    return;
  }
  int64_t n = given - fixed;
  auto it = attrs.find(list->number_attr);
  if (it != attrs.end() && std::get_if<int64_t>(&it->second) &&
      std::get<int64_t>(it->second) != n)
    Fail(Code::kInvalidArgument, "attr ", list->number_attr, "=", std::get<int64_t>(it->second),
         " but ", n, " tensors were given for '", list->name, "'");
  if (n < 1) Fail(Code::kInvalidArgument, "list input '", list->name, "' needs at least one tensor");
  attrs[list->number_attr] = n;
}

// Sets each type attr from the inputs that use it, and checks agreement.
void InferTypeAttrs(const OpDef& def, const NodeSpec& spec, AttrMap& attrs) {
  std::map<std::string, std::string, std::less<>> set_by;  // type attr -> which input set it
  int index = 0;
  for (const ArgDef& arg : def.inputs) {
    int count = ArgCount(arg, attrs);
    for (int k = 0; k < count; ++k, ++index) {
      const NodeOut& in = spec.inputs[index];
      DType actual = in.node->output_dtype(in.index);
      std::string where = StrCat("input '", arg.name, "'", count > 1 ? StrCat("[", k, "]") : "",
                                 " (", in.name(), ")");
      if (arg.fixed_type != DType::kInvalid) {
        if (actual != arg.fixed_type)
          Fail(Code::kInvalidArgument, where, " must be ", DTypeName(arg.fixed_type), ", got ",
               DTypeName(actual));
        continue;
      }
      auto it = attrs.find(arg.type_attr);
      if (it == attrs.end()) {
        attrs[arg.type_attr] = actual;
        set_by[arg.type_attr] = where;
      } else if (!std::holds_alternative<DType>(it->second)) {
        Fail(Code::kInvalidArgument, "attr '", arg.type_attr, "' must be dtype, got ",
             AttrTypeName(TypeOf(it->second)), " ", AttrToString(it->second));
      } else if (std::get<DType>(it->second) != actual) {
        std::string source = set_by.count(arg.type_attr) ? "from " + set_by[arg.type_attr] : "as given";
        Fail(Code::kInvalidArgument, where, " is ", DTypeName(actual), " but ", arg.type_attr,
             " is ", DTypeName(std::get<DType>(it->second)), " (", source, ")");
      }
    }
  }
}

// Fills defaults, rejects unknown/missing/mistyped attrs and disallowed dtypes.
void CheckAttrs(const OpDef& def, AttrMap& attrs) {
  for (const auto& [name, value] : attrs)
    if (!def.FindAttr(name))
      Fail(Code::kInvalidArgument, "unknown attr '", name, "' for op ", def.name);
  for (const AttrDef& attr : def.attrs) {
    auto it = attrs.find(attr.name);
    if (it == attrs.end()) {
      if (!attr.default_value)
        Fail(Code::kInvalidArgument, "missing required attr '", attr.name, "' (",
             AttrTypeName(attr.type), ")");
      it = attrs.emplace(attr.name, *attr.default_value).first;
    }
    if (TypeOf(it->second) != attr.type)
      Fail(Code::kInvalidArgument, "attr '", attr.name, "' must be ", AttrTypeName(attr.type),
           ", got ", AttrTypeName(TypeOf(it->second)), " ", AttrToString(it->second));
    if (attr.type == AttrType::kDType && !attr.allowed_types.empty()) {
      DType dtype = std::get<DType>(it->second);
      if (std::find(attr.allowed_types.begin(), attr.allowed_types.end(), dtype) ==
          attr.allowed_types.end()) {
        std::string allowed;
        for (DType t : attr.allowed_types) allowed += StrCat(allowed.empty() ? "" : ", ", DTypeName(t));
        Fail(Code::kInvalidArgument, "attr ", attr.name, "=", DTypeName(dtype),
             " is not allowed (allowed: ", allowed, ")");
      }
    }
  }
}

std::vector<DType> OutputDTypes(const OpDef& def, const AttrMap& attrs) {
  std::vector<DType> dtypes;
  for (const ArgDef& arg : def.outputs) {
    DType dtype = arg.fixed_type != DType::kInvalid ? arg.fixed_type
                                                    : std::get<DType>(attrs.at(arg.type_attr));
    int count = ArgCount(arg, attrs);
    if (count < 0) Fail(Code::kInvalidArgument, "attr ", arg.number_attr, " must be >= 0");
    dtypes.insert(dtypes.end(), count, dtype);
  }
  return dtypes;
}

void CheckRefInputs(const OpDef& def, const NodeSpec& spec, const AttrMap& attrs) {
  int index = 0;
  for (const ArgDef& arg : def.inputs) {
    int count = ArgCount(arg, attrs);
    if (arg.is_ref && !spec.inputs[index].node->def().is_variable)
      Fail(Code::kInvalidArgument, "input '", arg.name, "' must be a variable, got ",
           spec.inputs[index].node->Describe());
    index += count;
  }
}

// An output too large to address is rejected when the graph is built, with
// the node's name, rather than when a kernel's arithmetic wraps around.
void CheckOutputSizes(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes) {
  for (size_t i = 0; i < shapes.size(); ++i) {
    try {
      CheckShapeSize(shapes[i], static_cast<int64_t>(DTypeSize(dtypes[i])));
    } catch (const Error& e) {
      throw Error(e.code(), StrCat("output ", i, ": ", e.message()));
    }
  }
}

}  // namespace

std::optional<Tensor> KnownValue(const NodeOut& out) {
  const OpDef& def = out.node->def();
  if (out.index != 0 || !def.value_fn) return std::nullopt;
  return def.value_fn(*out.node);
}

std::vector<Shape> InferOutputShapes(const OpDef& def, const AttrMap& attrs,
                                     const std::vector<NodeOut>& inputs, int num_outputs) {
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  std::vector<std::optional<Tensor>> values;
  for (const NodeOut& in : inputs) {
    dtypes.push_back(in.node->output_dtype(in.index));
    shapes.push_back(in.node->output_shape(in.index));
    values.push_back(KnownValue(in));
  }
  InferenceContext ctx(def, attrs, std::move(dtypes), std::move(shapes), std::move(values),
                       num_outputs);
  if (def.shape_fn) def.shape_fn(ctx);
  return ctx.output_shapes();
}

Node* Graph::AddNode(NodeSpec spec) {
  const OpDef* def = OpRegistry::Global().Find(spec.op);
  std::string who = StrCat(spec.op, " '", spec.name, "'");
  if (!def)
    Fail(Code::kNotFound, who, ": unknown op '", spec.op,
         "' (`dflow ops` lists the registered ops)");
  if (!IsValidNodeName(spec.name))
    Fail(Code::kInvalidArgument, who, ": invalid node name (use letters, digits, '.', '_', and "
         "after the first character also '-' and '/')");
  if (by_name_.count(spec.name))
    Fail(Code::kAlreadyExists, who, ": a node named '", spec.name, "' already exists");
  for (const NodeOut& in : spec.inputs)
    if (!in.node || in.index < 0 || in.index >= in.node->num_outputs())
      Fail(Code::kInvalidArgument, who, ": input ",
           in.node ? StrCat(in.node->name(), ":", in.index) : std::string("<null>"),
           " does not exist");
  for (Node* control : spec.control_inputs)
    if (!control) Fail(Code::kInvalidArgument, who, ": null control input");

  auto node = std::make_unique<Node>();
  try {
    AttrMap attrs = std::move(spec.attrs);
    InferListLength(*def, spec, attrs);
    InferTypeAttrs(*def, spec, attrs);
    CheckAttrs(*def, attrs);
    CheckRefInputs(*def, spec, attrs);
    node->output_dtypes_ = OutputDTypes(*def, attrs);
    node->output_shapes_ = InferOutputShapes(*def, attrs, spec.inputs, node->num_outputs());
    CheckOutputSizes(node->output_dtypes_, node->output_shapes_);
    node->attrs_ = std::move(attrs);
  } catch (const Error& e) {
    throw Error(e.code(), who + ": " + e.message());
  }
  node->id_ = static_cast<int>(nodes_.size());
  node->name_ = std::move(spec.name);
  node->def_ = def;
  node->inputs_ = std::move(spec.inputs);
  node->control_inputs_ = std::move(spec.control_inputs);
  node->requested_device_ = std::move(spec.device);
  Node* raw = node.get();
  by_name_[raw->name_] = raw;
  nodes_.push_back(std::move(node));
  ++num_live_;
  return raw;
}

void Graph::RemoveNode(Node* node) {
  by_name_.erase(node->name());
  nodes_.at(node->id()).reset();
  --num_live_;
}

void Graph::RenameNode(Node* node, std::string name) {
  if (name == node->name()) return;
  if (!IsValidNodeName(name))
    Fail(Code::kInvalidArgument, node->Describe(), ": cannot rename to invalid name '", name, "'");
  if (by_name_.count(name))
    Fail(Code::kAlreadyExists, node->Describe(), ": cannot rename to '", name,
         "', a node of that name exists");
  by_name_.erase(node->name_);
  node->name_ = std::move(name);
  by_name_[node->name_] = node;
}

void Graph::UpdateInput(Node* node, int i, NodeOut source) {
  if (source.node->output_dtype(source.index) != node->input_dtype(i))
    Fail(Code::kInternal, node->Describe(), ": rewiring input ", i, " to ", source.name(),
         " changes its dtype");
  node->inputs_.at(i) = source;
}

void Graph::AddControlInput(Node* node, Node* source) {
  auto& controls = node->control_inputs_;
  if (std::find(controls.begin(), controls.end(), source) == controls.end())
    controls.push_back(source);
}

void Graph::ReplaceUses(Node* old_node, Node* replacement, const std::vector<Consumer>& consumers) {
  for (const Consumer& c : consumers) {
    if (c.input >= 0) {
      UpdateInput(c.node, c.input, {replacement, c.node->input(c.input).index});
    } else {
      auto& controls = c.node->control_inputs_;
      controls.erase(std::remove(controls.begin(), controls.end(), old_node), controls.end());
      AddControlInput(c.node, replacement);
    }
  }
}

Node* Graph::FindNode(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

Node& Graph::GetNode(std::string_view name) const {
  Node* node = FindNode(name);
  if (!node) Fail(Code::kNotFound, "no node named '", name, "' in the graph");
  return *node;
}

NodeOut Graph::ParseOutput(std::string_view tensor_name) const {
  if (!tensor_name.empty() && tensor_name[0] == '^')
    return {&GetNode(tensor_name.substr(1)), -1};
  size_t colon = tensor_name.rfind(':');
  int index = 0;
  std::string_view node_name = tensor_name;
  if (colon != std::string_view::npos) {
    std::string_view digits = tensor_name.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || index < 0)
      Fail(Code::kInvalidArgument, "malformed tensor name '", tensor_name,
           "' (expected 'node' or 'node:index')");
    node_name = tensor_name.substr(0, colon);
  }
  Node& node = GetNode(node_name);
  if (index >= node.num_outputs())
    Fail(Code::kInvalidArgument, "tensor '", tensor_name, "': ", node.Describe(), " has only ",
         node.num_outputs(), " output(s)");
  return {&node, index};
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> live;
  live.reserve(num_live_);
  for (const auto& node : nodes_)
    if (node) live.push_back(node.get());
  return live;
}

std::vector<std::vector<Graph::Consumer>> Graph::Consumers() const {
  std::vector<std::vector<Consumer>> consumers(nodes_.size());
  for (const auto& node : nodes_) {
    if (!node) continue;
    for (int i = 0; i < node->num_inputs(); ++i)
      consumers[node->input(i).node->id()].push_back({node.get(), i});
    for (Node* control : node->control_inputs())
      consumers[control->id()].push_back({node.get(), -1});
  }
  return consumers;
}

std::vector<Node*> Graph::TopologicalOrder() const {
  // Kahn's algorithm over data and control edges.
  auto consumers = Consumers();
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<Node*> ready, order;
  for (Node* node : nodes()) {
    pending[node->id()] = node->num_inputs() + static_cast<int>(node->control_inputs().size());
    if (pending[node->id()] == 0) ready.push_back(node);
  }
  while (!ready.empty()) {
    Node* node = ready.back();
    ready.pop_back();
    order.push_back(node);
    for (const Consumer& c : consumers[node->id()])
      if (--pending[c.node->id()] == 0) ready.push_back(c.node);
  }
  if (static_cast<int>(order.size()) != num_live_) {
    std::string stuck;
    int shown = 0;
    for (Node* node : nodes())
      if (pending[node->id()] > 0 && shown++ < 8) stuck += (stuck.empty() ? "'" : ", '") + node->name() + "'";
    Fail(Code::kInvalidArgument, "the graph has a cycle through ", stuck);
  }
  return order;
}

void Graph::Validate() const {
  // Compares pointers only: a removed node has been freed, so reading its
  // name would be a use after free.
  std::unordered_set<const Node*> live;
  for (Node* node : nodes()) live.insert(node);
  for (Node* node : nodes()) {
    for (int i = 0; i < node->num_inputs(); ++i)
      if (!live.count(node->input(i).node))
        Fail(Code::kInternal, node->Describe(), ": input ", i, " refers to a removed node");
    for (Node* control : node->control_inputs())
      if (!live.count(control))
        Fail(Code::kInternal, node->Describe(), ": a control input refers to a removed node");
  }
  TopologicalOrder();
}

std::string Graph::UniqueName(std::string_view base) const {
  std::string name(base);
  for (int i = 1; by_name_.count(name); ++i) name = StrCat(base, "_", i);
  return name;
}

std::string Graph::UniqueScopeName(std::string_view base) {
  std::string name(base);
  for (int i = 1; by_name_.count(name) || scope_names_.count(name); ++i) name = StrCat(base, "_", i);
  scope_names_.insert(name);
  return name;
}

}  // namespace dflow
