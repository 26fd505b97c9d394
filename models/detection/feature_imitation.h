// Fine-grained feature imitation (Wang et al. 2019, "Distilling Object
// Detectors with Fine-grained Feature Imitation"): a small student detector
// learns to reproduce a larger teacher's feature maps, but only at the
// locations near objects, where the two detectors' features matter. A 1x1
// adapter per map turns the student's channels into the teacher's; the loss
// is the squared difference inside the imitation mask, over twice the
// number of masked locations (equation 2).
//
//   student map [N, h, w, Cs] --1x1 adapter--> [N, h, w, Ct] --+
//   teacher map [N, h, w, Ct] --StopGradient-------------------+--> sum over mask of (a - t)^2 / (2 Np)
//   anchor mask [N, A] (ImitationMask) --per cell: any of its anchors--^
//
// Or the Pearson form (Cao et al. 2022, "PKD: General Distillation Framework
// for Object Detectors via Pearson Correlation Coefficient"): both maps are
// standardised per channel over the batch and the cells, so the student
// learns the teacher's pattern of activation and not its magnitudes, and the
// loss is the mean squared difference of the standardised maps over two,
// on every cell. Per channel this is 1 - r, r the Pearson correlation of
// the adapted student channel with the teacher's, hence the name.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graph/scope.h"
#include "graph/tensor.h"

namespace dflow::models::detection {

// The imitation mask of a batch over the anchors (normalised y1, x1, y2,
// x2, as the matching takes them): for each object, the anchors whose IoU
// with it exceeds psi times the object's best IoU over all anchors; an
// anchor is in the mask when it is so for any object of its image. `boxes`
// holds each image's objects, 4 floats each. Returns float32 [B, A] of 0/1.
Tensor ImitationMask(std::span<const float> anchors, const std::vector<std::vector<float>>& boxes,
                     double psi = 0.5);

enum class ImitationLoss {
  kFineGrained,  // Wang et al.: squared difference inside the mask of cells near objects
  kPearson,      // Cao et al.: standardised maps, every cell
};

struct FeatureImitationInputs {
  std::vector<Output> student_maps;  // float32 [N, h, w, Cs] per map
  std::vector<Output> teacher_maps;  // float32 [N, h, w, Ct]: the same cells, map by map
  // float32 [N, A] (ImitationMask), the anchors laid out map by map, cell by
  // cell, `anchors_per_cell` per cell (SSD's order, anchors.h). Unused by
  // the Pearson form.
  Output anchor_mask;
  int64_t anchors_per_cell = 6;
  ImitationLoss form = ImitationLoss::kFineGrained;
};

struct FeatureImitation {
  // Fine-grained: sum over maps, masked cells and channels of
  // (adapted - teacher)^2 / (2 Np). Pearson: sum over maps of the mean over
  // cells and channels of (z(adapted) - z(teacher))^2 / 2, z standardising
  // each channel over the batch and cells.
  Output loss;
  std::vector<Output> adapter_variables;  // the 1x1 adapters' filters and biases, trained with the student
};

// Fine-grained: a cell is in a map's mask when any of its anchors is; Np
// counts the masked cells of every map and image (at least 1). No gradient
// reaches the teacher. kInvalidArgument when the maps do not pair up cell for cell.
FeatureImitation BuildFeatureImitationLoss(const Scope& scope, const FeatureImitationInputs& inputs);

}  // namespace dflow::models::detection
