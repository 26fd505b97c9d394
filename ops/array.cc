// Array ops that reshape, reorder, join, split, pad, tile and fill tensors,
// and read shapes. Slicing, gathering, segment sums and OneHot are in
// array_index.cc; the shape arithmetic itself is in array_shapes.cc.
#include "ops/array.h"

#include <limits>

#include "ops/array_op_util.h"

namespace dflow {
namespace array {

void RequireRank(const InferenceContext& ctx, int i, int rank, std::string_view what) {
  const Shape& s = ctx.input_shape(i);
  if (!s.unknown_rank() && s.rank() != rank)
    ctx.Fail(what, " must be ", rank == 0 ? "a scalar" : rank == 1 ? "a vector" : "of rank 2",
             ", got shape ", s.ToString());
}

std::optional<int64_t> KnownScalar(const InferenceContext& ctx, int i, std::string_view what) {
  auto values = ctx.input_as_ints(i);
  if (!values) return std::nullopt;
  if (values->size() != 1) ctx.Fail(what, " must be a single value, got ", IntsString(*values));
  return values->front();
}

int64_t VectorLength(const InferenceContext& ctx, int i) {
  const Shape& s = ctx.input_shape(i);
  return !s.unknown_rank() && s.rank() == 1 ? s.dim(0) : -1;
}

Shape WithRank(const Shape& input, int64_t length) {
  if (!input.unknown_rank() || length < 0) return input;
  return UnknownDims(static_cast<int>(length));
}

Output AsOutput(const Scope& scope, const Input& input, DType like) {
  return input.ToOutput(scope.NewSubScope(""), like);
}

}  // namespace array

namespace {

using array::KnownScalar;
using array::RequireRank;
using array::UnknownDims;
using array::VectorLength;
using array::WithRank;

void ReshapeShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 1, 1, "shape");
  if (auto dims = ctx.input_as_ints(1)) ctx.set_output(0, array::ReshapeShape(ctx.input_shape(0), *dims));
  else ctx.set_output(0, ctx.input_as_shape(1));
}

void TransposeShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 1, 1, "perm");
  Shape input = WithRank(ctx.input_shape(0), VectorLength(ctx, 1));
  if (auto perm = ctx.input_as_ints(1)) {
    ctx.set_output(0, array::TransposeShape(WithRank(input, perm->size()), *perm));
    return;
  }
  if (input.unknown_rank()) return;
  if (VectorLength(ctx, 1) >= 0 && VectorLength(ctx, 1) != input.rank())
    ctx.Fail("perm has ", VectorLength(ctx, 1), " entries but the input ", input.ToString(),
             " has rank ", input.rank());
  ctx.set_output(0, UnknownDims(input.rank()));
}

void ConcatShapeFn(InferenceContext& ctx) {
  int n = ctx.num_inputs() - 1;
  RequireRank(ctx, n, 0, "axis");
  std::vector<Shape> shapes;
  for (int i = 0; i < n; ++i) shapes.push_back(ctx.input_shape(i));
  if (auto axis = KnownScalar(ctx, n, "axis")) {
    ctx.set_output(0, array::ConcatShape(shapes, *axis));
    return;
  }
  for (const Shape& s : shapes)
    if (!s.unknown_rank()) return ctx.set_output(0, UnknownDims(s.rank()));
}

void SplitShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 0, 0, "axis");
  int64_t num_split = ctx.attr<int64_t>("num_split");
  if (num_split < 1) ctx.Fail("num_split must be at least 1, got ", num_split);
  const Shape& value = ctx.input_shape(1);
  if (value.unknown_rank()) return;
  auto axis = KnownScalar(ctx, 0, "axis");
  Shape piece = axis ? array::SplitShape(value, *axis, num_split) : UnknownDims(value.rank());
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, piece);
}

void PadShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 1, 2, "paddings");
  const Shape& table = ctx.input_shape(1);
  int64_t rows = table.unknown_rank() ? -1 : table.dim(0);
  if (!table.unknown_rank() && table.dim(1) >= 0 && table.dim(1) != 2)
    ctx.Fail("paddings must have shape [rank, 2], got ", table.ToString());
  Shape input = WithRank(ctx.input_shape(0), rows);
  if (ctx.num_inputs() == 3) RequireRank(ctx, 2, 0, "constant_values");
  if (const Tensor* value = ctx.input_value(1)) {
    std::vector<int64_t> paddings = array::ReadTable(*value, "paddings");
    ctx.set_output(0, array::PadShape(WithRank(input, paddings.size() / 2), paddings));
    return;
  }
  if (input.unknown_rank()) return;
  if (rows >= 0 && rows != input.rank())
    ctx.Fail("paddings has shape ", table.ToString(), " but the input ", input.ToString(),
             " has rank ", input.rank());
  ctx.set_output(0, UnknownDims(input.rank()));
}

void TileShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 1, 1, "multiples");
  Shape input = WithRank(ctx.input_shape(0), VectorLength(ctx, 1));
  if (auto multiples = ctx.input_as_ints(1)) {
    ctx.set_output(0, array::TileShape(WithRank(input, multiples->size()), *multiples));
    return;
  }
  if (input.unknown_rank()) return;
  if (VectorLength(ctx, 1) >= 0 && VectorLength(ctx, 1) != input.rank())
    ctx.Fail("multiples has ", VectorLength(ctx, 1), " entries but must have one entry per "
             "dimension of the input ", input.ToString());
  ctx.set_output(0, UnknownDims(input.rank()));
}

void ExpandDimsShapeFn(InferenceContext& ctx) {
  const Shape& input = ctx.input_shape(0);
  auto axis = KnownScalar(ctx, 1, "axis");
  if (input.unknown_rank()) return;
  ctx.set_output(0, axis ? array::ExpandDimsShape(input, *axis) : UnknownDims(input.rank() + 1));
}

void SqueezeShapeFn(InferenceContext& ctx) {
  const Shape& input = ctx.input_shape(0);
  if (input.unknown_rank()) return;
  ctx.set_output(0, array::SqueezeShape(input, ctx.attr<std::vector<int64_t>>("squeeze_dims")));
}

void BroadcastToShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 1, 1, "shape");
  if (auto dims = ctx.input_as_ints(1))
    for (int64_t d : *dims)
      if (d < 0) ctx.Fail("shape ", array::IntsString(*dims), " has a negative dimension");
  Shape target = ctx.input_as_shape(1);
  const Shape& input = ctx.input_shape(0);
  if (input.unknown_rank() || target.unknown_rank()) return ctx.set_output(0, target);
  ctx.set_output(0, array::BroadcastToShape(input, target));
}

void FillShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 0, 1, "dims");
  RequireRank(ctx, 1, 0, "value");
  if (auto dims = ctx.input_as_ints(0))
    for (int64_t d : *dims)
      if (d < 0) ctx.Fail("dims ", array::IntsString(*dims), " has a negative dimension");
  ctx.set_output(0, ctx.input_as_shape(0));
}

void RangeShapeFn(InferenceContext& ctx) {
  const char* names[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) RequireRank(ctx, i, 0, names[i]);
  ctx.set_output(0, Shape{-1});
  const Tensor* v[3] = {ctx.input_value(0), ctx.input_value(1), ctx.input_value(2)};
  if (!v[0] || !v[1] || !v[2]) return;
  int64_t size = 0;
  if (IsInteger(ctx.input_dtype(0)))
    size = array::RangeSize(KnownScalar(ctx, 0, "start").value(), KnownScalar(ctx, 1, "limit").value(),
                            KnownScalar(ctx, 2, "delta").value());
  else
    size = array::RangeSize(ReadAsDouble(*v[0], 0), ReadAsDouble(*v[1], 0), ReadAsDouble(*v[2], 0));
  ctx.set_output(0, Shape{size});
}

