// Unlabelled clutter of the synthetic scenes (scene_painting.h): lines, dot
// clusters and blotches, each unlike every class shape (too thin, too small
// or without an edge), so a detector must learn shapes, not "anything".
// Distances are compared squared, in half pixels, so that pixel centres
// (2x + 1, 2y + 1) are integers.
#include <algorithm>

#include "models/data/scene_painting.h"

namespace dflow::models::scenes {
namespace {

struct Point {
  int64_t x, y;  // half pixels
};

Point RandomPoint(const Canvas& canvas, SeededRandom& random) {
  return {2 * RandomIn(random, 0, canvas.width() - 1) + 1,
          2 * RandomIn(random, 0, canvas.height() - 1) + 1};
}

// The pixels whose centres lie within `reach` half pixels of the box from a
// to b, clipped to the canvas, as an inclusive PixelBox.
PixelBox Around(const Canvas& canvas, Point a, Point b, int64_t reach) {
  return {std::max<int64_t>(0, (std::min(a.x, b.x) - reach) / 2),
          std::max<int64_t>(0, (std::min(a.y, b.y) - reach) / 2),
          std::min(canvas.width() - 1, (std::max(a.x, b.x) + reach) / 2),
          std::min(canvas.height() - 1, (std::max(a.y, b.y) + reach) / 2)};
}

// Whether (dx, dy) lies within `reach` of the segment from 0 to (ex, ey),
// whose squared length is length2; between the ends the squared distance
// is |d|^2 - along^2 / length2, compared here times length2.
bool NearSegment(int64_t dx, int64_t dy, int64_t ex, int64_t ey, int64_t length2, int64_t reach) {
  const int64_t along = dx * ex + dy * ey;
  if (along <= 0) return dx * dx + dy * dy <= reach * reach;
  if (along >= length2) return (dx - ex) * (dx - ex) + (dy - ey) * (dy - ey) <= reach * reach;
  return (dx * dx + dy * dy) * length2 - along * along <= reach * reach * length2;
}

// A segment 1-3 pixels thick: far thinner than any shape of min_size.
void PaintLine(Canvas& canvas, int64_t max_length, SeededRandom& random) {
  const Point a = RandomPoint(canvas, random);
  const Rotation dir = RandomRotation(random);
  const int64_t length = 2 * RandomIn(random, max_length / 2, max_length);  // half pixels
  const Point b{a.x + length * dir.cos / kAngleOne, a.y + length * dir.sin / kAngleOne};
  const int64_t half_width = RandomIn(random, 1, 3);  // half pixels
  const Rgb color = RandomColor(random);
  const int64_t ex = b.x - a.x, ey = b.y - a.y, length2 = std::max<int64_t>(1, ex * ex + ey * ey);
  const PixelBox box = Around(canvas, a, b, half_width);
  for (int64_t y = box.y0; y <= box.y1; ++y)
    for (int64_t x = box.x0; x <= box.x1; ++x) {
      const int64_t dx = 2 * x + 1 - a.x, dy = 2 * y + 1 - a.y;
      if (NearSegment(dx, dy, ex, ey, length2, half_width)) canvas.Blend(y, x, color, 14);
    }
}

// A hard disc of `radius` half pixels.
void PaintDot(Canvas& canvas, Point c, int64_t radius, Rgb color) {
  const PixelBox box = Around(canvas, c, c, radius);
  for (int64_t y = box.y0; y <= box.y1; ++y)
    for (int64_t x = box.x0; x <= box.x1; ++x) {
      const int64_t dx = 2 * x + 1 - c.x, dy = 2 * y + 1 - c.y;
      if (dx * dx + dy * dy <= radius * radius) canvas.Blend(y, x, color, 16);
    }
}

// 3-12 dots, each under min_size / 2 across, within a few min_sizes.
void PaintDots(Canvas& canvas, int64_t min_size, SeededRandom& random) {
  const Point centre = RandomPoint(canvas, random);
  const Rgb color = RandomColor(random);
  const int64_t spread = 6 * min_size, max_radius = std::max<int64_t>(1, min_size / 4);
  for (int64_t i = 0, n = RandomIn(random, 3, 12); i < n; ++i) {
    const Point c{centre.x + RandomIn(random, -spread, spread),
                  centre.y + RandomIn(random, -spread, spread)};
    PaintDot(canvas, c, RandomIn(random, 1, max_radius), color);
  }
}

// Two or three overlapping soft discs whose opacity falls to nothing at
// their rim: a stain with no edge to find.
void PaintBlotch(Canvas& canvas, int64_t max_size, SeededRandom& random) {
  const Point centre = RandomPoint(canvas, random);
  const Rgb color = RandomColor(random);
  const int64_t radius =  // half pixels
      2 * RandomIn(random, std::max<int64_t>(3, max_size / 8), std::max<int64_t>(4, max_size / 3));
  for (int64_t i = 0, n = RandomIn(random, 2, 3); i < n; ++i) {
    const Point c{centre.x + RandomIn(random, -radius / 2, radius / 2),
                  centre.y + RandomIn(random, -radius / 2, radius / 2)};
    const PixelBox box = Around(canvas, c, c, radius);
    for (int64_t y = box.y0; y <= box.y1; ++y)
      for (int64_t x = box.x0; x <= box.x1; ++x) {
        const int64_t dx = 2 * x + 1 - c.x, dy = 2 * y + 1 - c.y, d2 = dx * dx + dy * dy;
        const int64_t r2 = radius * radius;
        if (d2 < r2) canvas.Blend(y, x, color, 7 * (r2 - d2) / r2);
      }
  }
}

}  // namespace

void PaintDistractors(Canvas& canvas, int64_t min_size, int64_t max_size, SeededRandom& random) {
  const int64_t count = RandomIn(random, 0, 3 + canvas.height() * canvas.width() / 20000);
  for (int64_t i = 0; i < count; ++i) switch (random.Below(3)) {
      case 0: PaintLine(canvas, max_size, random); break;
      case 1: PaintDots(canvas, min_size, random); break;
      default: PaintBlotch(canvas, max_size, random); break;
    }
}

}  // namespace dflow::models::scenes
