// Gradient rules of the pooling ops (ops/pool.cc) and BiasAdd (ops/nn.cc).
// x is the forward input, y its output, g the incoming gradient. Each rule
// passes the forward op's whole window (ksize, strides, padding and
// explicit_paddings) on, so the backward windows sit where the forward ones did.
//   MaxPool:         dx = MaxPoolGrad(x, y, g)    (g routed to each window's first max)
//   AvgPool:         dx = AvgPoolGrad(shape(x), g)
//   AvgPoolGrad:     linear in g; its adjoint is AvgPool(g)
//   MaxPoolGrad:     linear in g (a scatter to the argmax); its adjoint is the
//                    gather MaxPoolGradGrad. The argmax positions are
//                    piecewise constant in orig_input: no gradient there.
//   MaxPoolGradGrad: the adjoint of the gather is the scatter, MaxPoolGrad.
//   BiasAdd:         d value = g, d bias = sum of g over all but the last dim
//   BiasAddGrad:     the adjoint of that sum broadcasts g back over the dims
#include "autodiff/gradients.h"
#include "ops/array.h"
#include "ops/nn.h"
#include "ops/pool.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;

ops::PoolWindow WindowOf(Node* op) {
  return {op->attr<std::vector<int64_t>>("ksize"), op->attr<std::vector<int64_t>>("strides"),
          op->attr<std::string>("padding"), op->attr<std::vector<int64_t>>("explicit_paddings")};
}

Grads MaxPoolGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::MaxPoolGrad(s, Input0(op), OutputOf(op), g[0], WindowOf(op))};
}
Grads MaxPoolGradGrad(const Scope& s, Node* op, const Grads& g) {
  return {Output(), Output(),
          ops::MaxPoolGradGrad(s, Input0(op), InputOf(op, 1), g[0], WindowOf(op))};
}
Grads MaxPoolGradGradGrad(const Scope& s, Node* op, const Grads& g) {
  return {Output(), Output(),
          ops::MaxPoolGrad(s, Input0(op), InputOf(op, 1), g[0], WindowOf(op))};
}
Grads AvgPoolGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::AvgPoolGrad(s, ops::Shape(s, Input0(op)), g[0], WindowOf(op))};
}
Grads AvgPoolGradGrad(const Scope& s, Node* op, const Grads& g) {
  return {Output(), ops::AvgPool(s, g[0], WindowOf(op))};
}

Grads BiasAddGrad(const Scope& s, Node*, const Grads& g) {
  return {g[0], ops::BiasAddGrad(s, g[0])};
}
Grads BiasAddGradGrad(const Scope& s, Node* op, const Grads& g) {
  return {ops::BroadcastTo(s, g[0], ops::Shape(s, Input0(op)))};
}

REGISTER_GRADIENT("MaxPool", MaxPoolGrad);
REGISTER_GRADIENT("MaxPoolGrad", MaxPoolGradGrad);
REGISTER_GRADIENT("MaxPoolGradGrad", MaxPoolGradGradGrad);
REGISTER_GRADIENT("AvgPool", AvgPoolGrad);
REGISTER_GRADIENT("AvgPoolGrad", AvgPoolGradGrad);
REGISTER_GRADIENT("BiasAdd", BiasAddGrad);
REGISTER_GRADIENT("BiasAddGrad", BiasAddGradGrad);

}  // namespace
}  // namespace dflow::autodiff
