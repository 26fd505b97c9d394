// Gradient rules of the detection ops (ops/detection.cc). Only TopKV2's
// values are differentiable; NMS, its combined form and BoxIou select or
// compare boxes and declare no gradient (as in TensorFlow).
#include "autodiff/gradients.h"
#include "autodiff/shape_math.h"
#include "ops/array.h"
#include "ops/math.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;

// values[r, j] = x[r, indices[r, j]] for each row r of the last dimension:
// dx[r, indices[r, j]] += g[r, j], zeros elsewhere. Flattened, entry p of g
// (row p / k) goes to x's flat position indices[p] + (p / k) * n, so one
// UnsortedSegmentSum over x's size scatters every row at once.
Grads TopKGrad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op), indices = OutputOf(op, 1);
  IntValue shape = ShapeOf(s, x);
  IntValue last = IntSub(s, RankOf(s, x), IntValue::Scalar(1));
  IntValue n = IntAt(s, shape, last);
  IntValue k = IntAt(s, ShapeOf(s, indices), last);
  Output position = ops::Range(s, 0, SizeOf(s, indices).Out(s), 1);
  Output row = ops::FloorDiv(s, position, ops::Maximum(s, k.Out(s), 1));
  Output ids = ops::Add(s, ops::Reshape(s, indices, {-1}), ops::Mul(s, row, n.Out(s)));
  Output sums = ops::UnsortedSegmentSum(s, ops::Reshape(s, g[0], {-1}), ids, SizeOf(s, x).Out(s));
  return {ops::Reshape(s, sums, shape.Out(s)), Output()};
}

}  // namespace

REGISTER_GRADIENT("TopKV2", TopKGrad);
REGISTER_NO_GRADIENT("NonMaxSuppressionV5");
REGISTER_NO_GRADIENT("CombinedNonMaxSuppression");
REGISTER_NO_GRADIENT("BoxIou");

}  // namespace dflow::autodiff
