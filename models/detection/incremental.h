// Incremental learning of detectors without catastrophic forgetting
// (Shmelkov et al. 2017, "Incremental Learning of Object Detectors without
// Catastrophic Forgetting"; Learning without Forgetting, Li & Hoiem 2016): the
// old detector (the teacher) and its copy with a wider class head (the
// student) run on the same images, and two distillation terms keep the
// student's old-class scores and boxes close to the teacher's while it
// learns the new classes.
//
//   student logits [N, A, K_new] --slice K_old--+
//   teacher logits [N, A, K_old] ----------------+--> distill_cls (mean squared difference)
//   student boxes, teacher boxes, teacher foreground ---> distill_box (weighted smooth-L1)
#pragma once

#include <cstdint>

#include "graph/scope.h"
#include "graph/tensor.h"

namespace dflow::models::detection {

// How a network turns class logits into scores.
enum class ClassScores {
  kSoftmaxWithBackground,  // SSD: column 0 is the background
  kSigmoid,                // RetinaNet: one sigmoid per class, no background column
};

struct DistillationInputs {
  Output teacher_logits;  // float32 [N, A, K_old]
  Output teacher_boxes;   // float32 [N, A, 4]
  Output student_logits;  // float32 [N, A, K_new]: its first K_old columns are the old classes
  Output student_boxes;   // float32 [N, A, 4]
  int64_t old_columns = 0;  // K_old: the teacher's class columns (SSD: classes + background)
  ClassScores scores = ClassScores::kSoftmaxWithBackground;
  // The class term: the logits' squared difference on every anchor
  // (incremental learning, equation 3.2); or, for knowledge distillation of
  // a smaller detector, soft targets (Hinton et al. 2015): the KL divergence
  // of the student's class probabilities from the teacher's on each anchor
  // (SSD: one softmax with the background; RetinaNet: a Bernoulli per class),
  // weighted by the teacher's foreground score, over the weights' sum (at
  // least 1), as the box term is.
  bool soft_targets = false;
  // Soft targets at a temperature T: both sides' logits divided by T
  // before the softmax (or sigmoid), the KL multiplied by T^2 so that its
  // gradients keep their size (Hinton et al. 2015). T > 1 shows the student
  // more of how the teacher ranks the unlikely classes.
  double temperature = 1.0;
  // Soft targets on every anchor, background included, instead of weighted
  // by the teacher's foreground score (Chen et al. 2017 distil the whole
  // class output); still over the foreground weights' sum.
  bool soft_targets_everywhere = false;
};

struct DistillationLoss {
  // Mean over every anchor and old column of (teacher logit - student logit)^2
  // (equation 3.2): the student keeps the teacher's view of the old classes,
  // background included, on every anchor. With soft_targets, the weighted KL.
  Output class_loss;
  // Smooth-L1 (beta 1) between the teacher's and the student's box deltas,
  // summed over the 4 coordinates (equation 3.3), averaged over the anchors
  // weighted by the teacher's foreground score (SSD: 1 - p(background);
  // RetinaNet: the highest class sigmoid), so that the boxes of objects the
  // teacher sees count and the background's do not.
  Output box_loss;
};

// No gradient reaches the teacher: its outputs enter through StopGradient.
DistillationLoss BuildDistillationLoss(const Scope& scope, const DistillationInputs& inputs);

// Chen et al. 2017's teacher bounded regression loss (Learning Efficient
// Object Detection Models with Knowledge Distillation, equation 4): the
// teacher's boxes are an upper bound for the student's, not a target. On each
// positive anchor (matched to a ground-truth box) with e_s and e_t the
// student's and the teacher's squared L2 errors to the ground-truth deltas,
//   L_b = e_s  if e_s + margin > e_t,   0 otherwise,
// summed over the positives and divided by their number: once the student
// places a box better than its teacher (by the margin), that box is left to
// the ordinary regression loss.
struct TeacherBoundedInputs {
  Output student_boxes;  // float32 [N, A, 4]
  Output teacher_boxes;  // float32 [N, A, 4]
  Output box_targets;    // float32 [N, A, 4]: the ground truth's deltas
  Output positive;       // float32 [N, A]: 1 on a positive anchor, else 0
  float margin = 0;
};
// No gradient reaches the teacher, the targets or the positives.
Output TeacherBoundedRegressionLoss(const Scope& scope, const TeacherBoundedInputs& inputs);

// The class output layer of a widened head: `fresh` is the student's newly
// initialised weight or bias, whose last dimension is anchors * new_columns;
// `old` (the teacher's) has anchors * old_columns. Column c < old_columns of
// anchor a is copied from the teacher; the new columns keep `fresh`'s
// initial values. Throws kInvalidArgument when the shapes do not fit.
Tensor WidenClassOutputs(const Tensor& old, const Tensor& fresh, int64_t old_columns,
                         int64_t new_columns);

}  // namespace dflow::models::detection
