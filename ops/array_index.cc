// Array ops that index into tensors: Slice, StridedSlice (and its gradient,
// StridedSliceGrad), GatherV2, UnsortedSegmentSum and OneHot.
#include <algorithm>

#include "ops/array.h"
#include "ops/array_op_util.h"

namespace dflow {
namespace {

using array::KnownScalar;
using array::RequireRank;
using array::UnknownDims;
using array::VectorLength;
using array::WithRank;

void SliceShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 1, 1, "begin");
  RequireRank(ctx, 2, 1, "size");
  int64_t length = std::max(VectorLength(ctx, 1), VectorLength(ctx, 2));
  Shape input = WithRank(ctx.input_shape(0), length);
  auto begin = ctx.input_as_ints(1);
  auto size = ctx.input_as_ints(2);
  if (size) input = WithRank(input, size->size());
  if (begin) input = WithRank(input, begin->size());
  if (input.unknown_rank()) return;
  int rank = input.rank();
  if (size) {
    // Without begin the input's dims do not bound the slice: only sizes are known.
    ctx.set_output(0, begin ? array::SliceShape(input, *begin, *size)
                            : array::SliceShape(UnknownDims(rank), std::vector<int64_t>(rank, 0), *size));
    return;
  }
  if ((begin && static_cast<int>(begin->size()) != rank) || (length >= 0 && length != rank))
    ctx.Fail("begin and size must have one entry per dimension of the input ", input.ToString());
  ctx.set_output(0, UnknownDims(rank));
}

array::StridedSliceMasks MasksOf(const InferenceContext& ctx) {
  return {ctx.attr<int64_t>("begin_mask"), ctx.attr<int64_t>("end_mask"),
          ctx.attr<int64_t>("ellipsis_mask"), ctx.attr<int64_t>("new_axis_mask"),
          ctx.attr<int64_t>("shrink_axis_mask")};
}

void StridedSliceShapeFn(InferenceContext& ctx) {
  for (int i = 1; i <= 3; ++i) RequireRank(ctx, i, 1, i == 1 ? "begin" : i == 2 ? "end" : "strides");
  const Shape& input = ctx.input_shape(0);
  if (input.unknown_rank()) return;
  auto begin = ctx.input_as_ints(1), end = ctx.input_as_ints(2), strides = ctx.input_as_ints(3);
  if (begin && end && strides) {
    ctx.set_output(0, array::ComputeStridedSlice(input, *begin, *end, *strides, MasksOf(ctx)).final_shape);
    return;
  }
  // Values unknown: the spec's length and the masks still give the rank.
  int64_t length = std::max({VectorLength(ctx, 1), VectorLength(ctx, 2), VectorLength(ctx, 3)});
  for (const auto* known : {&begin, &end, &strides})
    if (*known) length = static_cast<int64_t>((*known)->size());
  if (length < 0) return;
  std::vector<int64_t> zeros(length, 0), ones(length, 1);
  ctx.set_output(0, array::ComputeStridedSlice(input, zeros, zeros, ones, MasksOf(ctx), false).final_shape);
}

// StridedSliceGrad(shape, begin, end, strides, dy): the output has shape `shape`.
void StridedSliceGradShapeFn(InferenceContext& ctx) {
  const char* names[] = {"shape", "begin", "end", "strides"};
  for (int i = 0; i <= 3; ++i) RequireRank(ctx, i, 1, names[i]);
  if (auto dims = ctx.input_as_ints(0))
    for (int64_t d : *dims)
      if (d < 0) ctx.Fail("shape ", array::IntsString(*dims), " has a negative dimension");
  ctx.set_output(0, ctx.input_as_shape(0));
}

void GatherShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 2, 0, "axis");
  const Shape& params = ctx.input_shape(0);
  const Shape& indices = ctx.input_shape(1);
  if (params.unknown_rank() || indices.unknown_rank()) return;
  int64_t batch_dims = ctx.attr<int64_t>("batch_dims");
  if (auto axis = KnownScalar(ctx, 2, "axis")) {
    ctx.set_output(0, array::GatherShape(params, indices, *axis, batch_dims));
    return;
  }
  if (batch_dims < 0) batch_dims += indices.rank();
  int rank = params.rank() + indices.rank() - 1 - static_cast<int>(batch_dims);
  if (rank >= 0) ctx.set_output(0, UnknownDims(rank));
}

void SegmentSumShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 2, 0, "num_segments");
  auto num_segments = KnownScalar(ctx, 2, "num_segments");
  if (num_segments && *num_segments < 0)
    ctx.Fail("num_segments must be non-negative, got ", *num_segments);
  const Shape& data = ctx.input_shape(0);
  const Shape& ids = ctx.input_shape(1);
  if (data.unknown_rank() || ids.unknown_rank()) return;
  ctx.set_output(0, array::SegmentSumShape(data, ids, num_segments.value_or(-1)));
}

void OneHotShapeFn(InferenceContext& ctx) {
  RequireRank(ctx, 1, 0, "depth");
  RequireRank(ctx, 2, 0, "on_value");
  RequireRank(ctx, 3, 0, "off_value");
  int64_t axis = ctx.attr<int64_t>("axis");
  if (axis < -1) ctx.Fail("axis must be -1 or a dimension index, got ", axis);
  auto depth = KnownScalar(ctx, 1, "depth");
  if (depth && *depth < 0) ctx.Fail("depth must be non-negative, got ", *depth);
  const Shape& indices = ctx.input_shape(0);
  if (indices.unknown_rank()) return;
  ctx.set_output(0, array::OneHotShape(indices, depth.value_or(-1), axis));
}

}  // namespace

REGISTER_OP("Slice")
    .input("input", "T").input("begin", "Index").input("size", "Index").output("output", "T")
    .type_attr("T", {}).type_attr("Index", kIndexTypes, DType::kInt32)
    .shape_fn(SliceShapeFn)
    .doc("input[begin[i] : begin[i] + size[i]] in each dimension i; size[i] = -1 takes "
         "the rest of the dimension. The slice must lie inside the input.");

REGISTER_OP("StridedSlice")
    .input("input", "T").input("begin", "Index").input("end", "Index").input("strides", "Index")
    .output("output", "T")
    .type_attr("T", {}).type_attr("Index", kIndexTypes, DType::kInt32)
    .attr<int64_t>("begin_mask", 0).attr<int64_t>("end_mask", 0)
    .attr<int64_t>("ellipsis_mask", 0).attr<int64_t>("new_axis_mask", 0)
    .attr<int64_t>("shrink_axis_mask", 0)
    .shape_fn(StridedSliceShapeFn)
    .doc("Numpy-style basic indexing, input[begin:end:strides], with TensorFlow's masks: "
         "bit i of begin_mask/end_mask ignores begin[i]/end[i], of ellipsis_mask makes "
         "entry i `...`, of new_axis_mask inserts a dimension of size 1, of "
         "shrink_axis_mask takes index begin[i] and drops the dimension. Negative indices "
         "count from the end; out-of-range begin/end are clamped; strides may be negative.");

REGISTER_OP("StridedSliceGrad")
    .input("shape", "Index").input("begin", "Index").input("end", "Index")
    .input("strides", "Index").input("dy", "T").output("output", "T")
    .type_attr("T", {}).type_attr("Index", kIndexTypes, DType::kInt32)
    .attr<int64_t>("begin_mask", 0).attr<int64_t>("end_mask", 0)
    .attr<int64_t>("ellipsis_mask", 0).attr<int64_t>("new_axis_mask", 0)
    .attr<int64_t>("shrink_axis_mask", 0)
    .shape_fn(StridedSliceGradShapeFn)
    .doc("The gradient of StridedSlice: a tensor of shape `shape` holding dy at the "
         "positions StridedSlice(x, begin, end, strides) with the same masks reads from an x "
         "of that shape, and zeros elsewhere. dy must have the slice's shape.");

REGISTER_OP("GatherV2")
    .input("params", "Tparams").input("indices", "Tindices").input("axis", "Taxis")
    .output("output", "Tparams")
    .type_attr("Tparams", {}).type_attr("Tindices", kIndexTypes, DType::kInt32)
    .type_attr("Taxis", kIndexTypes, DType::kInt32)
    .attr<int64_t>("batch_dims", 0)
    .shape_fn(GatherShapeFn)
    .doc("Slices of params along `axis` picked by indices: the output's shape is "
         "params.shape[:axis] + indices.shape[batch_dims:] + params.shape[axis+1:]. The "
         "first batch_dims dimensions of params and indices are matched, not gathered. An "
         "index outside [0, params.shape[axis]) is an error.");

