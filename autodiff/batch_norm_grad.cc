// Gradient rule of FusedBatchNorm (ops/batch_norm.cc). Outputs: y (0),
// batch_mean (1), batch_variance (2), reserve_space_1 (3, the mean used),
// reserve_space_2 (4, the biased variance used). FusedBatchNormGrad gives
// dx, dscale and doffset from g_y. In training mode the statistics outputs
// are functions of x too, and gradients arriving at them add, with M = N*H*W
// and sums over nothing (per element, broadcast over the channel):
//   mean = sum(x) / M:                        dx += (g_1 + g_3) / M
//   unbiased var = sum((x - mean)^2) / (M-1): dx += 2 (x - mean) g_2 / max(M - 1, 1)
//   biased var = sum((x - mean)^2) / M:       dx += 2 (x - mean) g_4 / M
// (the variances' dependence through the mean sums to zero). In inference
// mode those outputs pass the mean/variance inputs through, and the
// mean/variance inputs get no gradient in either mode (as TensorFlow).
//
// FusedBatchNormGrad has no gradient (no second derivatives through batch
// norm), as declared below.
#include "autodiff/gradients.h"
#include "ops/array.h"
#include "ops/batch_norm.h"
#include "ops/math.h"

namespace dflow::autodiff {
namespace {

using Grads = std::vector<Output>;

// dx contributions of gradients at the statistics outputs (training only).
Output StatisticsGrad(const Scope& s, Node* op, const Grads& g, Output dx) {
  Output x = Input0(op);
  DType t = x.dtype();
  Output m = ops::Div(s, ops::Cast(s, ops::Size(s, x), t), ops::Cast(s, ops::Size(s, InputOf(op, 1)), t));
  Output centered = ops::Sub(s, x, OutputOf(op, 3));
  if (!IsZeros(g[1])) dx = ops::Add(s, dx, ops::Div(s, g[1], m));
  if (!IsZeros(g[3])) dx = ops::Add(s, dx, ops::Div(s, g[3], m));
  if (!IsZeros(g[2])) {
    Output divisor = ops::Maximum(s, ops::Sub(s, m, 1.0), 1.0);
    dx = ops::Add(s, dx, ops::Mul(s, centered, ops::Div(s, ops::Mul(s, g[2], 2.0), divisor)));
  }
  if (!IsZeros(g[4]))
    dx = ops::Add(s, dx, ops::Mul(s, centered, ops::Div(s, ops::Mul(s, g[4], 2.0), m)));
  return dx;
}

Grads FusedBatchNormGrad(const Scope& s, Node* op, const Grads& g) {
  ops::FusedBatchNormAttrs attrs{op->attr<double>("epsilon"), op->attr<bool>("is_training")};
  auto grads = ops::FusedBatchNormGrad(s, g[0], Input0(op), InputOf(op, 1), OutputOf(op, 3),
                                       OutputOf(op, 4), attrs);
  Output dx = attrs.is_training ? StatisticsGrad(s, op, g, grads.x_backprop) : grads.x_backprop;
  return {dx, grads.scale_backprop, grads.offset_backprop, Output(), Output()};
}

REGISTER_GRADIENT("FusedBatchNorm", FusedBatchNormGrad);
REGISTER_NO_GRADIENT("FusedBatchNormGrad");

}  // namespace
}  // namespace dflow::autodiff
