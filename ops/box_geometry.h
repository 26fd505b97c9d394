// Box geometry shared by the detection kernels (NMS, BoxIou) on any device:
// boxes [y1, x1, y2, x2] with either diagonal pair of corners, normalised to
// min/max once, and TensorFlow's IoU formula (in float32, 0 for empty boxes).
#pragma once

#include <algorithm>
#include <cmath>

namespace dflow::detection {

struct Box {
  float ymin, xmin, ymax, xmax;
  float area;  // (ymax - ymin) * (xmax - xmin)
};

inline Box NormalizeBox(const float* c) {
  Box b;
  b.ymin = std::min(c[0], c[2]);
  b.ymax = std::max(c[0], c[2]);
  b.xmin = std::min(c[1], c[3]);
  b.xmax = std::max(c[1], c[3]);
  b.area = (b.ymax - b.ymin) * (b.xmax - b.xmin);
  return b;
}

// IoU(a, b) = I / (area_a + area_b - I), I the area of the intersection;
// 0 when either area is <= 0. The same operations in the same order as
// TensorFlow's NMS kernels, so the same floats come out.
inline float Iou(const Box& a, const Box& b) {
  if (a.area <= 0 || b.area <= 0) return 0.0f;
  float h = std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin);
  float w = std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin);
  float intersection = std::max(h, 0.0f) * std::max(w, 0.0f);
  return intersection / (a.area + b.area - intersection);
}

// Can this box suppress or be suppressed at all? A box whose area is not a
// positive finite number has IoU 0 (or NaN) with every box, which never
// exceeds a threshold in [0, 1]; its coordinates are then all finite.
inline bool TakesPart(const Box& b) { return b.area > 0 && std::isfinite(b.area); }

}  // namespace dflow::detection
