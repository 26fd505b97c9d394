// The class shapes as inside-tests on a unit frame; see scene_shapes.h.
#include "models/data/scene_shapes.h"

#include <algorithm>
#include <array>
#include <cstdlib>

namespace dflow::models::scenes {
namespace {

// A regular five-pointed star (inner radius 0.382 of the outer), point up,
// its vertices rounded to the frame's fixed point once, here.
constexpr std::array<std::array<int64_t, 2>, 10> kStar = {{{0, -65536}, {14714, -20252},
    {62328, -20252}, {23807, 7735}, {38521, 53020}, {0, 25033}, {-38521, 53020},
    {-23807, 7735}, {-62328, -20252}, {-14714, -20252}}};
constexpr int64_t kHexagonHalfHeight = 56756;  // sqrt(3) / 2
constexpr int64_t kRingInner = 36045;          // 0.55: the hole's radius
constexpr int64_t kCrossArm = kUnit / 3;       // half the width of an arm
constexpr int64_t kBiteCentre = 29491;         // 0.45: the crescent's bite, centred right of the disc's
constexpr int64_t kBiteRadius = 52429;         // 0.8

// Even-odd crossing test: a ray to the right crosses the outline an odd
// number of times from inside. Products stay below 2^36.
bool InsideStar(int64_t u, int64_t v) {
  bool inside = false;
  for (size_t i = 0, j = kStar.size() - 1; i < kStar.size(); j = i++) {
    auto [x0, y0] = kStar[j];
    auto [x1, y1] = kStar[i];
    if ((y0 > v) == (y1 > v)) continue;
    // u < x0 + (v - y0) (x1 - x0) / (y1 - y0), multiplied out by (y1 - y0)
    int64_t lhs = (u - x0) * (y1 - y0), rhs = (v - y0) * (x1 - x0);
    if (y1 > y0 ? lhs < rhs : lhs > rhs) inside = !inside;
  }
  return inside;
}

// Whether (u, v), in units of 1 / kUnit, lies inside the shape's unit frame.
bool InsideUnitShape(ShapeKind kind, int64_t u, int64_t v) {
  const int64_t au = std::abs(u), av = std::abs(v), r2 = u * u + v * v;
  switch (kind) {
    case ShapeKind::kCircle: return r2 <= kUnit * kUnit;
    case ShapeKind::kSquare: return au <= kUnit && av <= kUnit;
    case ShapeKind::kTriangle: return v <= kUnit && 2 * au <= v + kUnit;  // apex at v = -1
    case ShapeKind::kDiamond: return au + av <= kUnit;
    case ShapeKind::kRing: return r2 <= kUnit * kUnit && r2 >= kRingInner * kRingInner;
    case ShapeKind::kCross:
      return (au <= kCrossArm && av <= kUnit) || (av <= kCrossArm && au <= kUnit);
    case ShapeKind::kStar: return InsideStar(u, v);
    case ShapeKind::kHexagon:  // flat top: |v| <= h and 2h |u| + |v| <= 2h
      return av <= kHexagonHalfHeight && 2 * kHexagonHalfHeight * au + av * kUnit <=
                                             2 * kHexagonHalfHeight * kUnit;
    case ShapeKind::kCrescent:  // the disc less a bite of radius 0.8 centred at u = 0.45
      return r2 <= kUnit * kUnit &&
             (u - kBiteCentre) * (u - kBiteCentre) + v * v > kBiteRadius * kBiteRadius;
    case ShapeKind::kTee:  // a bar along the top (v <= -1/3) and a stem down the middle
      return au <= kUnit && av <= kUnit && (v <= -kCrossArm || au <= kCrossArm);
  }
  return false;
}

// Maps offsets from the shape's centre (eighths of a pixel) to its unit
// frame: rotate, then divide by the half sizes through 2^36 / half.
class Frame {
 public:
  explicit Frame(const ShapeGeometry& g)
      : kind_(g.kind), cos_(g.rotation.cos), sin_(g.rotation.sin),
        inv_u_((int64_t{1} << 36) / g.half_u), inv_v_((int64_t{1} << 36) / g.half_v) {}

  bool Inside(int64_t dx, int64_t dy) const {
    // U, V in units of 2^-15 pixel; (U * 2^36 / (half * 2^12)) >> 32 is U / half in kUnit
    int64_t u = dx * cos_ + dy * sin_, v = dy * cos_ - dx * sin_;
    return InsideUnitShape(kind_, (u * inv_u_) >> 32, (v * inv_v_) >> 32);
  }

