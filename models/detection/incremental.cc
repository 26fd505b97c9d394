// The distillation terms and the head widening of incremental.h.
#include "models/detection/incremental.h"

#include <algorithm>

#include "graph/status.h"
#include "models/detection/losses.h"
#include "ops/ops.h"

namespace dflow::models::detection {
namespace {

// The teacher's confidence that an anchor holds one of its objects, [N, A].
Output ForegroundScore(const Scope& s, const Output& teacher_logits, ClassScores scores) {
  if (scores == ClassScores::kSigmoid) return ops::Max(s, ops::Sigmoid(s, teacher_logits), -1);
  Output background = ops::Slice(s, ops::Softmax(s, teacher_logits),
                                 {int64_t{0}, int64_t{0}, int64_t{0}}, {int64_t{-1}, int64_t{-1}, int64_t{1}});
  return ops::Sub(s, 1.0f, ops::Sum(s, background, -1));  // [N, A, 1] -> [N, A]
}

// sum over the class axis of KL(teacher || student) per anchor, [N, A].
Output ClassKl(const Scope& s, const Output& teacher, const Output& student, ClassScores scores) {
  if (scores == ClassScores::kSoftmaxWithBackground) {
    Output log_t = ops::LogSoftmax(s, teacher);
    return ops::Sum(s, ops::Mul(s, ops::Exp(s, log_t), ops::Sub(s, log_t, ops::LogSoftmax(s, student))), -1);
  }
  // Bernoulli per class: log sigmoid(x) = -softplus(-x), log(1 - sigmoid(x)) = -softplus(x).
  Output p = ops::Sigmoid(s, teacher);
  Output on = ops::Sub(s, ops::Softplus(s, ops::Neg(s, student)), ops::Softplus(s, ops::Neg(s, teacher)));
  Output off = ops::Sub(s, ops::Softplus(s, student), ops::Softplus(s, teacher));
  return ops::Sum(s, ops::Add(s, ops::Mul(s, p, on), ops::Mul(s, ops::Sub(s, 1.0f, p), off)), -1);
}

}  // namespace

DistillationLoss BuildDistillationLoss(const Scope& scope, const DistillationInputs& in) {
  DFLOW_REQUIRE(in.old_columns >= 1, "distillation: old_columns must be >= 1, got ", in.old_columns);
  DFLOW_REQUIRE(in.temperature > 0, "distillation: the temperature must be above 0, got ", in.temperature);
  Scope s = scope.NewSubScope("distillation");
  Output teacher_logits = ops::StopGradient(s, in.teacher_logits);
  Output teacher_boxes = ops::StopGradient(s, in.teacher_boxes);
  Output student_old = ops::Slice(s, in.student_logits, {int64_t{0}, int64_t{0}, int64_t{0}},
                                  {int64_t{-1}, int64_t{-1}, in.old_columns});
  DistillationLoss loss;
  Output weight = ForegroundScore(s, teacher_logits, in.scores);
  Output total_weight = ops::Maximum(s, ops::Sum(s, weight, ops::Range(s, 0, 2, 1)), 1.0f);
  if (in.soft_targets) {
    const float t = static_cast<float>(in.temperature);
    Output kl = t == 1.0f ? ClassKl(s, teacher_logits, student_old, in.scores)
                          : ops::Mul(s, ClassKl(s, ops::Div(s, teacher_logits, t), ops::Div(s, student_old, t),
                                                in.scores),
                                     t * t);
    Output weighted = in.soft_targets_everywhere ? kl : ops::Mul(s, kl, weight);
    loss.class_loss = ops::Div(s.WithOpName("distill_class_loss"),
                               ops::Sum(s, weighted, ops::Range(s, 0, 2, 1)), total_weight);
  } else {
    loss.class_loss = ops::Mean(s.WithOpName("distill_class_loss"),
                                ops::SquaredDifference(s, teacher_logits, student_old), ops::Range(s, 0, 3, 1));
  }
  loss.box_loss = ops::Div(s.WithOpName("distill_box_loss"),
                           SmoothL1Loss(s, in.student_boxes, teacher_boxes, weight), total_weight);
  return loss;
}

Output TeacherBoundedRegressionLoss(const Scope& scope, const TeacherBoundedInputs& in) {
  DFLOW_REQUIRE(in.margin >= 0, "teacher bounded regression: the margin must be 0 or more, got ", in.margin);
  Scope s = scope.NewSubScope("teacher_bounded_regression");
  Output targets = ops::StopGradient(s, in.box_targets);
  Output positive = ops::StopGradient(s, in.positive);
  auto squared_error = [&](const Output& boxes) {  // [N, A]
    return ops::Sum(s, ops::SquaredDifference(s, boxes, targets), -1);
  };
  Output student_error = squared_error(in.student_boxes);
  Output teacher_error = squared_error(ops::StopGradient(s, in.teacher_boxes));
  // Where the student is not yet better than its teacher by the margin; a
  // comparison, so no gradient flows through the choice itself.
  Output bounded = ops::Cast(s, ops::Greater(s, ops::Add(s, student_error, in.margin), teacher_error),
                             DType::kFloat32);
  Output counted = ops::Mul(s, ops::Mul(s, student_error, bounded), positive);
  Output positives = ops::Maximum(s, ops::Sum(s, positive, {0, 1}), 1.0f);
  return ops::Div(s.WithOpName("teacher_bounded_loss"), ops::Sum(s, counted, {0, 1}), positives);
}

Tensor WidenClassOutputs(const Tensor& old, const Tensor& fresh, int64_t old_columns,
                         int64_t new_columns) {
  const Shape& from = old.shape();
  const Shape& to = fresh.shape();
  auto fail = [&] {
    Fail(Code::kInvalidArgument, "widening a class output layer from ", old_columns, " to ",
         new_columns, " columns per anchor: the old ", from.ToString(), " and new ", to.ToString(),
         " do not fit");
  };
  if (old.dtype() != DType::kFloat32 || fresh.dtype() != DType::kFloat32 || from.rank() != to.rank() ||
      from.rank() < 1 || old_columns < 1 || new_columns <= old_columns)
    fail();
  const int last = from.rank() - 1;
  for (int i = 0; i < last; ++i)
    if (from.dim(i) != to.dim(i)) fail();
  const int64_t anchors = from.dim(last) / old_columns;
  if (anchors * old_columns != from.dim(last) || anchors * new_columns != to.dim(last)) fail();
  Tensor widened = fresh.Clone();
  const float* src = old.data<float>();
  float* dst = widened.data<float>();
  // Every leading index (kernel position, input channel) holds one row of
  // anchors x columns; the old columns of each anchor move to their new place.
  const int64_t rows = old.NumElements() / from.dim(last);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t a = 0; a < anchors; ++a)
      std::copy_n(src + (r * anchors + a) * old_columns, old_columns,
                  dst + (r * anchors + a) * new_columns);
  return widened;
}

}  // namespace dflow::models::detection
