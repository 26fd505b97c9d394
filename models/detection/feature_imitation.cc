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
  std::vector<Input> squared, cells;
  int64_t first = 0;
  for (size_t i = 0; i < in.student_maps.size(); ++i) {
    const Shape& map = in.teacher_maps[i].shape();
    Scope level = s.NewSubScope("map" + std::to_string(i + 1));
    ConvLayer adapter = Conv2D(level.NewSubScope("adapter"), in.student_maps[i], map.dim(3), 1);
    out.adapter_variables.insert(out.adapter_variables.end(), {adapter.filter, adapter.bias});
    Output mask = CellMask(level, in.anchor_mask, first, map, in.anchors_per_cell);
    Output difference = ops::SquaredDifference(level, adapter.output, ops::StopGradient(level, in.teacher_maps[i]));
    squared.push_back(ops::Sum(level, ops::Mul(level, difference, mask), {0, 1, 2, 3}));
    cells.push_back(ops::Sum(level, mask, {0, 1, 2, 3}));
    first += map.dim(1) * map.dim(2) * in.anchors_per_cell;
  }
  Output masked_cells = ops::Maximum(s, ops::AddN(s, cells), 1.0f);
  out.loss = ops::Div(s.WithOpName("loss"), ops::AddN(s, squared), ops::Mul(s, masked_cells, 2.0f));
  return out;
}

}  // namespace dflow::models::detection
