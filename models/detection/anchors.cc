// SSD default boxes and RetinaNet anchors; see anchors.h for the order.
#include "models/detection/anchors.h"

#include <algorithm>
#include <cmath>

#include "graph/status.h"

namespace dflow::models::detection {
namespace {

struct BoxSize {
  float height, width;
};

// Appends the boxes of one map (rows x cols cells, cell size step_y, step_x
// in the anchors' units) with the per-cell sizes in `sizes`.
void AppendGrid(int64_t rows, int64_t cols, float step_y, float step_x,
                const std::vector<BoxSize>& sizes, bool clip, std::vector<float>& out) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      float cy = (static_cast<float>(i) + 0.5f) * step_y;
      float cx = (static_cast<float>(j) + 0.5f) * step_x;
      for (const BoxSize& b : sizes) {
        float box[4] = {cy - b.height / 2, cx - b.width / 2, cy + b.height / 2,
                        cx + b.width / 2};
        for (float v : box) out.push_back(clip ? std::clamp(v, 0.0f, 1.0f) : v);
      }
    }
  }
}

Tensor ToTensor(const std::vector<float>& values) {
  return Tensor::FromVector(values, Shape{static_cast<int64_t>(values.size() / 4), 4});
}

}  // namespace

std::vector<SsdLayer> MobileNetSsd300Layers() {
  std::vector<SsdLayer> layers;
  for (int64_t f : {19, 10, 5, 3, 2, 1}) layers.push_back({f, {2.0f, 3.0f}});
  return layers;
}

Tensor SsdAnchors(const std::vector<SsdLayer>& layers, SsdAnchorOptions options) {
  DFLOW_REQUIRE(!layers.empty(), "SsdAnchors: no feature maps");
  const size_t m = layers.size();
  std::vector<float> scales(m + 1, 1.0f);  // s_m = 1 for the last map's extra box
  for (size_t k = 0; k < m; ++k) {
    float t = m == 1 ? 0.0f : static_cast<float>(k) / static_cast<float>(m - 1);
    scales[k] = options.min_scale + (options.max_scale - options.min_scale) * t;
  }
  std::vector<float> out;
  for (size_t k = 0; k < m; ++k) {
    const SsdLayer& layer = layers[k];
    DFLOW_REQUIRE(layer.feature_size > 0, "SsdAnchors: map ", k, " has size ",
                  layer.feature_size);
    float s = scales[k];
    float extra = std::sqrt(s * scales[k + 1]);
    std::vector<BoxSize> sizes = {{s, s}, {extra, extra}};
    for (float r : layer.ratios) {
      DFLOW_REQUIRE(r > 0, "SsdAnchors: map ", k, " has aspect ratio ", r);
      float root = std::sqrt(r);
      sizes.push_back({s / root, s * root});  // width s sqrt(r), height s / sqrt(r)
      sizes.push_back({s * root, s / root});  // and its transpose
    }
    float step = 1.0f / static_cast<float>(layer.feature_size);
    AppendGrid(layer.feature_size, layer.feature_size, step, step, sizes, options.clip, out);
  }
  return ToTensor(out);
}

Tensor RetinaNetAnchors(int64_t image_height, int64_t image_width,
                        RetinaNetAnchorOptions options) {
  DFLOW_REQUIRE(image_height > 0 && image_width > 0, "RetinaNetAnchors: image size ",
                image_height, "x", image_width);
  DFLOW_REQUIRE(options.min_level <= options.max_level && options.min_level >= 0,
                "RetinaNetAnchors: levels ", options.min_level, "..", options.max_level);
  std::vector<float> out;
  for (int level = options.min_level; level <= options.max_level; ++level) {
    int64_t stride = int64_t{1} << level;
    float base = options.size_per_stride * static_cast<float>(stride);
    std::vector<BoxSize> sizes;
    for (float r : options.ratios) {
      for (float c : options.scales) {
        sizes.push_back({base * c * std::sqrt(r), base * c / std::sqrt(r)});
      }
    }
    int64_t rows = (image_height + stride - 1) / stride;
    int64_t cols = (image_width + stride - 1) / stride;
    AppendGrid(rows, cols, static_cast<float>(stride), static_cast<float>(stride), sizes,
               false, out);
  }
  if (options.normalized) {
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] /= static_cast<float>(i % 2 == 0 ? image_height : image_width);
    }
  }
  return ToTensor(out);
}

}  // namespace dflow::models::detection