// Shape, Size and Rank are known while building when the input's shape is.
std::optional<Tensor> IntsAs(DType dtype, const std::vector<int64_t>& values, bool scalar) {
  if (dtype == DType::kInt32) {
    for (int64_t v : values)
      if (v > std::numeric_limits<int32_t>::max()) return std::nullopt;  // the kernel reports it
    std::vector<int32_t> narrow(values.begin(), values.end());
    return scalar ? Tensor::Scalar(narrow[0]) : Tensor::FromVector(narrow);
  }
  return scalar ? Tensor::Scalar(values[0]) : Tensor::FromVector(values);
}

std::optional<Tensor> ShapeValue(const Node& node) {
  const Shape& s = node.input_shape(0);
  if (!s.IsFullyDefined()) return std::nullopt;
  return IntsAs(node.attr<DType>("out_type"), s.dims(), false);
}

std::optional<Tensor> SizeValue(const Node& node) {
  const Shape& s = node.input_shape(0);
  if (!s.IsFullyDefined()) return std::nullopt;
  return IntsAs(node.attr<DType>("out_type"), {s.NumElements()}, true);
}

std::optional<Tensor> RankValue(const Node& node) {
  const Shape& s = node.input_shape(0);
  if (s.unknown_rank()) return std::nullopt;
  return Tensor::Scalar<int32_t>(s.rank());
}

}  // namespace

REGISTER_OP("Reshape")
    .input("tensor", "T").input("shape", "Tshape").output("output", "T")
    .type_attr("T", {}).type_attr("Tshape", kIndexTypes, DType::kInt32)
    .shape_fn(ReshapeShapeFn)
    .doc("The same elements in a new shape. One dimension of `shape` may be -1: it is "
         "inferred so the element count stays the same. Shares the input's buffer.");

REGISTER_OP("Transpose")
    .input("x", "T").input("perm", "Tperm").output("y", "T")
    .type_attr("T", {}).type_attr("Tperm", kIndexTypes, DType::kInt32)
    .shape_fn(TransposeShapeFn)
    .doc("Permutes dimensions: output dimension i is input dimension perm[i].");

REGISTER_OP("ConcatV2")
    .input_list("values", "T", "N").input("axis", "Tidx").output("output", "T")
    .type_attr("T", {}).type_attr("Tidx", kIndexTypes, DType::kInt32)
    .shape_fn(ConcatShapeFn)
    .doc("Joins N tensors along `axis` (negative counts from the end). All other "
         "dimensions must agree.");

REGISTER_OP("Split")
    .input("axis", DType::kInt32).input("value", "T").output_list("output", "T", "num_split")
    .type_attr("T", {})
    .shape_fn(SplitShapeFn)
    .doc("Cuts `value` into num_split equal pieces along `axis`; the dimension must be "
         "divisible by num_split.");

REGISTER_OP("Pad")
    .input("input", "T").input("paddings", "Tpaddings").output("output", "T")
    .type_attr("T", {}).type_attr("Tpaddings", kIndexTypes, DType::kInt32)
    .shape_fn(PadShapeFn)
    .doc("Pads with zeros: paddings[i] = (before, after) elements for dimension i.");

REGISTER_OP("PadV2")
    .input("input", "T").input("paddings", "Tpaddings").input("constant_values", "T")
    .output("output", "T")
    .type_attr("T", {}).type_attr("Tpaddings", kIndexTypes, DType::kInt32)
    .shape_fn(PadShapeFn)
    .doc("Pads with the scalar constant_values: paddings[i] = (before, after) for dimension i.");

REGISTER_OP("Tile")
    .input("input", "T").input("multiples", "Tmultiples").output("output", "T")
    .type_attr("T", {}).type_attr("Tmultiples", kIndexTypes, DType::kInt32)
    .shape_fn(TileShapeFn)
    .doc("Repeats the input multiples[i] times along dimension i.");

