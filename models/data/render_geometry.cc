// One bilinear pass from the input image through an AugmentGeometry
// (detection_augment.h) to the S x S output.
#include <algorithm>
#include <cmath>

#include "models/data/detection_augment.h"

namespace dflow::models {
namespace {

// One output row's (or column's) two source lines and the weight of the
// second; a line of -1 lies on the canvas outside the image (fill colour).
struct Tap {
  int64_t first, second;
  float weight;
};

// Output positions 0..size-1 over the window [start, start + length) of a
// canvas line on which the image occupies [offset, offset + extent). Half-
// pixel centres: output i samples canvas (i + 0.5) * length / size - 0.5,
// clamped to the window so that nothing outside the crop leaks in.
std::vector<Tap> Taps(int64_t size, int64_t start, int64_t length, int64_t offset, int64_t extent,
                      bool mirror) {
  auto to_image = [&](int64_t canvas) {
    int64_t i = canvas - offset;
    return i >= 0 && i < extent ? i : -1;
  };
  std::vector<Tap> taps(static_cast<size_t>(size));
  const double scale = static_cast<double>(length) / size;
  for (int64_t i = 0; i < size; ++i) {
    double at = std::clamp((i + 0.5) * scale - 0.5, 0.0, static_cast<double>(length - 1));
    int64_t lower = static_cast<int64_t>(at), upper = std::min(lower + 1, length - 1);
    taps[mirror ? size - 1 - i : i] = {to_image(start + lower), to_image(start + upper),
                                       static_cast<float>(at - lower)};
  }
  return taps;
}

// A byte as a value in [0, 1], v / 255 exactly as a division would give it.
float Unit(uint8_t v) {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t;
    for (int i = 0; i < 256; ++i) t[i] = static_cast<float>(i) / 255.0f;
    return t;
  }();
  return table[v];
}
float Unit(float v) { return v; }

template <typename T>
void Render(const T* pixels, int64_t width, const std::vector<Tap>& rows,
            const std::vector<Tap>& cols, const std::array<float, 3>& fill, float* out) {
  auto at = [&](int64_t row, int64_t col, int c) {
    return row < 0 || col < 0 ? fill[c] : Unit(pixels[(row * width + col) * 3 + c]);
  };
  // Along the row first (left + w (right - left)), then between the rows.
  auto along = [&](int64_t row, const Tap& q, int c) {
    float left = at(row, q.first, c);
    return left + q.weight * (at(row, q.second, c) - left);
  };
  for (const Tap& r : rows)
    for (const Tap& q : cols)
      for (int c = 0; c < 3; ++c) {
        float top = along(r.first, q, c), bottom = along(r.second, q, c);
        // Rounding may step past the neighbours by an ulp; the output promises [0, 1].
        *out++ = std::clamp(top + r.weight * (bottom - top), 0.0f, 1.0f);
      }
}

}  // namespace

void RenderGeometry(const Tensor& image, const AugmentGeometry& g, int64_t size,
                    const std::array<float, 3>& fill, float* out) {
  const int64_t height = image.dim(0), width = image.dim(1);
  DFLOW_REQUIRE(g.crop_height > 0 && g.crop_width > 0 && g.crop_top >= 0 && g.crop_left >= 0 &&
                    g.crop_top + g.crop_height <= g.canvas_height &&
                    g.crop_left + g.crop_width <= g.canvas_width,
                "RenderGeometry: the crop window must lie inside the ", g.canvas_height, "x",
                g.canvas_width, " canvas");
  std::vector<Tap> rows = Taps(size, g.crop_top, g.crop_height, g.image_top, height, false);
  std::vector<Tap> cols = Taps(size, g.crop_left, g.crop_width, g.image_left, width, g.flip);
  if (image.dtype() == DType::kUInt8)
    Render(image.data<uint8_t>(), width, rows, cols, fill, out);
  else
    Render(image.data<float>(), width, rows, cols, fill, out);
}

}  // namespace dflow::models
