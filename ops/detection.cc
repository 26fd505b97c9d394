// Detection ops: NonMaxSuppressionV5, CombinedNonMaxSuppression, TopKV2 and
// BoxIou (declarations, shape functions, builders). Kernels: ops/cpu/
// non_max_suppression.cc, combined_non_max_suppression.cc, top_k.cc, box_iou.cc.
#include "ops/detection.h"

#include <algorithm>

#include "ops/array_op_util.h"

namespace dflow {
namespace {

// Input i's shape when its rank is known (it must be `rank`), else `rank`
// unknown dims.
Shape RankedInput(const InferenceContext& ctx, int i, int rank, const char* what) {
  const Shape& s = ctx.input_shape(i);
  if (s.unknown_rank()) return array::UnknownDims(rank);
  if (s.rank() != rank) ctx.Fail(what, " must have rank ", rank, ", got shape ", s.ToString());
  return s;
}

bool Clash(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }
int64_t Either(int64_t a, int64_t b) { return a >= 0 ? a : b; }

// boxes [N, 4] and a last dim of 4.
Shape BoxesInput(const InferenceContext& ctx, int i, int rank, const char* what) {
  Shape s = RankedInput(ctx, i, rank, what);
  if (Clash(s.dim(rank - 1), 4))
    ctx.Fail(what, " must have 4 coordinates (y1, x1, y2, x2) in its last dimension, got shape ",
             s.ToString());
  return s;
}

void NonMaxSuppressionShape(InferenceContext& ctx) {
  Shape boxes = BoxesInput(ctx, 0, 2, "boxes");
  Shape scores = RankedInput(ctx, 1, 1, "scores");
  if (Clash(boxes.dim(0), scores.dim(0)))
    ctx.Fail("boxes ", boxes.ToString(), " and scores ", scores.ToString(),
             " differ in the number of boxes");
  const char* scalars[] = {"max_output_size", "iou_threshold", "score_threshold", "soft_nms_sigma"};
  for (int i = 2; i <= 5; ++i) RankedInput(ctx, i, 0, scalars[i - 2]);
  auto size = array::KnownScalar(ctx, 2, "max_output_size");
  if (size && *size < 0) ctx.Fail("max_output_size must be non-negative, got ", *size);
  int64_t n = Either(boxes.dim(0), scores.dim(0));
  int64_t out = -1;
  if (ctx.attr<bool>("pad_to_max_output_size")) out = size.value_or(-1);
  else if ((size && *size == 0) || n == 0) out = 0;
  ctx.set_output(0, Shape{out});
  ctx.set_output(1, Shape{out});
  ctx.set_output(2, Shape{});
}

void CombinedNonMaxSuppressionShape(InferenceContext& ctx) {
  Shape boxes = BoxesInput(ctx, 0, 4, "boxes");
  Shape scores = RankedInput(ctx, 1, 3, "scores");
  if (Clash(boxes.dim(0), scores.dim(0)) || Clash(boxes.dim(1), scores.dim(1)))
    ctx.Fail("boxes ", boxes.ToString(), " and scores ", scores.ToString(),
             " differ in batch size or number of boxes");
  int64_t q = boxes.dim(2), classes = scores.dim(2);
  if (q >= 0 && classes >= 0 && q != 1 && q != classes)
    ctx.Fail("boxes ", boxes.ToString(), " must have 1 or ", classes,
             " (the number of classes) boxes per anchor in dimension 2");
  const char* scalars[] = {"max_output_size_per_class", "max_total_size", "iou_threshold",
                           "score_threshold"};
  for (int i = 2; i <= 5; ++i) RankedInput(ctx, i, 0, scalars[i - 2]);
  auto per_class = array::KnownScalar(ctx, 2, "max_output_size_per_class");
  auto total = array::KnownScalar(ctx, 3, "max_total_size");
  if (per_class && *per_class <= 0)
    ctx.Fail("max_output_size_per_class must be positive, got ", *per_class);
  if (total && *total <= 0) ctx.Fail("max_total_size must be positive, got ", *total);
  int64_t detections = total.value_or(-1);
  if (ctx.attr<bool>("pad_per_class") && total)
    detections = per_class && classes >= 0
                     ? std::min(*total, CheckedMul(*per_class, classes, "per_class * classes"))
                     : -1;
  int64_t batch = Either(boxes.dim(0), scores.dim(0));
  ctx.set_output(0, Shape{batch, detections, 4});
  ctx.set_output(1, Shape{batch, detections});
  ctx.set_output(2, Shape{batch, detections});
  ctx.set_output(3, Shape{batch});
}

void TopKShape(InferenceContext& ctx) {
  RankedInput(ctx, 1, 0, "k");
  auto k = array::KnownScalar(ctx, 1, "k");
  if (k && *k < 0) ctx.Fail("k must be non-negative, got ", *k);
  const Shape& input = ctx.input_shape(0);
  if (input.unknown_rank()) return;
  if (input.rank() < 1) ctx.Fail("input must have rank >= 1, got a scalar");
  int64_t n = input.dim(input.rank() - 1);
  if (k && n >= 0 && *k > n)
    ctx.Fail("k = ", *k, " is more than the ", n, " entries of the last dimension of input ",
             input.ToString());
  std::vector<int64_t> dims = input.dims();
  dims.back() = k.value_or(-1);
  ctx.set_output(0, Shape(dims));
  ctx.set_output(1, Shape(dims));
}

void BoxIouShape(InferenceContext& ctx) {
  Shape a = BoxesInput(ctx, 0, 2, "boxes_a");
  Shape b = BoxesInput(ctx, 1, 2, "boxes_b");
  ctx.set_output(0, Shape{a.dim(0), b.dim(0)});
}

const char* kIouDoc =
    " Boxes are [y1, x1, y2, x2] with either diagonal pair of corners; IoU is "
    "|a n b| / |a u b| in float32, and 0 when either box has zero area.";

}  // namespace

REGISTER_OP("NonMaxSuppressionV5")
    .input("boxes", "T").input("scores", "T").input("max_output_size", DType::kInt32)
    .input("iou_threshold", "T").input("score_threshold", "T").input("soft_nms_sigma", "T")
    .output("selected_indices", DType::kInt32).output("selected_scores", "T")
    .output("valid_outputs", DType::kInt32)
    .type_attr("T", {DType::kFloat32}, DType::kFloat32)
    .attr<bool>("pad_to_max_output_size", false)
    .shape_fn(NonMaxSuppressionShape)
    .doc(std::string("Greedy non-maximum suppression (TensorFlow's). Candidates are the boxes "
         "[N, 4] with scores [N] > score_threshold, taken by descending score (equal scores: "
         "lower index first); a candidate is kept unless its IoU with a kept box is > "
         "iou_threshold (in [0, 1]), until max_output_size are kept. soft_nms_sigma > 0 is "
         "Soft-NMS (Bodla et al. 2017): each kept box multiplies a candidate's score by "
         "exp(-IoU^2 / (2 sigma)) instead (iou_threshold is then unused), and a candidate "
         "whose score drops to score_threshold or below is dropped. Outputs the kept indices "
         "in order, their (re-weighted) scores and their number; pad_to_max_output_size pads "
         "both to max_output_size with zeros. A box whose area is 0, NaN or infinite "
         "neither suppresses nor is suppressed (its IoU with any box is 0 or NaN).") + kIouDoc);

REGISTER_OP("CombinedNonMaxSuppression")
    .input("boxes", DType::kFloat32).input("scores", DType::kFloat32)
    .input("max_output_size_per_class", DType::kInt32).input("max_total_size", DType::kInt32)
    .input("iou_threshold", DType::kFloat32).input("score_threshold", DType::kFloat32)
    .output("nmsed_boxes", DType::kFloat32).output("nmsed_scores", DType::kFloat32)
    .output("nmsed_classes", DType::kFloat32).output("valid_detections", DType::kInt32)
    .attr<bool>("pad_per_class", false).attr<bool>("clip_boxes", true)
    .shape_fn(CombinedNonMaxSuppressionShape)
    .doc(std::string("Batched, per-class greedy NMS (TensorFlow's). boxes [B, N, q, 4] (q = 1: "
         "one box per anchor for all classes, q = C: one per class), scores [B, N, C]. For "
         "each image and class, NonMaxSuppressionV5's hard NMS keeps at most "
         "max_output_size_per_class boxes with score > score_threshold; then the "
         "max_total_size best over all classes (equal scores: lower class, then earlier "
         "kept first) are written out as nmsed_boxes [B, D, 4], nmsed_scores, nmsed_classes "
         "[B, D] (class as float) padded with zeros, and valid_detections [B]. D is "
         "max_total_size, or min(max_total_size, max_output_size_per_class * C) with "
         "pad_per_class. clip_boxes clips output coordinates to [0, 1].") + kIouDoc);

REGISTER_OP("TopKV2")
    .input("input", "T").input("k", DType::kInt32)
    .output("values", "T").output("indices", DType::kInt32)
    .type_attr("T", kNumberTypes)
    .attr<bool>("sorted", true)
    .shape_fn(TopKShape)
    .doc("The k largest entries of each row of input (its last dimension) and their "
         "positions: values and indices [..., k], largest first, equal values with the lower "
         "index first (NaN counts as the largest value). 0 <= k <= n; k = 0 gives empty "
         "outputs. dflow returns sorted values whatever `sorted` says (TensorFlow leaves the "
         "order unspecified when it is false).");

REGISTER_OP("BoxIou")
    .input("boxes_a", DType::kFloat32).input("boxes_b", DType::kFloat32)
    .output("iou", DType::kFloat32)
    .shape_fn(BoxIouShape)
    .doc(std::string("The IoU of every pair of boxes: boxes_a [N, 4], boxes_b [M, 4] -> "
                     "[N, M].") + kIouDoc);

namespace ops {

NonMaxSuppressionV5Outputs NonMaxSuppressionV5(const Scope& scope, const Input& boxes,
                                               const Input& scores, const Input& max_output_size,
                                               const Input& iou_threshold,
                                               const Input& score_threshold,
                                               const Input& soft_nms_sigma,
                                               NonMaxSuppressionV5Attrs attrs) {
  Node* node = scope.AddOp("NonMaxSuppressionV5",
                           {boxes, scores, max_output_size, iou_threshold, score_threshold,
                            soft_nms_sigma},
                           {{"pad_to_max_output_size", attrs.pad_to_max_output_size}});
  return {Output(node, 0), Output(node, 1), Output(node, 2)};
}

CombinedNonMaxSuppressionOutputs CombinedNonMaxSuppression(
    const Scope& scope, const Input& boxes, const Input& scores,
    const Input& max_output_size_per_class, const Input& max_total_size,
    const Input& iou_threshold, const Input& score_threshold,
    CombinedNonMaxSuppressionAttrs attrs) {
  Node* node = scope.AddOp("CombinedNonMaxSuppression",
                           {boxes, scores, max_output_size_per_class, max_total_size,
                            iou_threshold, score_threshold},
                           {{"pad_per_class", attrs.pad_per_class},
                            {"clip_boxes", attrs.clip_boxes}});
  return {Output(node, 0), Output(node, 1), Output(node, 2), Output(node, 3)};
}

TopKOutputs TopKV2(const Scope& scope, const Input& input, const Input& k, TopKAttrs attrs) {
  Node* node = scope.AddOp("TopKV2", {input, k}, {{"sorted", attrs.sorted}});
  return {Output(node, 0), Output(node, 1)};
}

Output BoxIou(const Scope& scope, const Input& boxes_a, const Input& boxes_b) {
  return scope.AddOp("BoxIou", {boxes_a, boxes_b});
}

}  // namespace ops
}  // namespace dflow
