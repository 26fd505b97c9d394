// Gradient rules of the softmax family (ops/softmax.cc), over the last axis.
// s = softmax(x) has Jacobian ds_j/dx_k = s_j (delta_jk - s_k), so
//   dx = (g - sum_j g_j s_j) * s.
#include "autodiff/gradients.h"
#include "ops/array.h"
#include "ops/math.h"
#include "ops/reduce.h"
#include "ops/softmax.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;

Output SumLast(const Scope& s, const Output& x) { return ops::Sum(s, x, -1, {.keep_dims = true}); }

// (g - sum(g * s)) * s
Output SoftmaxBackward(const Scope& s, const Output& g, const Output& softmax) {
  return ops::Mul(s, ops::Sub(s, g, SumLast(s, ops::Mul(s, g, softmax))), softmax);
}

Grads SoftmaxGrad(const Scope& s, Node* op, const Grads& g) {
  return {SoftmaxBackward(s, g[0], OutputOf(op))};
}
// y = x - logsumexp(x): dx = g - sum(g) * softmax(x), softmax = e^y
Grads LogSoftmaxGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::Sub(s, g[0], ops::Mul(s, SumLast(s, g[0]), ops::Exp(s, OutputOf(op))))};
}

// loss = -sum(labels * log softmax(x)), backprop = softmax(x) - labels.
// d loss / dx = backprop (the op's second output), so the first-order
// gradient is g_loss * backprop. A gradient arriving at `backprop` itself
// (differentiating twice) adds its softmax Jacobian-vector product.
Output FeaturesGrad(const Scope& s, Node* op, const Grads& g) {
  Output dx = ops::Mul(s, ops::ExpandDims(s, g[0], -1), OutputOf(op, 1));
  if (IsZeros(g[1])) return dx;
  Output softmax = ops::Softmax(s, Input0(op));
  return ops::Add(s, dx, SoftmaxBackward(s, g[1], softmax));
}

// d loss / d labels = -log softmax(x); d backprop / d labels = -1.
Grads CrossEntropyGrad(const Scope& s, Node* op, const Grads& g) {
  Output dlabels = ops::Mul(s, ops::ExpandDims(s, g[0], -1),
                            ops::Neg(s, ops::LogSoftmax(s, Input0(op))));
  if (!IsZeros(g[1])) dlabels = ops::Sub(s, dlabels, g[1]);
  return {FeaturesGrad(s, op, g), dlabels};
}
// Integer labels get no gradient.
Grads SparseCrossEntropyGrad(const Scope& s, Node* op, const Grads& g) {
  return {FeaturesGrad(s, op, g), Output()};
}

REGISTER_GRADIENT("Softmax", SoftmaxGrad);
REGISTER_GRADIENT("LogSoftmax", LogSoftmaxGrad);
REGISTER_GRADIENT("SoftmaxCrossEntropyWithLogits", CrossEntropyGrad);
REGISTER_GRADIENT("SparseSoftmaxCrossEntropyWithLogits", SparseCrossEntropyGrad);

}  // namespace
}  // namespace dflow::autodiff
