// Element-wise math ops: unary functions, broadcasting binary arithmetic,
// comparisons, logic, Select, Cast and AddN; and their builders.
#include "ops/math.h"

namespace dflow {
namespace {

const std::vector<DType> kComparableTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                             DType::kInt64, DType::kBool};

OpDefBuilder UnaryOp(std::string name, const std::vector<DType>& types, std::string doc) {
  OpDefBuilder b(std::move(name));
  b.input("x", "T").output("y", "T").type_attr("T", types).shape_fn(UnchangedShape)
      .doc(std::move(doc));
  return b;
}

OpDefBuilder BinaryOp(std::string name, const std::vector<DType>& types, std::string doc) {
  OpDefBuilder b(std::move(name));
  b.input("x", "T").input("y", "T").output("z", "T").type_attr("T", types)
      .shape_fn(BroadcastBinaryShape).broadcasting()
      .doc(std::move(doc) + " x and y broadcast like numpy arrays.");
  return b;
}

OpDefBuilder CompareOp(std::string name, const std::vector<DType>& types, std::string doc) {
  OpDefBuilder b(std::move(name));
  b.input("x", "T").input("y", "T").output("z", DType::kBool).type_attr("T", types)
      .shape_fn(BroadcastBinaryShape).broadcasting()
      .doc(std::move(doc) + " x and y broadcast like numpy arrays; the result is bool.");
  return b;
}

// Select's three inputs broadcast together, like numpy.where.
void SelectShape(InferenceContext& ctx) {
  ctx.set_output(0, BroadcastShapes(BroadcastShapes(ctx.input_shape(0), ctx.input_shape(1)),
                                    ctx.input_shape(2)));
}

void AddNShape(InferenceContext& ctx) {
  Shape merged = ctx.input_shape(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!merged.IsCompatibleWith(ctx.input_shape(i)))
      ctx.Fail("all inputs must have the same shape: inputs[0] is ", ctx.input_shape(0).ToString(),
               ", inputs[", i, "] is ", ctx.input_shape(i).ToString());
    merged = merged.Merge(ctx.input_shape(i));
  }
  ctx.set_output(0, merged);
}

[[maybe_unused]] const OpRegistrar kUnaryOps[] = {
    UnaryOp("Neg", kNumberTypes, "y = -x."),
    UnaryOp("Abs", kNumberTypes, "y = |x|."),
    UnaryOp("Sign", kNumberTypes, "y = -1, 0 or 1 for x < 0, x == 0, x > 0 (NaN stays NaN)."),
    UnaryOp("Exp", kFloatTypes, "y = e^x."),
    UnaryOp("Log", kFloatTypes, "y = ln(x); -inf at 0, NaN below."),
    UnaryOp("Log1p", kFloatTypes, "y = ln(1 + x), accurate for small |x|."),
    UnaryOp("Sqrt", kFloatTypes, "y = sqrt(x)."),
    UnaryOp("Rsqrt", kFloatTypes, "y = 1 / sqrt(x)."),
    UnaryOp("Square", kNumberTypes, "y = x * x."),
    UnaryOp("Reciprocal", kFloatTypes, "y = 1 / x."),
    UnaryOp("Sin", kFloatTypes, "y = sin(x), x in radians."),
    UnaryOp("Cos", kFloatTypes, "y = cos(x), x in radians."),
    UnaryOp("Tanh", kFloatTypes, "y = tanh(x)."),
    UnaryOp("Sigmoid", kFloatTypes, "y = 1 / (1 + e^-x)."),
    UnaryOp("Floor", kFloatTypes, "y = the largest integer <= x."),
    UnaryOp("Ceil", kFloatTypes, "y = the smallest integer >= x."),
    UnaryOp("Round", kFloatTypes, "y = x rounded to the nearest integer, halves to even "
                                  "(0.5 -> 0, 1.5 -> 2, -2.5 -> -2), like TensorFlow's Round."),
};

[[maybe_unused]] const OpRegistrar kBinaryOps[] = {
    BinaryOp("Add", kNumberTypes, "z = x + y."),
    BinaryOp("Sub", kNumberTypes, "z = x - y."),
    BinaryOp("Mul", kNumberTypes, "z = x * y."),
    BinaryOp("Div", kNumberTypes, "z = x / y; for integers the quotient is truncated toward "
                                  "zero (TF's Div), and a zero divisor is an error."),
    BinaryOp("Pow", kFloatTypes, "z = x^y."),
    BinaryOp("Maximum", kNumberTypes, "z = max(x, y); NaN if either is NaN."),
    BinaryOp("Minimum", kNumberTypes, "z = min(x, y); NaN if either is NaN."),
    BinaryOp("SquaredDifference", kNumberTypes, "z = (x - y)^2."),
    BinaryOp("FloorDiv", kNumberTypes, "z = floor(x / y), rounding toward -inf like Python's //; "
                                       "an integer zero divisor is an error."),
    BinaryOp("FloorMod", kNumberTypes, "z = x - floor(x / y) * y: the remainder has the sign of y, "
                                       "like Python's %; an integer zero divisor is an error."),
};

[[maybe_unused]] const OpRegistrar kCompareOps[] = {
    CompareOp("Less", kNumberTypes, "z = x < y."),
    CompareOp("LessEqual", kNumberTypes, "z = x <= y."),
    CompareOp("Greater", kNumberTypes, "z = x > y."),
    CompareOp("GreaterEqual", kNumberTypes, "z = x >= y."),
    CompareOp("Equal", kComparableTypes, "z = x == y (NaN is never equal)."),
    CompareOp("NotEqual", kComparableTypes, "z = x != y (NaN differs from everything)."),
};

}  // namespace