REGISTER_OP("ExpandDims")
    .input("input", "T").input("axis", "Tdim").output("output", "T")
    .type_attr("T", {}).type_attr("Tdim", kIndexTypes, DType::kInt32)
    .shape_fn(ExpandDimsShapeFn)
    .doc("Inserts a dimension of size 1 at `axis`, in [-rank-1, rank].");

REGISTER_OP("Squeeze")
    .input("input", "T").output("output", "T")
    .type_attr("T", {}).attr<std::vector<int64_t>>("squeeze_dims", std::vector<int64_t>{})
    .shape_fn(SqueezeShapeFn)
    .doc("Removes the dimensions listed in squeeze_dims (each must have size 1), or "
         "every dimension of size 1 when the list is empty.");

REGISTER_OP("BroadcastTo")
    .input("input", "T").input("shape", "Tidx").output("output", "T")
    .type_attr("T", {}).type_attr("Tidx", kIndexTypes, DType::kInt32)
    .shape_fn(BroadcastToShapeFn)
    .doc("Numpy-broadcasts the input to `shape`.");

REGISTER_OP("Fill")
    .input("dims", "index_type").input("value", "T").output("output", "T")
    .type_attr("T", {}).type_attr("index_type", kIndexTypes, DType::kInt32)
    .shape_fn(FillShapeFn)
    .doc("A tensor of shape `dims` whose elements all equal the scalar `value`.");

REGISTER_OP("ZerosLike")
    .input("x", "T").output("y", "T").type_attr("T", {})
    .shape_fn(UnchangedShape)
    .doc("Zeros of the input's shape and dtype.");

REGISTER_OP("OnesLike")
    .input("x", "T").output("y", "T").type_attr("T", {})
    .shape_fn(UnchangedShape)
    .doc("Ones of the input's shape and dtype.");

REGISTER_OP("Range")
    .input("start", "Tidx").input("limit", "Tidx").input("delta", "Tidx").output("output", "Tidx")
    .type_attr("Tidx", kNumberTypes, DType::kInt32)
    .shape_fn(RangeShapeFn)
    .doc("[start, start + delta, ...) up to, not including, limit. delta must be non-zero "
         "and point from start towards limit.");

REGISTER_OP("Shape")
    .input("input", "T").output("output", "out_type")
    .type_attr("T", {}).type_attr("out_type", kIndexTypes, DType::kInt32)
    .shape_fn([](InferenceContext& ctx) {
      const Shape& s = ctx.input_shape(0);
      ctx.set_output(0, Shape{s.unknown_rank() ? -1 : s.rank()});
    })
    .value_fn(ShapeValue)
    .doc("The input's shape as a vector. Known while building when the input's shape is "
         "fully known (so constant folding and Reshape's shape inference can use it).");

REGISTER_OP("Size")
    .input("input", "T").output("output", "out_type")
    .type_attr("T", {}).type_attr("out_type", kIndexTypes, DType::kInt32)
    .shape_fn(ScalarShape)
    .value_fn(SizeValue)
    .doc("The input's number of elements, as a scalar.");

REGISTER_OP("Rank")
    .input("input", "T").output("output", DType::kInt32)
    .type_attr("T", {})
    .shape_fn(ScalarShape)
    .value_fn(RankValue)
    .doc("The input's number of dimensions, as an int32 scalar.");

REGISTER_OP("Identity")
    .input("input", "T").output("output", "T").type_attr("T", {})
    .shape_fn(UnchangedShape)
    .doc("Passes its input through (no copy).");

REGISTER_OP("StopGradient")
    .input("input", "T").output("output", "T").type_attr("T", {})
    .shape_fn(UnchangedShape)
    .doc("Passes its input through; gradients do not flow back through it.");

