// Detection losses as graph functions of ordinary ops (so AddGradients
// differentiates them): smooth-L1 box regression, the sigmoid focal loss of
// RetinaNet (Lin et al. 2017) and SSD's softmax loss with hard-negative
// mining (Liu et al. 2016, section 2.2).
#pragma once

#include <cstdint>

#include "graph/scope.h"

namespace dflow::models::detection {

// The fed targets of a single-shot detector's loss, as matching.h makes
// them: placeholders "box_targets" and "class_targets" named under `scope`,
// and the positives they mark, built under `s`.
struct DetectionTargets {
  Output box_targets;    // float32 [N, A, 4]
  Output class_targets;  // int32 [N, A]: > 0 an object's class, 0 background, -1 ignored
  Output positive;       // float32 [N, A]: 1 where class_targets > 0, else 0
  Output num_positive;   // float32 scalar: max(1, the positives in the batch)
};
DetectionTargets DetectionTargetPlaceholders(const Scope& scope, const Scope& s, int64_t anchors);

// Smooth L1 (Huber with beta) of d = predictions - targets, per coordinate
//   0.5 d^2 / beta  if |d| < beta,   |d| - 0.5 beta  otherwise
// (beta = 0: plain L1), summed over the 4 coordinates of the positive
// anchors. predictions, targets [..., A, 4]; positive [..., A] float32, 1 for
// a positive anchor and 0 otherwise. Returns the unnormalised scalar sum:
// divide it by the number of positives.
Output SmoothL1Loss(const Scope& scope, const Input& predictions, const Input& targets,
                    const Input& positive, float beta = 1.0f);

struct FocalLossOptions {
  float alpha = 0.25f;  // weight of the positive class; < 0: no weighting
  float gamma = 2.0f;   // focusing parameter
};

// Sigmoid focal loss, summed over every anchor and class and divided by
// max(num_positive, 1) (a float32 scalar):
//   FL = alpha_t (1 - p_t)^gamma CE,  p = sigmoid(x),
//   p_t = p t + (1 - p)(1 - t),  alpha_t = alpha t + (1 - alpha)(1 - t),
//   CE = -log p_t = max(x, 0) - x t + log(1 + exp(-|x|))  (stable from logits).
// logits, targets [..., A, K]: targets one-hot per anchor (all zeros for
// background); weights [..., A]: 1, or 0 for the anchors matching ignored.
Output SigmoidFocalLoss(const Scope& scope, const Input& logits, const Input& targets,
                        const Input& weights, const Input& num_positive,
                        FocalLossOptions options = {});

// SSD's confidence loss: softmax cross-entropy per anchor, over the
// positives and, per image, the negatives with the largest loss, at most
// neg_pos_ratio times that image's positives; summed and divided by the
// number of positives in the batch (at least 1). logits [N, A, C] with
// class 0 the background; labels int32 [N, A]: > 0 an object's class, 0
// background, -1 ignored (neither positive nor a candidate negative). The
// ranking (TopKV2, ties to the lower anchor index) uses a stopped-gradient
// copy of the loss, so gradients reach only the kept anchors' logits.
Output SsdConfidenceLoss(const Scope& scope, const Input& logits, const Input& labels,
                         int64_t neg_pos_ratio = 3);

// The mask [N, A] (float32) of the negatives SsdConfidenceLoss keeps, from
// a per-anchor loss [N, A] and the labels: exposed for tests and for logging.
Output HardNegativeMask(const Scope& scope, const Input& loss, const Input& labels,
                        int64_t neg_pos_ratio = 3);

}  // namespace dflow::models::detection
