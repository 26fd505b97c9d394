// Synthetic field images for the counting app (the flower-counting thesis): a green/brown
// crop texture with 0..max_flowers small yellow flowers, plus the
// distractors the seed's old blob counter mistook for flowers: bright
// specular patches (sun reflection) and tan road strips (dusty roadside).
// Each image is deterministic in (seed, index), so a dataset can be
// regenerated and split without storing it.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/tensor.h"
#include "models/data/density.h"

namespace dflow::models {

struct FieldOptions {
  int64_t height = 448, width = 448;
  int max_flowers = 50;        // the count is uniform in [0, max_flowers]
  double min_radius = 2.0;     // flower radius range, pixels
  double max_radius = 3.5;
  bool distractors = true;     // specular patches and road strips
  uint64_t seed = 1;
};

struct FieldImage {
  Tensor image;               // uint8 [height, width, 3], RGB
  std::vector<Point> points;  // flower centres
};

FieldImage GenerateField(const FieldOptions& options, uint64_t index);

}  // namespace dflow::models
