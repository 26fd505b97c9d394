// Box encoding for anchor-based detectors: a box relative to its anchor as
// (dx, dy, dw, dh) = ((cx - cx_a) / w_a, (cy - cy_a) / h_a, log(w / w_a),
// log(h / h_a)), each divided by a variance (R-CNN, SSD, RetinaNet).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

#include "graph/scope.h"

namespace dflow::models::detection {

// Divisors of the four deltas, in delta order (dx, dy, dw, dh). SSD (Liu et
// al. 2016) uses 0.1, 0.1, 0.2, 0.2; RetinaNet and Faster R-CNN use 1 (their
// weights 1, 1, 1, 1 are the reciprocals of these).
using BoxVariances = std::array<float, 4>;
inline constexpr BoxVariances kSsdVariances = {0.1f, 0.1f, 0.2f, 0.2f};
inline constexpr BoxVariances kUnitVariances = {1.0f, 1.0f, 1.0f, 1.0f};

// Decoding clamps dw, dh (after the variance) to log(1000 / 16), as
// torchvision and Detectron do, so an untrained head cannot overflow exp.
inline const float kMaxLogScale = std::log(1000.0f / 16.0f);

// Boxes and anchors are (y1, x1, y2, x2), y1 < y2 and x1 < x2; deltas are
// (dx, dy, dw, dh). Plain C++ for the input pipeline: `count` boxes, each
// against the anchor at the same index; out may alias neither input.
void EncodeBoxes(const float* boxes, const float* anchors, int64_t count,
                 const BoxVariances& variances, float* deltas);
void DecodeBoxes(const float* deltas, const float* anchors, int64_t count,
                 const BoxVariances& variances, float* boxes);

// The same as graph functions built from ordinary ops, so gradients flow:
// boxes / deltas [..., A, 4] (float32), anchors [A, 4] (broadcast over the
// leading dims, e.g. the batch).
Output EncodeBoxes(const Scope& scope, const Input& boxes, const Input& anchors,
                   const BoxVariances& variances);
Output DecodeBoxes(const Scope& scope, const Input& deltas, const Input& anchors,
                   const BoxVariances& variances);

}  // namespace dflow::models::detection
