// Density maps; see density.h.
#include "models/data/density.h"

#include <algorithm>
#include <cmath>

namespace dflow::models {
namespace {

// Adds one point's renormalised Gaussian to `map`.
void AddPoint(float* map, int64_t height, int64_t width, const Point& p, double sigma) {
  int64_t radius = static_cast<int64_t>(std::ceil(3 * sigma));
  int64_t col = static_cast<int64_t>(p.x), row = static_cast<int64_t>(p.y);
  int64_t r0 = std::max<int64_t>(0, row - radius), r1 = std::min(height - 1, row + radius);
  int64_t c0 = std::max<int64_t>(0, col - radius), c1 = std::min(width - 1, col + radius);
  std::vector<double> weights;
  weights.reserve((r1 - r0 + 1) * (c1 - c0 + 1));
  double total = 0;
  for (int64_t r = r0; r <= r1; ++r)
    for (int64_t c = c0; c <= c1; ++c) {
      double dx = c + 0.5 - p.x, dy = r + 0.5 - p.y;
      double w = std::exp(-(dx * dx + dy * dy) / (2 * sigma * sigma));
      weights.push_back(w);
      total += w;
    }
  size_t i = 0;
  for (int64_t r = r0; r <= r1; ++r)
    for (int64_t c = c0; c <= c1; ++c) map[r * width + c] += static_cast<float>(weights[i++] / total);
}

}  // namespace

Tensor DensityMap(const std::vector<Point>& points, int64_t height, int64_t width, double sigma) {
  DFLOW_REQUIRE(height > 0 && width > 0, "DensityMap: size must be positive, got ", height, "x",
                width);
  DFLOW_REQUIRE(sigma > 0 && sigma <= 100, "DensityMap: sigma must be in (0, 100] px, got ", sigma);
  Tensor map = Tensor::Zeros(DType::kFloat32, Shape{height, width});
  for (size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    DFLOW_REQUIRE(p.x >= 0 && p.x < width && p.y >= 0 && p.y < height, "DensityMap: point ", i,
                  " (", p.x, ", ", p.y, ") is outside the ", width, "x", height, " image");
    AddPoint(map.data<float>(), height, width, p, sigma);
  }
  return map;
}

}  // namespace dflow::models
