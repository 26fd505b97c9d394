// Gradient rules of the array ops that reshape, reorder, join, split, pad,
// tile and fill (ops/array.cc): ops that move elements without changing them
// route the gradient back to where each element came from. The indexing ops
// (Slice, StridedSlice, GatherV2, UnsortedSegmentSum) are in
// array_index_grad.cc. Shape computations fold to constants when shapes are
// known while building (autodiff/shape_math.h).
#include "autodiff/gradients.h"
#include "autodiff/shape_math.h"
#include "ops/array.h"
#include "ops/math.h"
#include "ops/reduce.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;

Grads IdentityGrad(const Scope& s, Node* op, const Grads& g) { return {g[0]}; }
// Same elements in another shape: reshape the gradient back.
Grads ReshapeGrad(const Scope& s, Node* op, const Grads& g) {
  Grads dx(op->num_inputs());
  dx[0] = ops::Reshape(s, g[0], ops::Shape(s, Input0(op)));
  return dx;
}
// BroadcastTo repeats elements: the gradient sums them back.
Grads BroadcastToGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::SumToShape(s, g[0], ops::Shape(s, Input0(op))), Output()};
}

// inverse[perm[i]] = i. At run time that is a scatter of 0..n-1 to the
// positions perm: UnsortedSegmentSum(range(n), perm, n).
IntValue InversePermutation(const Scope& s, const Output& perm) {
  if (auto known = KnownInts(perm)) {
    std::vector<int64_t> inverse(known->size());
    for (size_t i = 0; i < known->size(); ++i) inverse[(*known)[i]] = static_cast<int64_t>(i);
    return IntValue::Vector(inverse);
  }
  IntValue n = SizeOf(s, perm);
  return ops::UnsortedSegmentSum(s, IntRange(s, IntValue::Scalar(0), n).Out(s), perm, n.Out(s));
}

// y's dim i is x's dim perm[i], so x's dim j is y's dim inverse[j]:
// dx = transpose(g, inverse(perm)).
Grads TransposeGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::Transpose(s, g[0], InversePermutation(s, InputOf(op, 1)).Out(s)), Output()};
}

// y = concat(x_0, ..., x_{N-1}) along axis: dx_i is the block of g of x_i's
// shape that starts at offset_i = sum_{j<i} x_j.shape[axis] along axis.
Grads ConcatGrad(const Scope& s, Node* op, const Grads& g) {
  int n = op->num_inputs() - 1;
  IntValue rank = RankOf(s, OutputOf(op));
  IntValue axis = IntCanonicalAxis(s, ToInt32(s, InputOf(op, n)), rank);
  IntValue offset = IntValue::Scalar(0);
  Grads dx;
  for (int i = 0; i < n; ++i) {
    IntValue shape = ShapeOf(s, InputOf(op, i));
    dx.push_back(ops::Slice(s, g[0], IntOneHot(s, axis, rank, offset).Out(s), shape.Out(s)));
    if (i + 1 < n) offset = IntAdd(s, offset, IntAt(s, shape, axis));
  }
  dx.push_back(Output());  // axis
  return dx;
}

// The outputs are consecutive equal pieces of value along axis: dvalue is
// their gradients joined along it.
Grads SplitGrad(const Scope& s, Node* op, const Grads& g) {
  return {Output(), ops::Concat(s, std::vector<Input>(g.begin(), g.end()), Input0(op))};
}

// x sits inside y = pad(x) at offset paddings[:, 0]: dx = g[before : before + shape(x)].
Output Unpad(const Scope& s, Node* op, const Output& g) {
  IntValue before = IntColumn(s, ToInt32(s, InputOf(op, 1)), 0);
  return ops::Slice(s, g, before.Out(s), ShapeOf(s, Input0(op)).Out(s));
}

Grads PadGrad(const Scope& s, Node* op, const Grads& g) {
  return {Unpad(s, op, g[0]), Output()};
}

// As Pad; every padding element is constant_values, so its gradient is the
// sum of g outside x: sum(g) - sum(dx).
Grads PadV2Grad(const Scope& s, Node* op, const Grads& g) {
  Output dx = Unpad(s, op, g[0]);
  return {dx, Output(), ops::Sub(s, SumAll(s, g[0]), SumAll(s, dx))};
}

// y = tile(x, m): y[k_0 * d_0 + j_0, ...] = x[j_0, ...] for copies k_i < m_i
// of x's dims d_i. g reshaped to [m_0, d_0, m_1, d_1, ...] holds copy k at
// the even axes: dx = its sum over axes 0, 2, 4, ...
Grads TileGrad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op);
  IntValue copies = IntColumns(s, ToInt32(s, InputOf(op, 1)), ShapeOf(s, x));
  Output split = ops::Reshape(s, g[0], IntFlatten(s, copies).Out(s));
  IntValue even = IntMul(s, IntRange(s, IntValue::Scalar(0), RankOf(s, x)), IntValue::Scalar(2));
  return {ops::Sum(s, split, even.Out(s)), Output()};
}

// Every element of y is value: dvalue = sum(g).
Grads FillGrad(const Scope& s, Node* op, const Grads& g) {
  return {Output(), SumAll(s, g[0])};
}

REGISTER_GRADIENT("Identity", IdentityGrad);
REGISTER_GRADIENT("Reshape", ReshapeGrad);
REGISTER_GRADIENT("ExpandDims", ReshapeGrad);
REGISTER_GRADIENT("Squeeze", ReshapeGrad);
REGISTER_GRADIENT("BroadcastTo", BroadcastToGrad);
REGISTER_GRADIENT("Transpose", TransposeGrad);
REGISTER_GRADIENT("ConcatV2", ConcatGrad);
REGISTER_GRADIENT("Split", SplitGrad);
REGISTER_GRADIENT("Pad", PadGrad);
REGISTER_GRADIENT("PadV2", PadV2Grad);
REGISTER_GRADIENT("Tile", TileGrad);
REGISTER_GRADIENT("Fill", FillGrad);
REGISTER_NO_GRADIENT("StopGradient");
// Outputs that depend on the input's shape only, or are integers.
REGISTER_NO_GRADIENT("Shape");
REGISTER_NO_GRADIENT("Size");
REGISTER_NO_GRADIENT("Rank");
REGISTER_NO_GRADIENT("ZerosLike");
REGISTER_NO_GRADIENT("OnesLike");
REGISTER_NO_GRADIENT("Range");
REGISTER_NO_GRADIENT("OneHot");

}  // namespace
}  // namespace dflow::autodiff
