// Gradient rules of the reductions (ops/reduce.cc). A reduction maps x to
// y over some axes; its gradient first reshapes g to y's keep_dims shape
// (the reduced dims as 1), then broadcasts it back over x:
//   Sum:      dx = broadcast(g)
//   Mean:     dx = broadcast(g) / n,  n = elements folded into each output
//   Max, Min: dx = broadcast(g) * [x == broadcast(y)] / (number of ties)
//   Prod:     dx = broadcast(g) * (product of the other elements)
#include "autodiff/gradients.h"
#include "ops/array.h"
#include "ops/math.h"
#include "ops/reduce.h"
#include "ops/state.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;

// x's shape with the reduced dims set to 1, as an int32 vector. With x's
// rank and the axes known while building, the mask is a constant; else it
// is computed at run time: mask[i] = any_j (i == axes[j] mod rank).
Output KeptShape(const Scope& s, const Output& x, const Output& axes) {
  std::optional<Tensor> axis_value = KnownValue(axes);
  Output shape = ops::Shape(s, x);
  Output ones = ops::OnesLike(s, shape);
  if (axis_value && !x.shape().unknown_rank()) {
    std::vector<bool> mask = ReductionMask(ReadInt64s(*axis_value, "axis"), x.shape());
    Tensor reduced(DType::kBool, Shape{static_cast<int64_t>(mask.size())});
    for (size_t i = 0; i < mask.size(); ++i) reduced.data<bool>()[i] = mask[i];
    return ops::Select(s, ops::Const(s, reduced), ones, shape);
  }
  Output rank = ops::Rank(s, x);
  Output dims = ops::ExpandDims(s, ops::Range(s, 0, rank, 1), 1);
  Output wrapped = ops::ExpandDims(
      s, ops::Reshape(s, ops::FloorMod(s, ops::Cast(s, axes, DType::kInt32), rank), {-1}), 0);
  Output hits = ops::Cast(s, ops::Equal(s, dims, wrapped), DType::kInt32);
  Output mask = ops::Greater(s, ops::Sum(s, hits, 1), 0);
  return ops::Select(s, mask, ones, shape);
}

// g (y's shape) broadcast back to x's shape.
Output BroadcastBack(const Scope& s, Node* op, const Output& g) {
  Output x = Input0(op);
  Output kept = op->attr<bool>("keep_dims") ? g : ops::Reshape(s, g, KeptShape(s, x, InputOf(op, 1)));
  return ops::BroadcastTo(s, kept, ops::Shape(s, x));
}

// y itself, broadcast back to x's shape.
Output BroadcastOutput(const Scope& s, Node* op) { return BroadcastBack(s, op, OutputOf(op)); }

Grads SumGrad(const Scope& s, Node* op, const Grads& g) {
  return {BroadcastBack(s, op, g[0]), Output()};
}

Grads MeanGrad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op), y = OutputOf(op);
  Output count = ops::Div(s, ops::Size(s, x), ops::Maximum(s, ops::Size(s, y), 1));
  return {ops::Div(s, BroadcastBack(s, op, g[0]), ops::Cast(s, count, x.dtype())), Output()};
}

// Ties share the gradient equally, as in TensorFlow.
Grads ExtremumGrad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op);
  Output hit = ops::Cast(s, ops::Equal(s, x, BroadcastOutput(s, op)), x.dtype());
  Output ties = ops::Sum(s, hit, InputOf(op, 1), {.keep_dims = true});
  return {ops::Div(s, ops::Mul(s, BroadcastBack(s, op, g[0]), hit), ties), Output()};
}

// The product of the other elements of x's group, without dividing by a
// zero: with no zero in the group it is y / x; with exactly one zero, the
// zero's entry is the product of the non-zeros and every other entry is 0;
// with two or more zeros every entry is 0.
Grads ProdGrad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op), axes = InputOf(op, 1);
  Output zero = ops::ZerosLike(s, x), one = ops::OnesLike(s, x);
  Output is_zero = ops::Equal(s, x, zero);
  Output zeros_in_group = ops::Sum(s, ops::Cast(s, is_zero, x.dtype()), axes, {.keep_dims = true});
  Output nonzero_product = ops::Prod(s, ops::Select(s, is_zero, one, x), axes, {.keep_dims = true});
  Output no_zero = ops::Div(s, nonzero_product, ops::Select(s, is_zero, one, x));
  Output one_zero = ops::Select(s, is_zero, nonzero_product, zero);
  Output others = ops::Select(s, ops::Equal(s, zeros_in_group, 0.0), no_zero,
                              ops::Select(s, ops::Equal(s, zeros_in_group, 1.0), one_zero, zero));
  return {ops::Mul(s, BroadcastBack(s, op, g[0]), others), Output()};
}

REGISTER_GRADIENT("Sum", SumGrad);
REGISTER_GRADIENT("Mean", MeanGrad);
REGISTER_GRADIENT("Max", ExtremumGrad);
REGISTER_GRADIENT("Min", ExtremumGrad);
REGISTER_GRADIENT("Prod", ProdGrad);
REGISTER_NO_GRADIENT("ArgMax");
REGISTER_NO_GRADIENT("ArgMin");

// SumToShape undoes broadcasting; its gradient broadcasts back.
Grads SumToShapeGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::BroadcastTo(s, g[0], ops::Shape(s, Input0(op))), Output()};
}
REGISTER_GRADIENT("SumToShape", SumToShapeGrad);

}  // namespace
}  // namespace dflow::autodiff
