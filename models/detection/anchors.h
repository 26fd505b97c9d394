// Anchor (default box) generators for single-shot detectors: SSD's default
// boxes (Liu et al. 2016, section 2.2) and RetinaNet's FPN anchors (Lin et
// al. 2017, "Focal Loss for Dense Object Detection", section 4).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/tensor.h"

namespace dflow::models::detection {

// Every generator returns a float32 Tensor [A, 4] of boxes (y1, x1, y2, x2)
// in this fixed order, which the box and class heads must follow:
//   for each feature map (in the order given),
//     for each cell, row-major (row i, then column j),
//       for each anchor type of that map (the order documented below).
// A head whose NHWC output [N, f, f, k * 4] is reshaped to [N, f * f * k, 4]
// and joined over the maps in the same order lines up with it.

struct SsdLayer {
  int64_t feature_size = 0;   // the map is feature_size x feature_size cells
  std::vector<float> ratios;  // aspect ratios r > 1; each adds r and 1/r
};

struct SsdAnchorOptions {
  float min_scale = 0.2f;  // s_1
  float max_scale = 0.9f;  // s_m
  bool clip = false;       // clip the boxes to [0, 1]
};

// MobileNetV1-SSD300's six maps 19, 10, 5, 3, 2, 1 (models/mobilenet_ssd.h),
// each with ratios {2, 3}: 6 boxes per cell, as that network's heads (and
// the PyTorch MobileNetV1-SSD300 reference network) predict.
std::vector<SsdLayer> MobileNetSsd300Layers();

// SSD default boxes, normalised coordinates (image = [0, 1] x [0, 1]).
// Map k of m (k = 0..m-1) has scale s_k = s_min + (s_max - s_min) k / (m - 1),
// cell centres ((j + 0.5) / f, (i + 0.5) / f), and per cell, in this order:
//   ratio 1 at scale s_k; ratio 1 at scale sqrt(s_k s_{k+1}) (s_m = 1);
//   then for each r in ratios: (w, h) = (s_k sqrt(r), s_k / sqrt(r)) and the
//   transposed box (s_k / sqrt(r), s_k sqrt(r)).
// So a map has 2 + 2 * ratios.size() boxes per cell.
Tensor SsdAnchors(const std::vector<SsdLayer>& layers, SsdAnchorOptions options = {});

struct RetinaNetAnchorOptions {
  int min_level = 3;           // P3: stride 2^3 = 8
  int max_level = 7;           // P7: stride 128
  float size_per_stride = 4;   // base size 4 * stride: 32 .. 512 pixels
  std::vector<float> scales = {1.0f, 1.2599210f, 1.5874011f};  // 2^0, 2^(1/3), 2^(2/3)
  std::vector<float> ratios = {0.5f, 1.0f, 2.0f};              // r = height / width
  bool normalized = false;     // divide by the image size (coordinates in [0, 1])
};

// RetinaNet anchors for an image of image_height x image_width pixels, in
// pixel coordinates (or normalised, see the option). Level l has stride
// s = 2^l, a map of ceil(H / s) x ceil(W / s) cells centred at
// ((j + 0.5) s, (i + 0.5) s), and per cell, ratio-major then scale (as
// torchvision's AnchorGenerator): for each r, for each scale c, a box of area
// (4 s c)^2 with h = 4 s c sqrt(r), w = 4 s c / sqrt(r). Not clipped.
Tensor RetinaNetAnchors(int64_t image_height, int64_t image_width,
                        RetinaNetAnchorOptions options = {});

}  // namespace dflow::models::detection
