// Backgrounds, shapes and grain of the synthetic scenes; see scene_painting.h.
// Distractors are in scene_distractors.cc.
#include "models/data/scene_painting.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace dflow::models::scenes {
namespace {

// Smooth noise in 0..255: random values on a grid of `cell` pixels,
// interpolated bilinearly, so it forms patches about a cell across.
class ValueNoise {
 public:
  ValueNoise(int64_t height, int64_t width, int64_t cell, SeededRandom& random)
      : cell_(cell), columns_(width / cell + 2),
        grid_(static_cast<size_t>((height / cell + 2) * columns_)),
        inverse_((int64_t{1} << 32) / (cell * cell)) {
    for (int64_t& value : grid_) value = static_cast<int64_t>(random.Below(256));
  }

  int64_t operator()(int64_t y, int64_t x) const {
    const int64_t gy = y / cell_, gx = x / cell_, ty = y % cell_, tx = x % cell_;
    const int64_t* row = &grid_[static_cast<size_t>(gy * columns_ + gx)];
    const int64_t top = row[0] * (cell_ - tx) + row[1] * tx;
    const int64_t bottom = row[columns_] * (cell_ - tx) + row[columns_ + 1] * tx;
    return ((top * (cell_ - ty) + bottom * ty) * inverse_) >> 32;
  }

 private:
  int64_t cell_, columns_;
  std::vector<int64_t> grid_;
  int64_t inverse_;  // 2^32 / cell^2
};

int64_t Distance(Rgb a, Rgb b) {
  return std::abs(a.r - b.r) + std::abs(a.g - b.g) + std::abs(a.b - b.b);
}

Rgb Mix(Rgb from, Rgb to, int64_t t, int64_t scale) {
  return {from.r + (to.r - from.r) * t / scale, from.g + (to.g - from.g) * t / scale,
          from.b + (to.b - from.b) * t / scale};
}

uint8_t ClampByte(int64_t v) { return static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255)); }

// Blobs of `blob` where the coarse noise is high, and a brightness mottle.
void PaintTexture(Canvas& canvas, SeededRandom& random) {
  const Rgb blob = RandomColor(random);
  const ValueNoise blobs(canvas.height(), canvas.width(), RandomIn(random, 16, 48), random);
  const ValueNoise mottle(canvas.height(), canvas.width(), RandomIn(random, 4, 10), random);
  for (int64_t y = 0; y < canvas.height(); ++y)
    for (int64_t x = 0; x < canvas.width(); ++x) {
      canvas.Blend(y, x, blob, std::clamp<int64_t>((blobs(y, x) - 120) / 5, 0, 12));
      const int64_t shift = (mottle(y, x) - 128) / 8;
      uint8_t* p = canvas.at(y, x);
      for (int c = 0; c < 3; ++c) p[c] = ClampByte(p[c] + shift);
    }
}

}  // namespace

Canvas::Canvas(int64_t height, int64_t width)
    : height_(height), width_(width), image_(DType::kUInt8, Shape{height, width, 3}),
      pixels_(image_.data<uint8_t>()) {}

void Canvas::Blend(int64_t y, int64_t x, Rgb color, int64_t alpha) {
  uint8_t* p = at(y, x);
  const int64_t keep = 16 - alpha;
  p[0] = static_cast<uint8_t>((p[0] * keep + color.r * alpha + 8) >> 4);
  p[1] = static_cast<uint8_t>((p[1] * keep + color.g * alpha + 8) >> 4);
  p[2] = static_cast<uint8_t>((p[2] * keep + color.b * alpha + 8) >> 4);
}

Rgb RandomColor(SeededRandom& random) {
  return {RandomIn(random, 0, 255), RandomIn(random, 0, 255), RandomIn(random, 0, 255)};
}

Rgb MeanColor(const Canvas& canvas, const PixelBox& box) {
  int64_t r = 0, g = 0, b = 0, n = 0;
  for (int64_t y = std::max<int64_t>(box.y0, 0); y <= std::min(box.y1, canvas.height() - 1); ++y)
    for (int64_t x = std::max<int64_t>(box.x0, 0); x <= std::min(box.x1, canvas.width() - 1); ++x) {
      const uint8_t* p = canvas.at(y, x);
      r += p[0], g += p[1], b += p[2], ++n;
    }
  if (n == 0) return {128, 128, 128};
  return {r / n, g / n, b / n};
}

Rgb ContrastingColor(const std::vector<Rgb>& avoid, SeededRandom& random) {
  auto nearest = [&](Rgb color) {
    int64_t d = 3 * 255;
    for (const Rgb& other : avoid) d = std::min(d, Distance(color, other));
    return d;
  };
  Rgb best = RandomColor(random);
  for (int i = 0; i < 8 && nearest(best) < 150; ++i) {
    const Rgb other = RandomColor(random);
    if (nearest(other) > nearest(best)) best = other;
  }
  return best;
}

void PaintBackground(Canvas& canvas, bool textured, SeededRandom& random) {
  const Rgb from = RandomColor(random), to = RandomColor(random);
  const Rotation dir = RandomRotation(random);
  const int64_t h = canvas.height(), w = canvas.width();
  // The projection of (2x - w, 2y - h) on the direction lies in
  // [-reach, reach]; t maps it to 0..256 through 2^40 / (2 reach).
  const int64_t reach = w * std::abs(dir.cos) + h * std::abs(dir.sin) + kAngleOne;
  const int64_t inverse = (int64_t{256} << 32) / (2 * reach);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const int64_t projection = (2 * x + 1 - w) * dir.cos + (2 * y + 1 - h) * dir.sin;
      const Rgb c = Mix(from, to, ((projection + reach) * inverse) >> 32, 256);
      uint8_t* p = canvas.at(y, x);
      p[0] = ClampByte(c.r), p[1] = ClampByte(c.g), p[2] = ClampByte(c.b);
    }
  if (textured) PaintTexture(canvas, random);
}

void PaintShape(Canvas& canvas, const ShapeMask& mask, int64_t x, int64_t y, Rgb color) {
  for (int64_t my = 0; my < mask.height; ++my) {
    const int64_t cy = y + my;
    if (cy < 0 || cy >= canvas.height()) continue;
    for (int64_t mx = 0; mx < mask.width; ++mx) {
      const int64_t cx = x + mx;
      const uint8_t alpha = mask.coverage[my * mask.width + mx];
      if (alpha > 0 && cx >= 0 && cx < canvas.width()) canvas.Blend(cy, cx, color, alpha);
    }
  }
}

void AddGrain(Canvas& canvas, int64_t amplitude, SeededRandom& random) {
  const uint64_t levels = static_cast<uint64_t>(2 * amplitude + 1);
  for (int64_t y = 0; y < canvas.height(); ++y)
    for (int64_t x = 0; x < canvas.width(); ++x) {
      uint64_t bits = random.Next();  // one draw serves the three channels
      uint8_t* p = canvas.at(y, x);
      for (int c = 0; c < 3; ++c, bits >>= 16)
        p[c] = ClampByte(p[c] + static_cast<int64_t>((bits & 0xFFFF) % levels) - amplitude);
    }
}

}  // namespace dflow::models::scenes
