// Gradient rules of the activation ops (ops/nn.cc). x is the op's input
// ("features"), y its output, g the incoming gradient.
#include "autodiff/gradients.h"
#include "ops/math.h"
#include "ops/array.h"
#include "ops/nn.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;

// d/dx max(x, 0) = [x > 0]; y > 0 exactly where x > 0, so ReluGrad reads y
// and x can be freed after the forward pass.
Grads ReluGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::ReluGrad(s, g[0], OutputOf(op))};
}
// ReluGrad(g, f) = g [f > 0] is linear in g; f only switches it (no gradient).
Grads ReluGradGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::ReluGrad(s, g[0], InputOf(op, 1)), Output()};
}
// d/dx min(max(x, 0), 6) = [0 < x < 6]
Grads Relu6Grad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op);
  Output inside = ops::LogicalAnd(s, ops::Greater(s, x, ops::ZerosLike(s, x)), ops::Less(s, x, 6.0));
  return {ops::Select(s, inside, g[0], ops::ZerosLike(s, g[0]))};
}
// d/dx = 1 for x > 0, alpha below
Grads LeakyReluGrad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op);
  Output scaled = ops::Mul(s, g[0], op->attr<double>("alpha"));
  return {ops::Select(s, ops::Greater(s, x, ops::ZerosLike(s, x)), g[0], scaled)};
}
// d/dx = 1 for x > 0, e^x = y + 1 below
Grads EluGrad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op);
  Output below = ops::Mul(s, g[0], ops::Add(s, OutputOf(op), 1.0));
  return {ops::Select(s, ops::Greater(s, x, ops::ZerosLike(s, x)), g[0], below)};
}
// d/dx log(1 + e^x) = sigmoid(x)
Grads SoftplusGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::Mul(s, g[0], ops::Sigmoid(s, Input0(op)))};
}

REGISTER_GRADIENT("Relu", ReluGrad);
REGISTER_GRADIENT("ReluGrad", ReluGradGrad);
REGISTER_GRADIENT("Relu6", Relu6Grad);
REGISTER_GRADIENT("LeakyRelu", LeakyReluGrad);
REGISTER_GRADIENT("Elu", EluGrad);
REGISTER_GRADIENT("Softplus", SoftplusGrad);

}  // namespace
}  // namespace dflow::autodiff
