// Interleaved spirals: a small, non-linearly separable classification set
// (one arm per class) for examples and tests that must train in seconds.
#pragma once

#include <cstdint>

#include "graph/tensor.h"

namespace dflow::models {

struct SpiralOptions {
  int64_t points_per_class = 1000;
  int classes = 3;
  double noise = 0.1;  // standard deviation of the angle noise, radians
  uint64_t seed = 1;
};

struct LabelledPoints {
  Tensor points;  // float32 [n, 2], inside the unit disc
  Tensor labels;  // int32 [n], in [0, classes)
};

// Point i of class c sits at radius r = i / points_per_class and angle
// 4r + 2 pi c / classes + noise (the arms wind once around the origin).
LabelledPoints MakeSpirals(const SpiralOptions& options);

// Rows `indices` of a labelled set, for batching.
LabelledPoints Gather(const LabelledPoints& set, const std::vector<int64_t>& indices);

}  // namespace dflow::models