REGISTER_OP("UnsortedSegmentSum")
    .input("data", "T").input("segment_ids", "Tindices").input("num_segments", "Tnumsegments")
    .output("output", "T")
    .type_attr("T", kNumberTypes).type_attr("Tindices", kIndexTypes, DType::kInt32)
    .type_attr("Tnumsegments", kIndexTypes, DType::kInt32)
    .shape_fn(SegmentSumShapeFn)
    .doc("output[segment_ids[i...]] += data[i...]: segment_ids' shape is a prefix of "
         "data's, and the output is [num_segments] + the rest of data's shape. Segments "
         "nothing maps to are 0; negative ids are dropped; ids >= num_segments are an error.");

REGISTER_OP("OneHot")
    .input("indices", "TI").input("depth", DType::kInt32).input("on_value", "T")
    .input("off_value", "T").output("output", "T")
    .type_attr("T", {}).type_attr("TI", {DType::kUInt8, DType::kInt32, DType::kInt64}, DType::kInt64)
    .attr<int64_t>("axis", -1)
    .shape_fn(OneHotShapeFn)
    .doc("A new dimension of size depth at `axis` (-1 = last): on_value where the index "
         "equals the position along it, off_value elsewhere (so an index outside [0, depth) "
         "gives all off_value).");

namespace ops {

using array::AsOutput;

Output Slice(const Scope& scope, const Input& input, const Input& begin, const Input& size) {
  return scope.AddOp("Slice", {AsOutput(scope, input), AsOutput(scope, begin), AsOutput(scope, size)});
}

namespace {

AttrMap MaskAttrs(const StridedSliceAttrs& attrs) {
  return {{"begin_mask", attrs.begin_mask}, {"end_mask", attrs.end_mask},
          {"ellipsis_mask", attrs.ellipsis_mask}, {"new_axis_mask", attrs.new_axis_mask},
          {"shrink_axis_mask", attrs.shrink_axis_mask}};
}

}  // namespace

Output StridedSlice(const Scope& scope, const Input& input, const Input& begin, const Input& end,
                    const Input& strides, StridedSliceAttrs attrs) {
  return scope.AddOp("StridedSlice",
                     {AsOutput(scope, input), AsOutput(scope, begin), AsOutput(scope, end),
                      AsOutput(scope, strides)},
                     MaskAttrs(attrs));
}

Output StridedSliceGrad(const Scope& scope, const Input& shape, const Input& begin,
                        const Input& end, const Input& strides, const Input& dy,
                        StridedSliceAttrs attrs) {
  return scope.AddOp("StridedSliceGrad",
                     {AsOutput(scope, shape), AsOutput(scope, begin), AsOutput(scope, end),
                      AsOutput(scope, strides), AsOutput(scope, dy)},
                     MaskAttrs(attrs));
}

Output GatherV2(const Scope& scope, const Input& params, const Input& indices, const Input& axis,
                GatherV2Attrs attrs) {
  return scope.AddOp("GatherV2",
                     {AsOutput(scope, params), AsOutput(scope, indices), AsOutput(scope, axis)},
                     {{"batch_dims", attrs.batch_dims}});
}

Output UnsortedSegmentSum(const Scope& scope, const Input& data, const Input& segment_ids,
                          const Input& num_segments) {
  return scope.AddOp("UnsortedSegmentSum", {AsOutput(scope, data), AsOutput(scope, segment_ids),
                                            AsOutput(scope, num_segments)});
}

Output OneHot(const Scope& scope, const Input& indices, const Input& depth, const Input& on_value,
              const Input& off_value, OneHotAttrs attrs) {
  // A literal on/off value takes the dtype of the other one when that is a real output.
  Output on, off;
  if (on_value.is_literal() && !off_value.is_literal()) {
    off = AsOutput(scope, off_value);
    on = AsOutput(scope, on_value, off.dtype());
  } else {
    on = AsOutput(scope, on_value);
    off = AsOutput(scope, off_value, on.dtype());
  }
  return scope.AddOp("OneHot", {AsOutput(scope, indices), AsOutput(scope, depth), on, off},
                     {{"axis", attrs.axis}});
}

}  // namespace ops
}  // namespace dflow