 private:
  ShapeKind kind_;
  int64_t cos_, sin_, inv_u_, inv_v_;
};

// Aspect ratio ranges, per mille, by kind.
constexpr std::array<std::array<int64_t, 2>, kNumShapeKinds> kAspect = {{
    {700, 1000}, {750, 1000}, {700, 1000}, {500, 720}, {750, 1000}, {800, 1000},
    {850, 1000}, {800, 1000}, {800, 1000}, {800, 1000}}};

// Samples of a 4x4 grid inside the pixel whose corner is (x, y) eighths from the centre.
uint8_t Coverage(const Frame& frame, int64_t x, int64_t y) {
  uint8_t count = 0;
  for (int64_t sy = 1; sy < kSubpixel; sy += 2)
    for (int64_t sx = 1; sx < kSubpixel; sx += 2) count += frame.Inside(x + sx, y + sy);
  return count;
}

}  // namespace

Rotation RandomRotation(SeededRandom& random) {
  // The rational parametrisation of the circle, t = tan(angle / 2) in
  // [-1, 1]: cos = (1 - t^2) / (1 + t^2), sin = 2t / (1 + t^2), then half
  // of the rotations turned by 180 degrees to cover the whole circle.
  const int64_t one = kAngleOne, t = RandomIn(random, -one, one);
  const int64_t den = one * one + t * t;
  Rotation r{one * (one * one - t * t) / den, one * 2 * t * one / den};
  if (random.Below(2)) r = {-r.cos, -r.sin};
  return r;
}

ShapeGeometry RandomGeometry(ShapeKind kind, int64_t size, SeededRandom& random) {
  const auto [lo, hi] = kAspect[static_cast<size_t>(kind)];
  ShapeGeometry g;
  g.kind = kind;
  g.half_u = size * kSubpixel / 2;
  g.half_v = std::max<int64_t>(1, g.half_u * RandomIn(random, lo, hi) / 1000);
  g.rotation = RandomRotation(random);
  g.offset_x = RandomIn(random, 0, kSubpixel - 1);
  g.offset_y = RandomIn(random, 0, kSubpixel - 1);
  return g;
}

ShapeGeometry Scaled(ShapeGeometry g, int64_t num, int64_t den) {
  g.half_u = std::max<int64_t>(1, (g.half_u * num + den - 1) / den);
  g.half_v = std::max<int64_t>(1, (g.half_v * num + den - 1) / den);
  return g;
}

void PixelBox::Add(int64_t x, int64_t y) {
  if (x1 < x0) {
    *this = {x, y, x, y};
    return;
  }
  x0 = std::min(x0, x), y0 = std::min(y0, y), x1 = std::max(x1, x), y1 = std::max(y1, y);
}

ShapeMask RasterizeShape(const ShapeGeometry& g, bool antialias) {
  const Rotation& r = g.rotation;
  // Half extents of the rotated unit frame in pixels, plus two pixels so
  // that the grid's border is outside the shape.
  const int64_t scale = kAngleOne * kSubpixel;
  const int64_t ex = (g.half_u * std::abs(r.cos) + g.half_v * std::abs(r.sin)) / scale + 2;
  const int64_t ey = (g.half_u * std::abs(r.sin) + g.half_v * std::abs(r.cos)) / scale + 2;
  ShapeMask m;
  m.width = 2 * ex + 1, m.height = 2 * ey + 1;
  const int64_t cx = ex * kSubpixel + g.offset_x, cy = ey * kSubpixel + g.offset_y;
  const size_t n = static_cast<size_t>(m.width * m.height);
  m.inside.assign(n, 0);
  m.coverage.assign(n, 0);
  Frame frame(g);
  const int64_t half = kSubpixel / 2;
  for (int64_t y = 0; y < m.height; ++y)
    for (int64_t x = 0; x < m.width; ++x) {
      if (!frame.Inside(x * kSubpixel + half - cx, y * kSubpixel + half - cy)) continue;
      m.inside[y * m.width + x] = 1;
      m.coverage[y * m.width + x] = 16;
      m.box.Add(x, y);
      ++m.pixels;
    }
  if (!antialias) return m;
  // Only pixels on the outline (inside differs from a neighbour's) are sampled.
  for (int64_t y = 1; y + 1 < m.height; ++y)
    for (int64_t x = 1; x + 1 < m.width; ++x) {
      const uint8_t* p = &m.inside[y * m.width + x];
      if (p[-1] == *p && p[1] == *p && p[-m.width] == *p && p[m.width] == *p) continue;
      m.coverage[y * m.width + x] = Coverage(frame, x * kSubpixel - cx, y * kSubpixel - cy);
    }
  return m;
}

}  // namespace dflow::models::scenes
