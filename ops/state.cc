// Constants, placeholders and variables.
#include "ops/state.h"

namespace dflow {

namespace {

// A tensor stored in the graph (its `value` attr).
OpDefBuilder ConstantOp(const char* name) {
  OpDefBuilder b(name);
  b.output("output", "dtype")
      .attr<Tensor>("value")
      .type_attr("dtype", {})
      .shape_fn([](InferenceContext& ctx) {
        Tensor value = ctx.attr<Tensor>("value");
        if (value.dtype() != ctx.attr<DType>("dtype"))
          ctx.Fail("value is ", DTypeName(value.dtype()), " but dtype is ",
                   DTypeName(ctx.attr<DType>("dtype")));
        ctx.set_output(0, value.shape());
      })
      .value_fn([](const Node& node) -> std::optional<Tensor> { return node.attr<Tensor>("value"); });
  return b;
}

}  // namespace

[[maybe_unused]] static OpRegistrar const_op =
    ConstantOp("Const").doc("A constant tensor, stored in the graph.");
// Added by partitioning on a device with memory of its own (graph/memory_types.h).
[[maybe_unused]] static OpRegistrar host_const_op = ConstantOp("HostConst").doc(
    "A constant tensor in host memory on any device: a value the graph knows, "
    "read by a kernel that takes it from the host.");

REGISTER_OP("Placeholder")
    .output("output", "dtype")
    .type_attr("dtype", {})
    .attr<Shape>("shape", Shape::Unknown())
    .stateful()  // two placeholders alike are still different inputs
    .shape_fn([](InferenceContext& ctx) { ctx.set_output(0, ctx.attr<Shape>("shape")); })
    .doc("A value fed at Run time. Running it without a feed is an error. "
         "A dimension of -1 in `shape` accepts any size.");

REGISTER_OP("VariableV2")
    .output("ref", "dtype")
    .attr<Shape>("shape")
    .type_attr("dtype", {})
    .attr<std::string>("container", "")
    .attr<std::string>("shared_name", "")
    .variable()
    .shape_fn([](InferenceContext& ctx) { ctx.set_output(0, ctx.attr<Shape>("shape")); })
    .doc("A tensor that keeps its value across Run calls, owned by the session. "
         "Reading it before an Assign is an error. Variables are shared by "
         "`shared_name`, or by node name when it is empty.");

namespace {

void SameShapeAsVariable(InferenceContext& ctx) {
  if (!ctx.input_shape(0).IsCompatibleWith(ctx.input_shape(1)))
    ctx.Fail("value shape ", ctx.input_shape(1).ToString(), " does not match variable shape ",
             ctx.input_shape(0).ToString());
  ctx.set_output(0, ctx.input_shape(0).Merge(ctx.input_shape(1)));
}

}  // namespace

REGISTER_OP("Assign")
    .ref_input("ref", "T")
    .input("value", "T")
    .output("output_ref", "T")
    .type_attr("T", {})
    .attr<bool>("validate_shape", true)
    .attr<bool>("use_locking", true)
    .stateful()
    .shape_fn([](InferenceContext& ctx) {
      if (ctx.attr<bool>("validate_shape")) SameShapeAsVariable(ctx);
      else ctx.set_output(0, ctx.input_shape(1));
    })
    .doc("Sets the variable `ref` to `value` and outputs the new value.");

REGISTER_OP("AssignAdd")
    .ref_input("ref", "T")
    .input("value", "T")
    .output("output_ref", "T")
    .type_attr("T", kRealTypes)
    .attr<bool>("use_locking", false)
    .stateful()
    .shape_fn(SameShapeAsVariable)
    .doc("ref += value, in place; outputs the new value.");

REGISTER_OP("AssignSub")
    .ref_input("ref", "T")
    .input("value", "T")
    .output("output_ref", "T")
    .type_attr("T", kRealTypes)
    .attr<bool>("use_locking", false)
    .stateful()
    .shape_fn(SameShapeAsVariable)
    .doc("ref -= value, in place; outputs the new value.");

REGISTER_OP("IsVariableInitialized")
    .ref_input("ref", "dtype")
    .output("is_initialized", DType::kBool)
    .type_attr("dtype", {})
    .stateful()
    .shape_fn([](InferenceContext& ctx) { ctx.set_output(0, Shape()); })
    .doc("True once the variable `ref` has a value (an Assign ran). A parameter server's "
         "workers poll it until the chief has initialised the variables.");

REGISTER_OP("NoOp").doc("Does nothing. Useful as a target that groups control dependencies.");

namespace ops {

Output Const(const Scope& scope, const Input& value) { return value.ToOutput(scope); }

Output Placeholder(const Scope& scope, DType dtype, Shape shape) {
  return scope.AddOp("Placeholder", {}, {{"dtype", dtype}, {"shape", std::move(shape)}});
}

Output Variable(const Scope& scope, Shape shape, DType dtype) {
  return scope.AddOp("VariableV2", {}, {{"shape", std::move(shape)}, {"dtype", dtype}});
}

namespace {

std::string InitializerName(const Node& variable) { return variable.name() + "/init"; }

// Is `node` the "<variable>/init" Assign of the variable it writes?
bool IsInitializer(const Node& node) {
  return node.op() == "Assign" && node.input(0).node->def().is_variable &&
         node.name() == InitializerName(*node.input(0).node);
}

}  // namespace

Output Variable(const Scope& scope, const Input& initial_value) {
  Output value = initial_value.ToOutput(scope.NewSubScope(""));
  DFLOW_REQUIRE(value.shape().IsFullyDefined(), "Variable '", scope.NodeName("VariableV2"),
                "': the initial value's shape ", value.shape().ToString(),
                " must be fully known");
  Output var = Variable(scope, value.shape(), value.dtype());
  Scope init = Scope::ForGraph(scope.graph_ptr()).WithDevice(scope.device());
  Assign(init.WithOpName(InitializerName(*var.node())), var, value);
  return var;
}

Node* GlobalVariablesInitializer(const Scope& scope) {
  std::vector<Output> assigns;
  for (Node* node : scope.graph().nodes())
    if (IsInitializer(*node)) assigns.emplace_back(node);
  return NoOp(scope.WithControlDependencies(assigns));
}

Output Assign(const Scope& scope, const Output& ref, const Input& value, AssignAttrs attrs) {
  return scope.AddOp("Assign", {ref, value},
                     {{"validate_shape", attrs.validate_shape}, {"use_locking", attrs.use_locking}});
}

Output AssignAdd(const Scope& scope, const Output& ref, const Input& value) {
  return scope.AddOp("AssignAdd", {ref, value});
}

Output AssignSub(const Scope& scope, const Output& ref, const Input& value) {
  return scope.AddOp("AssignSub", {ref, value});
}

Output IsVariableInitialized(const Scope& scope, const Output& ref) {
  return scope.AddOp("IsVariableInitialized", {ref});
}

Node* NoOp(const Scope& scope) { return scope.AddOp("NoOp", {}); }

}  // namespace ops
}  // namespace dflow
