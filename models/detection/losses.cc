// Detection losses built from ordinary ops; see losses.h for the math.
#include "models/detection/losses.h"

#include "ops/ops.h"

namespace dflow::models::detection {
namespace {

// x.shape[-1] as an int32 scalar, or as a vector [1] when keep_dim.
Output LastDim(const Scope& s, const Output& x, bool keep_dim) {
  ops::StridedSliceAttrs attrs;
  if (keep_dim) {
    attrs.end_mask = 1;  // x.shape[-1:]
  } else {
    attrs.shrink_axis_mask = 1;  // x.shape[-1]
  }
  return ops::StridedSlice(s, ops::Shape(s, x), {-1}, {0}, {1}, attrs);
}

}  // namespace

DetectionTargets DetectionTargetPlaceholders(const Scope& scope, const Scope& s, int64_t anchors) {
  DetectionTargets t;
  t.box_targets = ops::Placeholder(scope.WithOpName("box_targets"), DType::kFloat32,
                                   {-1, anchors, 4});
  t.class_targets = ops::Placeholder(scope.WithOpName("class_targets"), DType::kInt32,
                                     {-1, anchors});
  t.positive = ops::Cast(s, ops::Greater(s, t.class_targets, 0), DType::kFloat32);
  t.num_positive = ops::Maximum(s, ops::Sum(s, t.positive, {0, 1}), 1.0f);
  return t;
}

Output SmoothL1Loss(const Scope& scope, const Input& predictions, const Input& targets,
                    const Input& positive, float beta) {
  Scope s = scope.NewSubScope("SmoothL1Loss");
  Output abs_diff = ops::Abs(s, ops::Sub(s, predictions, targets));
  Output per_coordinate = abs_diff;
  if (beta > 0) {
    // With m = min(|d|, beta): 0.5 m^2 / beta + (|d| - m) is both branches
    // at once (|d| >= beta gives 0.5 beta + |d| - beta), without a Select.
    Output m = ops::Minimum(s, abs_diff, beta);
    per_coordinate = ops::Add(s, ops::Mul(s, ops::Square(s, m), 0.5f / beta),
                              ops::Sub(s, abs_diff, m));
  }
  Output mask = ops::ExpandDims(s, positive, -1);  // [..., A, 1] over the coordinates
  return ops::Sum(s, ops::Mul(s, per_coordinate, mask),
                  ops::Range(s, 0, ops::Rank(s, per_coordinate), 1));
}

Output SigmoidFocalLoss(const Scope& scope, const Input& logits, const Input& targets,
                        const Input& weights, const Input& num_positive,
                        FocalLossOptions options) {
  Scope s = scope.NewSubScope("SigmoidFocalLoss");
  Output x = logits.ToOutput(s);
  Output t = targets.ToOutput(s);
  Output ce = ops::Add(s, ops::Sub(s, ops::Relu(s, x), ops::Mul(s, x, t)),
                       ops::Softplus(s, ops::Neg(s, ops::Abs(s, x))));
  Output p = ops::Sigmoid(s, x);
  // 1 - p_t = p + t - 2 p t
  Output one_minus_pt = ops::Sub(s, ops::Add(s, p, t), ops::Mul(s, ops::Mul(s, p, t), 2.0f));
  Output modulating = options.gamma == 2.0f ? ops::Square(s, one_minus_pt)
                                            : ops::Pow(s, one_minus_pt, options.gamma);
  Output loss = ops::Mul(s, modulating, ce);
  if (options.alpha >= 0) {
    // alpha_t = (1 - alpha) + (2 alpha - 1) t
    Output alpha_t = ops::Add(s, ops::Mul(s, t, 2 * options.alpha - 1), 1 - options.alpha);
    loss = ops::Mul(s, alpha_t, loss);
  }
  loss = ops::Mul(s, loss, ops::ExpandDims(s, weights, -1));
  Output total = ops::Sum(s, loss, ops::Range(s, 0, ops::Rank(s, loss), 1));
  return ops::Div(s, total, ops::Maximum(s, num_positive, 1.0f));
}

Output HardNegativeMask(const Scope& scope, const Input& loss, const Input& labels,
                        int64_t neg_pos_ratio) {
  Scope s = scope.NewSubScope("HardNegativeMask");
  Output label = labels.ToOutput(s);
  Output negative = ops::Cast(s, ops::Equal(s, label, 0), DType::kFloat32);
  Output positive = ops::Cast(s, ops::Greater(s, label, 0), DType::kFloat32);
  // Rank the candidates by loss; every other anchor gets -1 (below any
  // cross-entropy, which is >= 0), so it sorts after all of them.
  Output ranked = ops::Sub(s, ops::Mul(s, ops::StopGradient(s, loss), negative),
                           ops::Sub(s, 1.0f, negative));
  Output anchors = LastDim(s, ranked, false);
  Output order = ops::TopKV2(s, ranked, anchors).indices;  // [N, A], best first
  // The rank of each anchor is the inverse permutation of `order`, which is
  // its argsort: sort the (distinct) indices ascending.
  Output rank = ops::TopKV2(s, ops::Neg(s, ops::Cast(s, order, DType::kFloat32)), anchors).indices;
  Output wanted = ops::Minimum(s, ops::Mul(s, ops::Sum(s, positive, -1, {true}),
                                           static_cast<float>(neg_pos_ratio)),
                               ops::Sum(s, negative, -1, {true}));  // [N, 1]
  Output keep = ops::Less(s, ops::Cast(s, rank, DType::kFloat32), wanted);
  return ops::Mul(s, ops::Cast(s, keep, DType::kFloat32), negative);
}

Output SsdConfidenceLoss(const Scope& scope, const Input& logits, const Input& labels,
                         int64_t neg_pos_ratio) {
  Scope s = scope.NewSubScope("SsdConfidenceLoss");
  Output x = logits.ToOutput(s);
  Output label = labels.ToOutput(s);
  // Per-anchor cross-entropy on [N * A, C]; ignored anchors (-1) get class 0
  // here and are masked out below.
  Output flat_logits = ops::Reshape(s, x, ops::Concat(s, {Input({-1}), LastDim(s, x, true)}, 0));
  Output flat_labels = ops::Reshape(s, ops::Maximum(s, label, 0), {-1});
  Output flat_loss = ops::SparseSoftmaxCrossEntropyWithLogits(s, flat_logits, flat_labels).loss;
  Output loss = ops::Reshape(s, flat_loss, ops::Shape(s, label));
  Output positive = ops::Cast(s, ops::Greater(s, label, 0), DType::kFloat32);
  Output kept = ops::Add(s, positive, HardNegativeMask(s, loss, label, neg_pos_ratio));
  Output total = ops::Sum(s, ops::Mul(s, loss, kept), {0, 1});
  return ops::Div(s, total, ops::Maximum(s, ops::Sum(s, positive, {0, 1}), 1.0f));
}

}  // namespace dflow::models::detection
