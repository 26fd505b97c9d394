// Softmax, LogSoftmax and the softmax cross-entropy losses: declarations,
// shape functions, builders. Kernels: ops/cpu/softmax.cc, ops/cpu/cross_entropy.cc.
#include "ops/softmax.h"

namespace dflow {
namespace {

void SoftmaxShape(InferenceContext& ctx) {
  const Shape& logits = ctx.input_shape(0);
  if (!logits.unknown_rank() && logits.rank() < 1) ctx.Fail("logits must have rank >= 1, got a scalar");
  ctx.set_output(0, logits);
}

// Batch and class dims of `features`, merged with `labels`' batch dim.
Shape FeaturesMatrix(InferenceContext& ctx) {
  Shape features = ctx.input_shape(0);
  if (features.unknown_rank()) return Shape{-1, -1};
  if (features.rank() != 2) ctx.Fail("features must be [batch, classes], got ", features.ToString());
  return features;
}

void CrossEntropyShape(InferenceContext& ctx) {
  Shape features = FeaturesMatrix(ctx);
  const Shape& labels = ctx.input_shape(1);
  if (!labels.unknown_rank() && labels.rank() != 2)
    ctx.Fail("labels must be [batch, classes], got ", labels.ToString());
  if (!features.IsCompatibleWith(labels.unknown_rank() ? Shape{-1, -1} : labels))
    ctx.Fail("features ", features.ToString(), " and labels ", labels.ToString(),
             " must have the same shape");
  Shape both = labels.unknown_rank() ? features : features.Merge(labels);
  ctx.set_output(0, Shape{both.dim(0)});
  ctx.set_output(1, both);
}

void SparseCrossEntropyShape(InferenceContext& ctx) {
  Shape features = FeaturesMatrix(ctx);
  const Shape& labels = ctx.input_shape(1);
  if (!labels.unknown_rank() && labels.rank() != 1)
    ctx.Fail("labels must be [batch] class indices, got ", labels.ToString());
  int64_t batch = features.dim(0);
  if (!labels.unknown_rank() && labels.dim(0) >= 0) {
    if (batch >= 0 && batch != labels.dim(0))
      ctx.Fail("features ", features.ToString(), " and labels ", labels.ToString(),
               " differ in batch size");
    batch = labels.dim(0);
  }
  ctx.set_output(0, Shape{batch});
  ctx.set_output(1, Shape{batch, features.dim(1)});
}

}  // namespace

REGISTER_OP("Softmax")
    .input("logits", "T")
    .output("softmax", "T")
    .type_attr("T", kFloatTypes)
    .shape_fn(SoftmaxShape)
    .doc("softmax[..., j] = exp(logits[..., j]) / sum_k exp(logits[..., k]) over the last axis, "
         "computed with the row maximum subtracted first so large logits do not overflow.");

REGISTER_OP("LogSoftmax")
    .input("logits", "T")
    .output("logsoftmax", "T")
    .type_attr("T", kFloatTypes)
    .shape_fn(SoftmaxShape)
    .doc("logsoftmax[..., j] = logits[..., j] - log(sum_k exp(logits[..., k])) over the last "
         "axis, computed as (x - max) - log(sum exp(x - max)).");

REGISTER_OP("SoftmaxCrossEntropyWithLogits")
    .input("features", "T")
    .input("labels", "T")
    .output("loss", "T")
    .output("backprop", "T")
    .type_attr("T", kFloatTypes)
    .shape_fn(CrossEntropyShape)
    .doc("Cross entropy between softmax(features) and the label distribution, per row: "
         "loss[b] = sum_c labels[b,c] * (logsumexp(features[b]) - features[b,c]); backprop = "
         "softmax(features) - labels. Both inputs are [batch, classes] of the same shape "
         "(TensorFlow also broadcasts them; dflow does not).");

REGISTER_OP("SparseSoftmaxCrossEntropyWithLogits")
    .input("features", "T")
    .input("labels", "Tlabels")
    .output("loss", "T")
    .output("backprop", "T")
    .type_attr("T", kFloatTypes)
    .type_attr("Tlabels", kIndexTypes, DType::kInt64)
    .shape_fn(SparseCrossEntropyShape)
    .doc("Cross entropy with one class index per row: loss[b] = logsumexp(features[b]) - "
         "features[b, labels[b]]; backprop = softmax(features) - one_hot(labels). features is "
         "[batch, classes], labels [batch] with values in [0, classes); any other label is an "
         "error naming it.");

namespace ops {

Output Softmax(const Scope& scope, const Input& logits) { return scope.AddOp("Softmax", {logits}); }

Output LogSoftmax(const Scope& scope, const Input& logits) {
  return scope.AddOp("LogSoftmax", {logits});
}

CrossEntropy SoftmaxCrossEntropyWithLogits(const Scope& scope, const Input& features,
                                           const Input& labels) {
  Node* node = scope.AddOp("SoftmaxCrossEntropyWithLogits", {features, labels});
  return {Output(node, 0), Output(node, 1)};
}

CrossEntropy SparseSoftmaxCrossEntropyWithLogits(const Scope& scope, const Input& features,
                                                 const Input& labels) {
  // Convert literals here: AddOp would give literal labels the features' dtype.
  Scope literals = scope.NewSubScope("");
  Node* node = scope.AddOp("SparseSoftmaxCrossEntropyWithLogits",
                           {features.ToOutput(literals), labels.ToOutput(literals)});
  return {Output(node, 0), Output(node, 1)};
}

}  // namespace ops
}  // namespace dflow