REGISTER_OP("LogicalAnd")
    .input("x", DType::kBool).input("y", DType::kBool).output("z", DType::kBool)
    .shape_fn(BroadcastBinaryShape)
    .doc("z = x && y, with numpy broadcasting.");

REGISTER_OP("LogicalOr")
    .input("x", DType::kBool).input("y", DType::kBool).output("z", DType::kBool)
    .shape_fn(BroadcastBinaryShape)
    .doc("z = x || y, with numpy broadcasting.");

REGISTER_OP("LogicalNot")
    .input("x", DType::kBool).output("y", DType::kBool)
    .shape_fn(UnchangedShape)
    .doc("y = !x.");

REGISTER_OP("Select")
    .input("condition", DType::kBool).input("t", "T").input("e", "T").output("output", "T")
    .type_attr("T", {})
    .shape_fn(SelectShape)
    .broadcasting()
    .doc("output = condition ? t : e, element-wise. condition, t and e broadcast together like "
         "numpy arrays (numpy.where); this is TensorFlow's SelectV2, not v1 Select's "
         "row-selection by a vector condition.");

REGISTER_OP("Cast")
    .input("x", "SrcT").output("y", "DstT")
    .type_attr("SrcT", {}).type_attr("DstT", {})
    .attr<bool>("Truncate", false)
    .shape_fn(UnchangedShape)
    .doc("y = x converted to DstT. Floats to integers round toward zero and saturate at the "
         "integer's range (NaN becomes 0); anything to bool is x != 0; floats narrow to the "
         "nearest value, or toward zero when Truncate is set.");

REGISTER_OP("AddN")
    .input_list("inputs", "T", "N").output("sum", "T")
    .type_attr("T", kNumberTypes)
    .shape_fn(AddNShape)
    .doc("sum = inputs[0] + ... + inputs[N-1], all of the same shape (no broadcasting).");

namespace ops {

Output Neg(const Scope& scope, const Input& x) { return scope.AddOp("Neg", {x}); }
Output Abs(const Scope& scope, const Input& x) { return scope.AddOp("Abs", {x}); }
Output Sign(const Scope& scope, const Input& x) { return scope.AddOp("Sign", {x}); }
Output Exp(const Scope& scope, const Input& x) { return scope.AddOp("Exp", {x}); }
Output Log(const Scope& scope, const Input& x) { return scope.AddOp("Log", {x}); }
Output Log1p(const Scope& scope, const Input& x) { return scope.AddOp("Log1p", {x}); }
Output Sqrt(const Scope& scope, const Input& x) { return scope.AddOp("Sqrt", {x}); }
Output Rsqrt(const Scope& scope, const Input& x) { return scope.AddOp("Rsqrt", {x}); }
Output Square(const Scope& scope, const Input& x) { return scope.AddOp("Square", {x}); }
Output Reciprocal(const Scope& scope, const Input& x) { return scope.AddOp("Reciprocal", {x}); }
Output Sin(const Scope& scope, const Input& x) { return scope.AddOp("Sin", {x}); }
Output Cos(const Scope& scope, const Input& x) { return scope.AddOp("Cos", {x}); }
Output Tanh(const Scope& scope, const Input& x) { return scope.AddOp("Tanh", {x}); }
Output Sigmoid(const Scope& scope, const Input& x) { return scope.AddOp("Sigmoid", {x}); }
Output Floor(const Scope& scope, const Input& x) { return scope.AddOp("Floor", {x}); }
Output Ceil(const Scope& scope, const Input& x) { return scope.AddOp("Ceil", {x}); }
Output Round(const Scope& scope, const Input& x) { return scope.AddOp("Round", {x}); }

Output Add(const Scope& s, const Input& x, const Input& y) { return s.AddOp("Add", {x, y}); }
Output Sub(const Scope& s, const Input& x, const Input& y) { return s.AddOp("Sub", {x, y}); }
Output Mul(const Scope& s, const Input& x, const Input& y) { return s.AddOp("Mul", {x, y}); }
Output Div(const Scope& s, const Input& x, const Input& y) { return s.AddOp("Div", {x, y}); }
Output Pow(const Scope& s, const Input& x, const Input& y) { return s.AddOp("Pow", {x, y}); }
Output Maximum(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("Maximum", {x, y});
}
Output Minimum(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("Minimum", {x, y});
}
Output SquaredDifference(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("SquaredDifference", {x, y});
}
Output FloorDiv(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("FloorDiv", {x, y});
}
Output FloorMod(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("FloorMod", {x, y});
}

Output Less(const Scope& s, const Input& x, const Input& y) { return s.AddOp("Less", {x, y}); }
Output LessEqual(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("LessEqual", {x, y});
}
Output Greater(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("Greater", {x, y});
}
Output GreaterEqual(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("GreaterEqual", {x, y});
}
Output Equal(const Scope& s, const Input& x, const Input& y) { return s.AddOp("Equal", {x, y}); }
Output NotEqual(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("NotEqual", {x, y});
}
Output LogicalAnd(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("LogicalAnd", {x, y});
}
Output LogicalOr(const Scope& s, const Input& x, const Input& y) {
  return s.AddOp("LogicalOr", {x, y});
}
Output LogicalNot(const Scope& s, const Input& x) { return s.AddOp("LogicalNot", {x}); }

Output Select(const Scope& scope, const Input& condition, const Input& t, const Input& e) {
  return scope.AddOp("Select", {condition, t, e});
}

Output Cast(const Scope& scope, const Input& x, DType dst, CastAttrs attrs) {
  return scope.AddOp("Cast", {x}, {{"DstT", dst}, {"Truncate", attrs.truncate}});
}

Output AddN(const Scope& scope, const std::vector<Input>& inputs) {
  return scope.AddOp("AddN", inputs);
}

}  // namespace ops
}  // namespace dflow
