// Gradient rules of the array ops that index into tensors (ops/array_index.cc):
// Slice, StridedSlice (and StridedSliceGrad), GatherV2 and UnsortedSegmentSum.
// Each sends every element of g back to the position of the input it was
// read from; gathers add up the elements read more than once.
#include <algorithm>

#include "autodiff/gradients.h"
#include "autodiff/shape_math.h"
#include "ops/array.h"
#include "ops/math.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;
using Ints = std::vector<int64_t>;

// y = x[begin : begin + size]: dx is g padded back into x's shape, with
// begin before and shape(x) - begin - shape(y) after in each dim.
Grads SliceGrad(const Scope& s, Node* op, const Grads& g) {
  IntValue before = ToInt32(s, InputOf(op, 1));
  IntValue after = IntSub(s, IntSub(s, ShapeOf(s, Input0(op)), before), ShapeOf(s, OutputOf(op)));
  return {ops::Pad(s, g[0], IntColumns(s, before, after).Out(s)), Output(), Output()};
}

ops::StridedSliceAttrs MasksOf(Node* op) {
  return {op->attr<int64_t>("begin_mask"), op->attr<int64_t>("end_mask"),
          op->attr<int64_t>("ellipsis_mask"), op->attr<int64_t>("new_axis_mask"),
          op->attr<int64_t>("shrink_axis_mask")};
}

// dx holds g at the positions the slice read and zeros elsewhere.
Grads StridedSliceGradient(const Scope& s, Node* op, const Grads& g) {
  auto spec = [&](int i) { return ToInt32(s, InputOf(op, i)).Out(s); };
  Output dx = ops::StridedSliceGrad(s, ShapeOf(s, Input0(op)).Out(s), spec(1), spec(2), spec(3),
                                    g[0], MasksOf(op));
  return {dx, Output(), Output(), Output()};
}

// StridedSliceGrad is linear in dy and the adjoint of StridedSlice, so
// ddy = StridedSlice(g) with the same spec.
Grads StridedSliceGradGradient(const Scope& s, Node* op, const Grads& g) {
  Output ddy = ops::StridedSlice(s, g[0], InputOf(op, 1), InputOf(op, 2), InputOf(op, 3), MasksOf(op));
  return {Output(), Output(), Output(), Output(), ddy};
}

// x unless perm is known to leave it as it is.
Output TransposeUnlessIdentity(const Scope& s, const Output& x, const IntValue& perm) {
  if (const auto& known = perm.known()) {
    bool identity = true;
    for (size_t i = 0; i < known->size(); ++i) identity &= (*known)[i] == static_cast<int64_t>(i);
    if (identity) return x;
  }
  return ops::Transpose(s, x, perm.Out(s));
}

// GatherV2's dims as int32 scalars: params' rank r, indices' rank q, the
// batch dims b and the axis a (b <= a < r).
struct GatherDims {
  IntValue r, q, b, a;
};

GatherDims GatherDimsOf(const Scope& s, Node* op) {
  IntValue r = RankOf(s, Input0(op)), q = RankOf(s, InputOf(op, 1));
  int64_t batch_dims = op->attr<int64_t>("batch_dims");
  IntValue b = batch_dims < 0 ? IntAdd(s, q, IntValue::Scalar(batch_dims)) : IntValue::Scalar(batch_dims);
  return {r, q, b, IntCanonicalAxis(s, ToInt32(s, InputOf(op, 2)), r)};
}

// The flat indices, each offset by N times the number of its batch (its
// position in the first b dims), so one segment sum over B * N segments
// serves every batch at once.
Output GatherSegmentIds(const Scope& s, const Output& indices, const GatherDims& d, const IntValue& n) {
  Output ids = ops::Reshape(s, indices, {-1});
  if (d.b.known() == Ints{0}) return ids;
  IntValue per_batch = IntProd(s, IntSlice(s, ShapeOf(s, indices), d.b, d.q));
  Output batch = ops::FloorDiv(s, ops::Range(s, 0, SizeOf(s, indices).Out(s), 1),
                               ops::Maximum(s, per_batch.Out(s), 1));
  Output offset = ops::Mul(s, batch, n.Out(s));
  return ops::Add(s, ids, indices.dtype() == DType::kInt32 ? offset : ops::Cast(s, offset, indices.dtype()));
}

