#include "graph/op_def.h"

#include <algorithm>

namespace dflow {

const std::vector<DType>& FloatTypes() {
  static const auto* types = new std::vector<DType>{DType::kFloat32, DType::kFloat64};
  return *types;
}
const std::vector<DType>& NumberTypes() {
  static const auto* types =
      new std::vector<DType>{DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64};
  return *types;
}
const std::vector<DType>& RealTypes() {
  static const auto* types = new std::vector<DType>{DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                                    DType::kInt8,    DType::kUInt8,   DType::kInt32,
                                                    DType::kInt64};
  return *types;
}
const std::vector<DType>& IndexTypes() {
  static const auto* types = new std::vector<DType>{DType::kInt32, DType::kInt64};
  return *types;
}

const AttrDef* OpDef::FindAttr(std::string_view attr_name) const {
  for (const auto& attr : attrs)
    if (attr.name == attr_name) return &attr;
  return nullptr;
}

namespace {

std::string ArgsToString(const std::vector<ArgDef>& args) {
  std::string s;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgDef& arg = args[i];
    if (i) s += ", ";
    s += arg.name + ": ";
    if (arg.is_ref) s += "ref ";
    if (!arg.number_attr.empty()) s += arg.number_attr + " * ";
    s += arg.fixed_type != DType::kInvalid ? std::string(DTypeName(arg.fixed_type)) : arg.type_attr;
  }
  return s;
}

}  // namespace

std::string OpDef::Signature() const {
  return name + "(" + ArgsToString(inputs) + ") -> (" + ArgsToString(outputs) + ")";
}

OpDefBuilder::OpDefBuilder(std::string name) { def_.name = std::move(name); }

OpDefBuilder& OpDefBuilder::input(std::string name, std::string type_attr) {
  def_.inputs.push_back({.name = std::move(name), .type_attr = std::move(type_attr)});
  return *this;
}
OpDefBuilder& OpDefBuilder::input(std::string name, DType fixed_type) {
  def_.inputs.push_back({.name = std::move(name), .fixed_type = fixed_type});
  return *this;
}
OpDefBuilder& OpDefBuilder::input_list(std::string name, std::string type_attr,
                                       std::string number_attr) {
  if (!def_.FindAttr(number_attr)) add_attr(number_attr, AttrType::kInt, std::nullopt);
  def_.inputs.push_back({.name = std::move(name), .type_attr = std::move(type_attr),
                         .number_attr = std::move(number_attr)});
  return *this;
}
OpDefBuilder& OpDefBuilder::ref_input(std::string name, std::string type_attr) {
  def_.inputs.push_back({.name = std::move(name), .type_attr = std::move(type_attr), .is_ref = true});
  return *this;
}
OpDefBuilder& OpDefBuilder::output(std::string name, std::string type_attr) {
  def_.outputs.push_back({.name = std::move(name), .type_attr = std::move(type_attr)});
  return *this;
}
OpDefBuilder& OpDefBuilder::output(std::string name, DType fixed_type) {
  def_.outputs.push_back({.name = std::move(name), .fixed_type = fixed_type});
  return *this;
}
OpDefBuilder& OpDefBuilder::output_list(std::string name, std::string type_attr,
                                        std::string number_attr) {
  if (!def_.FindAttr(number_attr)) add_attr(number_attr, AttrType::kInt, std::nullopt);
  def_.outputs.push_back({.name = std::move(name), .type_attr = std::move(type_attr),
                          .number_attr = std::move(number_attr)});
  return *this;
}

OpDefBuilder& OpDefBuilder::type_attr(std::string name, std::vector<DType> allowed,
                                      std::optional<DType> default_value) {
  std::optional<AttrValue> value;
  if (default_value) value = *default_value;
  add_attr(std::move(name), AttrType::kDType, value);
  def_.attrs.back().allowed_types = std::move(allowed);
  return *this;
}

OpDefBuilder& OpDefBuilder::add_attr(std::string name, AttrType type,
                                     std::optional<AttrValue> default_value) {
  def_.attrs.push_back({.name = std::move(name), .type = type, .default_value = std::move(default_value)});
  return *this;
}

OpDefBuilder& OpDefBuilder::shape_fn(ShapeFn fn) { def_.shape_fn = std::move(fn); return *this; }
OpDefBuilder& OpDefBuilder::value_fn(ValueFn fn) { def_.value_fn = std::move(fn); return *this; }
OpDefBuilder& OpDefBuilder::stateful() { def_.is_stateful = true; return *this; }
OpDefBuilder& OpDefBuilder::variable() { def_.is_variable = def_.is_stateful = true; return *this; }
OpDefBuilder& OpDefBuilder::broadcasting() { def_.broadcasts = true; return *this; }
OpDefBuilder& OpDefBuilder::doc(std::string text) { def_.doc = std::move(text); return *this; }

