// Gradient rules of the convolution ops (ops/conv.cc). y = Conv2D(x, w) is
// bilinear: y = A_w x for a linear map A_w, and <g, A_w x> = <g, B_x w>.
// Conv2DBackpropInput(sizes, w, g) computes A_w^T g and
// Conv2DBackpropFilter(x, sizes, g) computes B_x^T g, so for a loss L with
// dL/dy = g:
//   y = Conv2D(x, w):                 dx = BackpropInput(shape(x), w, g)
//                                     dw = BackpropFilter(x, shape(w), g)
// and each backprop op is linear in both tensors it reads, with
// <G, A_w^T dy> = <A_w G, dy> = <B_G w, dy>:
//   dx = BackpropInput(s, w, dy):     d dy = Conv2D(G, w),  d w = BackpropFilter(G, shape(w), dy)
//   dw = BackpropFilter(x, s, dy):    d dy = Conv2D(x, G),  d x = BackpropInput(shape(x), G, dy)
// The sizes inputs get no gradient. Every op keeps the forward op's attrs.
#include "autodiff/gradients.h"
#include "ops/array.h"
#include "ops/conv.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;

ops::Conv2DAttrs ConvAttrsOf(Node* op) {
  auto narrow = [&](const char* name) {
    auto v = op->attr<std::vector<int64_t>>(name);
    return std::vector<int>(v.begin(), v.end());
  };
  return {narrow("strides"), narrow("dilations"), op->attr<std::string>("padding"),
          narrow("explicit_paddings")};
}

Grads Conv2DGrad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op), w = InputOf(op, 1);
  ops::Conv2DAttrs a = ConvAttrsOf(op);
  return {ops::Conv2DBackpropInput(s, ops::Shape(s, x), w, g[0], a),
          ops::Conv2DBackpropFilter(s, x, ops::Shape(s, w), g[0], a)};
}

Grads Conv2DBackpropInputGrad(const Scope& s, Node* op, const Grads& g) {
  Output w = InputOf(op, 1), dy = InputOf(op, 2);
  ops::Conv2DAttrs a = ConvAttrsOf(op);
  return {Output(), ops::Conv2DBackpropFilter(s, g[0], ops::Shape(s, w), dy, a),
          ops::Conv2D(s, g[0], w, a)};
}

Grads Conv2DBackpropFilterGrad(const Scope& s, Node* op, const Grads& g) {
  Output x = Input0(op), dy = InputOf(op, 2);
  ops::Conv2DAttrs a = ConvAttrsOf(op);
  return {ops::Conv2DBackpropInput(s, ops::Shape(s, x), g[0], dy, a), Output(),
          ops::Conv2D(s, x, g[0], a)};
}

REGISTER_GRADIENT("Conv2D", Conv2DGrad);
REGISTER_GRADIENT("Conv2DBackpropInput", Conv2DBackpropInputGrad);
REGISTER_GRADIENT("Conv2DBackpropFilter", Conv2DBackpropFilterGrad);
// Only inference graph passes write _FusedConv2D, after any gradients were
// built, so nothing ever differentiates it.
REGISTER_NO_GRADIENT("_FusedConv2D");

}  // namespace
}  // namespace dflow::autodiff
