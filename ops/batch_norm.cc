// FusedBatchNorm and FusedBatchNormGrad: declarations, shape functions and
// builders; the moving-average builder. Kernels: ops/cpu/batch_norm.cc,
// ops/cpu/batch_norm_grad.cc.
#include "ops/batch_norm.h"

#include "ops/math.h"
#include "ops/state.h"

namespace dflow {
namespace {

// x must be NHWC; returns its channel count (-1 when unknown).
int64_t NhwcChannels(const InferenceContext& ctx, int input, const char* what) {
  const Shape& x = ctx.input_shape(input);
  if (x.unknown_rank()) return -1;
  if (x.rank() != 4) ctx.Fail(what, " must be NHWC (rank 4), got ", x.ToString());
  return x.dim(3);
}

// A per-channel vector input: rank 1 and, when both are known, `channels`
// long (or empty, when `may_be_empty`). Returns the channel count it implies.
int64_t CheckChannelVector(const InferenceContext& ctx, int input, const char* what,
                           int64_t channels, bool may_be_empty = false) {
  const Shape& v = ctx.input_shape(input);
  if (v.unknown_rank()) return channels;
  if (v.rank() != 1) ctx.Fail(what, " must be a vector, got shape ", v.ToString());
  int64_t n = v.dim(0);
  if (n < 0 || (may_be_empty && n == 0)) return channels;
  if (channels >= 0 && n != channels)
    ctx.Fail(what, " has ", n, " elements, expected one per channel (", channels, ")");
  return n;
}

void BatchNormShape(InferenceContext& ctx) {
  int64_t c = NhwcChannels(ctx, 0, "x");
  c = CheckChannelVector(ctx, 1, "scale", c);
  c = CheckChannelVector(ctx, 2, "offset", c);
  bool training = ctx.attr<bool>("is_training");
  c = CheckChannelVector(ctx, 3, "mean", c, training);
  c = CheckChannelVector(ctx, 4, "variance", c, training);
  const Shape& x = ctx.input_shape(0);
  if (x.unknown_rank()) ctx.set_output(0, Shape{-1, -1, -1, c});
  else ctx.set_output(0, Shape{x.dim(0), x.dim(1), x.dim(2), c});
  for (int i = 1; i < 5; ++i) ctx.set_output(i, Shape{c});
}

void BatchNormGradShape(InferenceContext& ctx) {
  NhwcChannels(ctx, 0, "y_backprop");
  int64_t c = NhwcChannels(ctx, 1, "x");
  Shape x = ctx.input_shape(1).unknown_rank() ? Shape{-1, -1, -1, -1} : ctx.input_shape(1);
  if (!ctx.input_shape(0).IsCompatibleWith(x))
    ctx.Fail("y_backprop ", ctx.input_shape(0).ToString(), " and x ", x.ToString(),
             " must have the same shape");
  x = ctx.input_shape(0).unknown_rank() ? x : x.Merge(ctx.input_shape(0));
  c = CheckChannelVector(ctx, 2, "scale", x.dim(3) >= 0 ? x.dim(3) : c);
  c = CheckChannelVector(ctx, 3, "reserve_space_1", c);
  c = CheckChannelVector(ctx, 4, "reserve_space_2", c);
  ctx.set_output(0, Shape{x.dim(0), x.dim(1), x.dim(2), c});
  ctx.set_output(1, Shape{c});
  ctx.set_output(2, Shape{c});
}

}  // namespace

REGISTER_OP("FusedBatchNorm")
    .input("x", "T").input("scale", "T").input("offset", "T").input("mean", "T")
    .input("variance", "T")
    .output("y", "T").output("batch_mean", "T").output("batch_variance", "T")
    .output("reserve_space_1", "T").output("reserve_space_2", "T")
    .attr<double>("epsilon", 0.001).attr<bool>("is_training", true)
    .type_attr("T", kFloatTypes)
    .shape_fn(BatchNormShape)
    .doc("Batch normalisation of NHWC x per channel: y = scale * (x - mean) / sqrt(variance + "
         "epsilon) + offset. Training: mean and variance are the batch's (over N, H, W; the "
         "biased variance normalises), batch_mean/batch_variance output them with the "
         "variance unbiased (times M / (M - 1), M = N*H*W) as TensorFlow, and the mean/variance "
         "inputs are not read. Inference: the mean/variance inputs are used and passed "
         "through. reserve_space_1/2 hold the mean and (biased) variance used, for "
         "FusedBatchNormGrad.");

REGISTER_OP("FusedBatchNormGrad")
    .input("y_backprop", "T").input("x", "T").input("scale", "T")
    .input("reserve_space_1", "T").input("reserve_space_2", "T")
    .output("x_backprop", "T").output("scale_backprop", "T").output("offset_backprop", "T")
    .attr<double>("epsilon", 0.001).attr<bool>("is_training", true)
    .type_attr("T", kFloatTypes)
    .shape_fn(BatchNormGradShape)
    .doc("FusedBatchNorm's backward pass from the mean (reserve_space_1) and variance "
         "(reserve_space_2) it used; sums over N, H, W in double. With xhat = (x - mean) * "
         "inv_std: training dx = scale * inv_std / M * (M dy - sum(dy) - xhat sum(dy xhat)), "
         "inference dx = scale * inv_std * dy; scale_backprop = sum(dy xhat), "
         "offset_backprop = sum(dy).");

namespace ops {

FusedBatchNormOutputs FusedBatchNorm(const Scope& scope, const Input& x, const Input& scale,
                                     const Input& offset, const Input& mean, const Input& variance,
                                     FusedBatchNormAttrs attrs) {
  Node* node = scope.AddOp("FusedBatchNorm", {x, scale, offset, mean, variance},
                           {{"epsilon", attrs.epsilon}, {"is_training", attrs.is_training}});
  return {Output(node, 0), Output(node, 1), Output(node, 2), Output(node, 3), Output(node, 4)};
}

FusedBatchNormGradOutputs FusedBatchNormGrad(const Scope& scope, const Input& y_backprop,
                                             const Input& x, const Input& scale,
                                             const Input& reserve_space_1,
                                             const Input& reserve_space_2,
                                             FusedBatchNormAttrs attrs) {
  Node* node = scope.AddOp("FusedBatchNormGrad",
                           {y_backprop, x, scale, reserve_space_1, reserve_space_2},
                           {{"epsilon", attrs.epsilon}, {"is_training", attrs.is_training}});
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

// variable - (1 - decay) * (variable - value) = decay * variable + (1 - decay) * value
Output AssignMovingAverage(const Scope& scope, const Output& variable, const Input& value,
                           const Input& decay) {
  Scope s = scope.NewSubScope("moving_average");
  Output d = decay.ToOutput(s, variable.dtype());
  Output step = Mul(s, Sub(s, variable, value), Sub(s, 1.0, d));
  return AssignSub(scope, variable, step);
}

}  // namespace ops
}  // namespace dflow