OpDef OpDefBuilder::Build() && {
  // Every arg's type attr must be declared, so a typo fails at start-up.
  for (const auto* args : {&def_.inputs, &def_.outputs})
    for (const ArgDef& arg : *args)
      if (arg.fixed_type == DType::kInvalid && !def_.FindAttr(arg.type_attr))
        Fail(Code::kInternal, "op ", def_.name, ": arg '", arg.name, "' uses undeclared type attr '",
             arg.type_attr, "'");
  return std::move(def_);
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = new OpRegistry;
  return *registry;
}

void OpRegistry::Register(OpDef def) {
  std::string name = def.name;
  auto [it, inserted] = ops_.emplace(name, std::make_unique<OpDef>(std::move(def)));
  if (!inserted) Fail(Code::kAlreadyExists, "op '", name, "' is registered twice");
}

const OpDef* OpRegistry::Find(std::string_view name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

const OpDef& OpRegistry::Get(std::string_view name) const {
  const OpDef* def = Find(name);
  if (!def) Fail(Code::kNotFound, "unknown op '", name, "' (`dflow ops` lists the registered ops)");
  return *def;
}

std::vector<const OpDef*> OpRegistry::All() const {
  std::vector<const OpDef*> all;
  for (const auto& [name, def] : ops_) all.push_back(def.get());
  return all;
}

OpRegistrar::OpRegistrar(OpDefBuilder& builder) {
  OpRegistry::Global().Register(std::move(builder).Build());
}
OpRegistrar::OpRegistrar(OpDefBuilder&& builder) {
  OpRegistry::Global().Register(std::move(builder).Build());
}

InferenceContext::InferenceContext(const OpDef& def, const AttrMap& attrs,
                                   std::vector<DType> input_dtypes, std::vector<Shape> input_shapes,
                                   std::vector<std::optional<Tensor>> input_values, int num_outputs)
    : def_(def),
      attrs_(attrs),
      input_dtypes_(std::move(input_dtypes)),
      input_shapes_(std::move(input_shapes)),
      input_values_(std::move(input_values)),
      output_shapes_(num_outputs, Shape::Unknown()) {}

const Tensor* InferenceContext::input_value(int i) const {
  const auto& value = input_values_.at(i);
  return value ? &*value : nullptr;
}

std::optional<std::vector<int64_t>> InferenceContext::input_as_ints(int i) const {
  const Tensor* value = input_value(i);
  if (!value) return std::nullopt;
  return ReadInt64s(*value, StrCat("input ", i, " of ", def_.name));
}

Shape InferenceContext::input_as_shape(int i) const {
  if (auto dims = input_as_ints(i)) {
    for (int64_t d : *dims)
      if (d < -1) Fail("shape input has a negative dimension ", d);
    return Shape(*dims);
  }
  const Shape& shape = input_shape(i);
  if (shape.unknown_rank() || shape.rank() != 1 || shape.dim(0) < 0) return Shape::Unknown();
  return Shape(std::vector<int64_t>(shape.dim(0), Shape::kUnknownDim));
}

void UnchangedShape(InferenceContext& ctx) { ctx.set_output(0, ctx.input_shape(0)); }

void ScalarShape(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, Shape{});
}

Shape BroadcastShapes(const Shape& a, const Shape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return Shape::Unknown();
  int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    // Align from the right; a missing leading dim acts as 1.
    int ia = i - (rank - a.rank()), ib = i - (rank - b.rank());
    int64_t da = ia >= 0 ? a.dim(ia) : 1, db = ib >= 0 ? b.dim(ib) : 1;
    if (da == 1) dims[i] = db;
    else if (db == 1) dims[i] = da;
    else if (da < 0) dims[i] = db;      // unknown vs n (n != 1): must be n
    else if (db < 0) dims[i] = da;
    else if (da == db) dims[i] = da;
    else
      Fail(Code::kInvalidArgument, "shapes ", a.ToString(), " and ", b.ToString(),
           " cannot be broadcast (dimension ", i, ": ", da, " vs ", db, ")");
  }
  // [2^32, 1] and [1, 2^32] are small, their broadcast is not.
  Shape out(std::move(dims));
  CheckShapeSize(out);
  return out;
}

void BroadcastBinaryShape(InferenceContext& ctx) {
  ctx.set_output(0, BroadcastShapes(ctx.input_shape(0), ctx.input_shape(1)));
}

}  // namespace dflow