namespace ops {

using array::AsOutput;

Output Reshape(const Scope& scope, const Input& tensor, const Input& shape) {
  return scope.AddOp("Reshape", {AsOutput(scope, tensor), AsOutput(scope, shape)});
}

Output Transpose(const Scope& scope, const Input& x, const Input& perm) {
  return scope.AddOp("Transpose", {AsOutput(scope, x), AsOutput(scope, perm)});
}

Output Concat(const Scope& scope, const std::vector<Input>& values, const Input& axis) {
  // Literal values take the dtype of the first real one, as in AddOp.
  DType like = DType::kInvalid;
  for (const Input& v : values)
    if (!v.is_literal()) {
      like = AsOutput(scope, v).dtype();
      break;
    }
  std::vector<Input> inputs;
  for (const Input& v : values) inputs.push_back(AsOutput(scope, v, like));
  inputs.push_back(AsOutput(scope, axis));
  return scope.AddOp("ConcatV2", inputs);
}

std::vector<Output> Split(const Scope& scope, const Input& axis, const Input& value,
                          int64_t num_split) {
  Node* node = scope.AddOp("Split", {AsOutput(scope, axis), AsOutput(scope, value)},
                           {{"num_split", num_split}});
  std::vector<Output> outputs;
  for (int i = 0; i < node->num_outputs(); ++i) outputs.emplace_back(node, i);
  return outputs;
}

Output Pad(const Scope& scope, const Input& input, const Input& paddings) {
  return scope.AddOp("Pad", {AsOutput(scope, input), AsOutput(scope, paddings)});
}

Output PadV2(const Scope& scope, const Input& input, const Input& paddings,
             const Input& constant_values) {
  Output x = AsOutput(scope, input);
  return scope.AddOp("PadV2", {x, AsOutput(scope, paddings), AsOutput(scope, constant_values, x.dtype())});
}

Output Tile(const Scope& scope, const Input& input, const Input& multiples) {
  return scope.AddOp("Tile", {AsOutput(scope, input), AsOutput(scope, multiples)});
}

Output ExpandDims(const Scope& scope, const Input& input, const Input& axis) {
  return scope.AddOp("ExpandDims", {AsOutput(scope, input), AsOutput(scope, axis)});
}

Output Squeeze(const Scope& scope, const Input& input, SqueezeAttrs attrs) {
  return scope.AddOp("Squeeze", {AsOutput(scope, input)}, {{"squeeze_dims", attrs.squeeze_dims}});
}

Output BroadcastTo(const Scope& scope, const Input& input, const Input& shape) {
  return scope.AddOp("BroadcastTo", {AsOutput(scope, input), AsOutput(scope, shape)});
}

Output Fill(const Scope& scope, const Input& dims, const Input& value) {
  return scope.AddOp("Fill", {AsOutput(scope, dims), AsOutput(scope, value)});
}

Output ZerosLike(const Scope& scope, const Input& x) { return scope.AddOp("ZerosLike", {x}); }
Output OnesLike(const Scope& scope, const Input& x) { return scope.AddOp("OnesLike", {x}); }

Output Range(const Scope& scope, const Input& start, const Input& limit, const Input& delta) {
  return scope.AddOp("Range", {start, limit, delta});
}

Output Shape(const Scope& scope, const Input& input, ShapeAttrs attrs) {
  return scope.AddOp("Shape", {input}, {{"out_type", attrs.out_type}});
}

Output Size(const Scope& scope, const Input& input, ShapeAttrs attrs) {
  return scope.AddOp("Size", {input}, {{"out_type", attrs.out_type}});
}

Output Rank(const Scope& scope, const Input& input) { return scope.AddOp("Rank", {input}); }
Output Identity(const Scope& scope, const Input& input) { return scope.AddOp("Identity", {input}); }
Output StopGradient(const Scope& scope, const Input& input) {
  return scope.AddOp("StopGradient", {input});
}

}  // namespace ops
}  // namespace dflow
