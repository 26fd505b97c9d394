// Gradient rules of the array ops (ops/array.cc, array_index.cc,
// array_shapes.cc): ops that move elements without changing them route the
// gradient back to where each element came from.
#include "autodiff/gradients.h"
#include "ops/array.h"
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

REGISTER_GRADIENT("Identity", IdentityGrad);
REGISTER_GRADIENT("Reshape", ReshapeGrad);
REGISTER_GRADIENT("ExpandDims", ReshapeGrad);
REGISTER_GRADIENT("Squeeze", ReshapeGrad);
REGISTER_GRADIENT("BroadcastTo", BroadcastToGrad);
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
