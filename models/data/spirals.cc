// Spiral generator; see spirals.h.
#include "models/data/spirals.h"

#include <cmath>
#include <numbers>
#include <random>

namespace dflow::models {

LabelledPoints MakeSpirals(const SpiralOptions& options) {
  DFLOW_REQUIRE(options.points_per_class > 0 && options.classes > 0,
                "MakeSpirals: points_per_class and classes must be positive");
  int64_t n = options.points_per_class * options.classes;
  LabelledPoints set{Tensor(DType::kFloat32, {n, 2}), Tensor(DType::kInt32, {n})};
  std::mt19937_64 rng(options.seed);
  std::normal_distribution<double> noise(0.0, options.noise);
  float* xy = set.points.data<float>();
  int32_t* label = set.labels.data<int32_t>();
  for (int c = 0; c < options.classes; ++c) {
    for (int64_t i = 0; i < options.points_per_class; ++i) {
      double r = static_cast<double>(i) / static_cast<double>(options.points_per_class);
      double angle = 4 * r + 2 * std::numbers::pi * c / options.classes + noise(rng);
      int64_t row = c * options.points_per_class + i;
      xy[2 * row] = static_cast<float>(r * std::cos(angle));
      xy[2 * row + 1] = static_cast<float>(r * std::sin(angle));
      label[row] = c;
    }
  }
  return set;
}

LabelledPoints Gather(const LabelledPoints& set, const std::vector<int64_t>& indices) {
  int64_t n = static_cast<int64_t>(indices.size()), total = set.labels.NumElements();
  LabelledPoints batch{Tensor(DType::kFloat32, {n, 2}), Tensor(DType::kInt32, {n})};
  for (int64_t i = 0; i < n; ++i) {
    int64_t row = indices[i];
    DFLOW_REQUIRE(row >= 0 && row < total, "Gather: row ", row, " outside [0, ", total, ")");
    batch.points.data<float>()[2 * i] = set.points.data<float>()[2 * row];
    batch.points.data<float>()[2 * i + 1] = set.points.data<float>()[2 * row + 1];
    batch.labels.data<int32_t>()[i] = set.labels.data<int32_t>()[row];
  }
  return batch;
}

}  // namespace dflow::models
