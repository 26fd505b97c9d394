// The class shapes of the synthetic detection scenes (scene_generator.h),
// rasterised in integer fixed point: compilers contract a*b+c into an FMA on
// some targets and not on others, and libm differs between platforms, so a
// scene drawn with floating point could change by a pixel from one machine
// to the next. Integers cannot. Internal to models/data (not installed).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/tensor.h"
#include "models/data/seeded_random.h"

namespace dflow::models::scenes {

// Positions are in eighths of a pixel; rotations and the shapes' unit frame
// in fixed point (kAngleOne = 1.0 for cos/sin, kUnit = 1.0 for the frame).
inline constexpr int64_t kSubpixel = 8;
inline constexpr int64_t kAngleOne = 1 << 12;
inline constexpr int64_t kUnit = 1 << 16;

// Uniform in [lo, hi], both included.
inline int64_t RandomIn(SeededRandom& random, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(random.Below(static_cast<uint64_t>(hi - lo + 1)));
}

// The classes, in category order (category id = kind + 1).
enum class ShapeKind {
  kCircle, kSquare, kTriangle, kDiamond, kRing, kCross, kStar, kHexagon, kCrescent, kTee
};
inline constexpr int kNumShapeKinds = 10;

// A rotation as (cos, sin) in units of 1 / kAngleOne.
struct Rotation {
  int64_t cos = kAngleOne, sin = 0;
};
// Any angle; not uniform in angle, which a scene does not need.
Rotation RandomRotation(SeededRandom& random);

// A shape's unit frame [-1, 1]^2 stretched to half sizes along its own axes
// (u, v), rotated, and centred `offset` eighths of a pixel past a pixel corner.
struct ShapeGeometry {
  ShapeKind kind = ShapeKind::kCircle;
  int64_t half_u = 0, half_v = 0;  // eighths of a pixel
  Rotation rotation;
  int64_t offset_x = 0, offset_y = 0;  // 0 .. kSubpixel - 1
};

// A random geometry of `kind` about `size` pixels across, with the aspect
// ratios and rotations that keep the classes apart (a diamond is never a
// square turned by 45 degrees: its aspect stays below 0.75).
ShapeGeometry RandomGeometry(ShapeKind kind, int64_t size, SeededRandom& random);
// The same shape scaled by num / den.
ShapeGeometry Scaled(ShapeGeometry geometry, int64_t num, int64_t den);

// Inclusive pixel box.
struct PixelBox {
  int64_t x0 = 0, y0 = 0, x1 = -1, y1 = -1;
  int64_t width() const { return x1 - x0 + 1; }
  int64_t height() const { return y1 - y0 + 1; }
  void Add(int64_t x, int64_t y);
};

// A shape on its own grid of pixels. A pixel belongs to the shape when its
// centre is inside; `coverage` (the share of 4x4 samples inside, 0..16) only
// softens the drawn edge when anti-aliased.
struct ShapeMask {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> inside;
  std::vector<uint8_t> coverage;
  PixelBox box;  // tight box of the inside pixels
  int64_t pixels = 0;
};

ShapeMask RasterizeShape(const ShapeGeometry& geometry, bool antialias);
// Sprite `index` of uint8 [count, height, width] `images`, cropped to its
// non-zero pixels and scaled bilinearly so that the crop's longer side is
// `size`; pixels of at least half brightness are inside.
ShapeMask RasterizeSprite(const Tensor& images, int64_t index, int64_t size, bool antialias);

}  // namespace dflow::models::scenes
