// Fine-grained feature imitation; see feature_imitation.h.
#include "models/detection/feature_imitation.h"

#include <algorithm>
#include <string>

#include "graph/status.h"
#include "models/layers.h"
#include "ops/box_geometry.h"
#include "ops/ops.h"

namespace dflow::models::detection {
namespace {

namespace geometry = dflow::detection;

// One map's mask of cells, [N, h, w, 1]: its anchors' mask, any per cell.
Output CellMask(const Scope& s, const Output& anchor_mask, int64_t first, const Shape& map, int64_t per_cell) {
  const int64_t h = map.dim(1), w = map.dim(2);
  Output anchors = ops::Slice(s, anchor_mask, {int64_t{0}, first}, {int64_t{-1}, h * w * per_cell});
  Output cells = ops::Reshape(s, anchors, {int64_t{-1}, h, w, per_cell});
  return ops::Max(s, cells, 3, {.keep_dims = true});
}

void CheckMaps(const FeatureImitationInputs& in) {
  DFLOW_REQUIRE(!in.student_maps.empty() && in.student_maps.size() == in.teacher_maps.size(),
                "feature imitation: ", in.student_maps.size(), " student maps but ", in.teacher_maps.size(),
                " teacher maps");
  for (size_t i = 0; i < in.student_maps.size(); ++i) {
    const Shape& s = in.student_maps[i].shape();
    const Shape& t = in.teacher_maps[i].shape();
    DFLOW_REQUIRE(s.rank() == 4 && t.rank() == 4 && s.dim(1) == t.dim(1) && s.dim(2) == t.dim(2) &&
                      s.dim(1) > 0 && s.dim(2) > 0 && s.dim(3) > 0 && t.dim(3) > 0,
                  "feature imitation: map ", i, " of the student is ", s.ToString(), " and the teacher's ",
                  t.ToString(), "; they must have the same cells");
  }
}

// Each channel of an NHWC map standardised over the batch and the cells:
// (x - mean) / sqrt(variance + epsilon). A channel constant over the batch
// (a teacher's dead ReLU) becomes 0 rather than a division by zero.
Output StandardisedChannels(const Scope& s, const Output& x) {
  const Output centred = ops::Sub(s, x, ops::Mean(s, x, {0, 1, 2}, {.keep_dims = true}));
  const Output variance = ops::Mean(s, ops::Square(s, centred), {0, 1, 2}, {.keep_dims = true});
  return ops::Mul(s, centred, ops::Rsqrt(s, ops::Add(s, variance, 1e-5f)));
}

// The squared difference of one map pair, summed inside the mask (fine
// grained), or averaged over every element of the standardised maps
// (Pearson); `cells` gets the fine-grained form's masked cell count.
Output MapTerm(const Scope& s, const FeatureImitationInputs& in, const Output& adapted, const Output& teacher,
               const Output& mask, std::vector<Input>& cells) {
  if (in.form == ImitationLoss::kPearson) {
    const Output difference =
        ops::SquaredDifference(s, StandardisedChannels(s, adapted), StandardisedChannels(s, teacher));
    return ops::Mul(s, ops::Mean(s, difference, {0, 1, 2, 3}), 0.5f);
  }
  cells.push_back(ops::Sum(s, mask, {0, 1, 2, 3}));
  return ops::Sum(s, ops::Mul(s, ops::SquaredDifference(s, adapted, teacher), mask), {0, 1, 2, 3});
}

}  // namespace

Tensor ImitationMask(std::span<const float> anchors, const std::vector<std::vector<float>>& boxes, double psi) {
  DFLOW_REQUIRE(anchors.size() % 4 == 0 && psi > 0 && psi <= 1, "ImitationMask: ", anchors.size(),
                " anchor floats, psi ", psi);
  const size_t count = anchors.size() / 4;
  std::vector<geometry::Box> anchor_boxes(count);
  for (size_t a = 0; a < count; ++a) anchor_boxes[a] = geometry::NormalizeBox(anchors.data() + 4 * a);
  Tensor mask = Tensor::Zeros(DType::kFloat32, {static_cast<int64_t>(boxes.size()), static_cast<int64_t>(count)});
  std::vector<float> iou(count);
  for (size_t i = 0; i < boxes.size(); ++i) {
    DFLOW_REQUIRE(boxes[i].size() % 4 == 0, "ImitationMask: image ", i, " has ", boxes[i].size(), " box floats");
    float* row = mask.data<float>() + i * count;
    for (size_t g = 0; g < boxes[i].size() / 4; ++g) {
      const geometry::Box box = geometry::NormalizeBox(boxes[i].data() + 4 * g);
      for (size_t a = 0; a < count; ++a) iou[a] = geometry::Iou(box, anchor_boxes[a]);
      const float best = *std::max_element(iou.begin(), iou.end());
      if (best <= 0) continue;  // an object no anchor overlaps imitates nothing
      const float threshold = static_cast<float>(psi) * best;
      for (size_t a = 0; a < count; ++a)
        if (iou[a] > threshold) row[a] = 1;
    }
  }
  return mask;
}

FeatureImitation BuildFeatureImitationLoss(const Scope& scope, const FeatureImitationInputs& in) {
  CheckMaps(in);
  Scope s = scope.NewSubScope("feature_imitation");
  FeatureImitation out;
  std::vector<Input> terms, cells;
  int64_t first = 0;
  for (size_t i = 0; i < in.student_maps.size(); ++i) {
    const Shape& map = in.teacher_maps[i].shape();
    Scope level = s.NewSubScope("map" + std::to_string(i + 1));
    ConvLayer adapter = Conv2D(level.NewSubScope("adapter"), in.student_maps[i], map.dim(3), 1);
    out.adapter_variables.insert(out.adapter_variables.end(), {adapter.filter, adapter.bias});
    const Output mask = in.form == ImitationLoss::kFineGrained
                            ? CellMask(level, in.anchor_mask, first, map, in.anchors_per_cell)
                            : Output();
    terms.push_back(
        MapTerm(level, in, adapter.output, ops::StopGradient(level, in.teacher_maps[i]), mask, cells));
    first += map.dim(1) * map.dim(2) * in.anchors_per_cell;
  }
  if (in.form == ImitationLoss::kPearson) {
    out.loss = ops::Identity(s.WithOpName("loss"), ops::AddN(s, terms));
    return out;
  }
  Output masked_cells = ops::Maximum(s, ops::AddN(s, cells), 1.0f);
  out.loss = ops::Div(s.WithOpName("loss"), ops::AddN(s, terms), ops::Mul(s, masked_cells, 2.0f));
  return out;
}

}  // namespace dflow::models::detection
