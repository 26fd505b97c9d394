// Ground-truth density maps for counting (the flower-counting thesis, ch. 3): a unit impulse
// at each annotated point, blurred by a normalised Gaussian, so that the
// map sums to the number of points and a network's count is the sum of its
// predicted map.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/tensor.h"

namespace dflow::models {

// A point in pixel coordinates: pixel (row r, column c) covers
// [c, c + 1) x [r, r + 1), so its centre is (c + 0.5, r + 0.5).
struct Point {
  double x = 0, y = 0;
};

// float32 [height, width]: for each point, exp(-d^2 / (2 sigma^2)) at every
// pixel centre within 3 sigma, divided by its sum over the pixels inside the
// image. Each point therefore adds exactly 1 to the map, even next to the
// border (its Gaussian is renormalised over what remains of it), and the map
// sums to points.size() up to float rounding. A point outside
// [0, width) x [0, height) is an error naming it.
Tensor DensityMap(const std::vector<Point>& points, int64_t height, int64_t width, double sigma);

}  // namespace dflow::models