// y[B, P, I, T] = params[B, P, indices[B, I], T], with B the b batch dims,
// P params' dims b..a-1, I indices' other dims and T params' dims after a.
// Every element of g is added to the params row it was read from: g
// transposed to [B, I, P, T] has one row per index, and
//   UnsortedSegmentSum(those rows, indices + N * batch number, B * N)
// is params' gradient as [B, N, P, T], transposed back to [B, P, N, T].
Grads GatherGrad(const Scope& s, Node* op, const Grads& g) {
  Output params = Input0(op), indices = InputOf(op, 1);
  GatherDims d = GatherDimsOf(s, op);
  IntValue zero = IntValue::Scalar(0), one = IntValue::Scalar(1);
  IntValue shape = ShapeOf(s, params), n = IntAt(s, shape, d.a);
  IntValue t_begin = IntSub(s, IntAdd(s, d.a, d.q), d.b);  // where T starts in y
  IntValue y_rank = IntSub(s, IntAdd(s, d.r, d.q), IntAdd(s, d.b, one));
  IntValue to_rows = IntConcat(s, {IntRange(s, zero, d.b), IntRange(s, d.a, t_begin),
                                   IntRange(s, d.b, d.a), IntRange(s, t_begin, y_rank)});
  Output by_index = TransposeUnlessIdentity(s, g[0], to_rows);
  IntValue row_shape = IntSlice(s, ShapeOf(s, by_index), d.q, y_rank);
  IntValue rows_shape = IntConcat(s, {AsIntVector(s, SizeOf(s, indices)), row_shape});
  Output rows = ops::Reshape(s, by_index, rows_shape.Out(s));
  IntValue batch_shape = IntSlice(s, shape, zero, d.b);
  IntValue segments = IntMul(s, IntProd(s, batch_shape), n);
  Output sums = ops::UnsortedSegmentSum(s, rows, GatherSegmentIds(s, indices, d, n), segments.Out(s));
  if (d.b.known() != Ints{0})
    sums = ops::Reshape(s, sums, IntConcat(s, {batch_shape, AsIntVector(s, n), row_shape}).Out(s));
  IntValue after_axis = IntAdd(s, d.a, one);
  IntValue back = IntConcat(s, {IntRange(s, zero, d.b), IntRange(s, IntAdd(s, d.b, one), after_axis),
                                AsIntVector(s, d.b), IntRange(s, after_axis, d.r)});
  return {TransposeUnlessIdentity(s, sums, back), Output(), Output()};
}

// y[ids[i]] += data[i]: each data row gets the gradient of the row it was
// added to, dx = gather(g, ids); rows with a negative id were dropped and get 0.
Grads SegmentSumGrad(const Scope& s, Node* op, const Grads& g) {
  Output data = Input0(op), ids = InputOf(op, 1);
  Output gathered = ops::GatherV2(s, g[0], ops::Maximum(s, ids, 0), 0);
  auto known = KnownInts(ids);
  if (known && std::all_of(known->begin(), known->end(), [](int64_t id) { return id >= 0; }))
    return {gathered, Output(), Output()};
  // kept, shaped ids + [1, ...] to broadcast over each row of data.
  IntValue ones = IntFill(s, IntSub(s, RankOf(s, data), RankOf(s, ids)), 1);
  Output kept = ops::Reshape(s, ops::GreaterEqual(s, ids, 0), IntConcat(s, {ShapeOf(s, ids), ones}).Out(s));
  return {ops::Select(s, kept, gathered, ops::ZerosLike(s, gathered)), Output(), Output()};
}

REGISTER_GRADIENT("Slice", SliceGrad);
REGISTER_GRADIENT("StridedSlice", StridedSliceGradient);
REGISTER_GRADIENT("StridedSliceGrad", StridedSliceGradGradient);
REGISTER_GRADIENT("GatherV2", GatherGrad);
REGISTER_GRADIENT("UnsortedSegmentSum", SegmentSumGrad);

}  // namespace
}  // namespace dflow::autodiff
