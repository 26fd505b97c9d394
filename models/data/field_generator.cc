// The synthetic field renderer; see field_generator.h. Everything is drawn
// in float RGB and rounded once at the end.
#include "models/data/field_generator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

namespace dflow::models {
namespace {

struct FloatRgb {
  float r, g, b;
};

class FloatCanvas {
 public:
  FloatCanvas(int64_t h, int64_t w) : h_(h), w_(w), px_(static_cast<size_t>(h * w)) {}
  int64_t height() const { return h_; }
  int64_t width() const { return w_; }
  FloatRgb& at(int64_t r, int64_t c) { return px_[r * w_ + c]; }
  // Blends `color` into the pixel with weight `alpha` in [0, 1].
  void Blend(int64_t r, int64_t c, FloatRgb color, float alpha) {
    FloatRgb& p = at(r, c);
    p = {p.r + alpha * (color.r - p.r), p.g + alpha * (color.g - p.g), p.b + alpha * (color.b - p.b)};
  }
  // A soft-edged disc: full inside `radius`, fading out over one pixel.
  void Disc(double x, double y, double radius, FloatRgb color) {
    int64_t r0 = std::max<int64_t>(0, static_cast<int64_t>(y - radius - 1));
    int64_t r1 = std::min<int64_t>(h_ - 1, static_cast<int64_t>(y + radius + 1));
    int64_t c0 = std::max<int64_t>(0, static_cast<int64_t>(x - radius - 1));
    int64_t c1 = std::min<int64_t>(w_ - 1, static_cast<int64_t>(x + radius + 1));
    for (int64_t r = r0; r <= r1; ++r)
      for (int64_t c = c0; c <= c1; ++c) {
        double d = std::hypot(c + 0.5 - x, r + 0.5 - y);
        float alpha = static_cast<float>(std::clamp(radius + 0.5 - d, 0.0, 1.0));
        if (alpha > 0) Blend(r, c, color, alpha);
      }
  }
  Tensor ToImage() const {
    Tensor image(DType::kUInt8, Shape{h_, w_, 3});
    uint8_t* out = image.data<uint8_t>();
    auto byte = [](float v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); };
    for (const FloatRgb& p : px_) *out++ = byte(p.r), *out++ = byte(p.g), *out++ = byte(p.b);
    return image;
  }

 private:
  int64_t h_, w_;
  std::vector<FloatRgb> px_;
};

// Smooth noise in [0, 1]: random values on a coarse grid, bilinearly
// interpolated (value noise), so the texture has patches of `cell` pixels.
class ValueNoise {
 public:
  ValueNoise(int64_t h, int64_t w, int64_t cell, std::mt19937_64& rng)
      : cell_(cell), cols_(w / cell + 2), grid_(static_cast<size_t>((h / cell + 2) * cols_)) {
    std::uniform_real_distribution<float> u(0, 1);
    for (float& v : grid_) v = u(rng);
  }
  float operator()(int64_t r, int64_t c) const {
    float fy = static_cast<float>(r) / cell_, fx = static_cast<float>(c) / cell_;
    int64_t y = static_cast<int64_t>(fy), x = static_cast<int64_t>(fx);
    float ty = fy - y, tx = fx - x;
    auto g = [&](int64_t yy, int64_t xx) { return grid_[yy * cols_ + xx]; };
    return (1 - ty) * ((1 - tx) * g(y, x) + tx * g(y, x + 1)) +
           ty * ((1 - tx) * g(y + 1, x) + tx * g(y + 1, x + 1));
  }

 private:
  int64_t cell_, cols_;
  std::vector<float> grid_;
};

// Leaves and soil: green and brown mixed by two octaves of noise, plus grain.
void PaintField(FloatCanvas& canvas, std::mt19937_64& rng) {
  ValueNoise coarse(canvas.height(), canvas.width(), 48, rng);
  ValueNoise fine(canvas.height(), canvas.width(), 9, rng);
  std::normal_distribution<float> grain(0, 6);
  const FloatRgb leaf{55, 105, 38}, soil{105, 82, 52};
  for (int64_t r = 0; r < canvas.height(); ++r)
    for (int64_t c = 0; c < canvas.width(); ++c) {
      float t = std::clamp(0.65f * coarse(r, c) + 0.35f * fine(r, c), 0.0f, 1.0f);
      t = t * t;  // mostly leaves, soil in the gaps
      float n = grain(rng);
      canvas.at(r, c) = {leaf.r + t * (soil.r - leaf.r) + n, leaf.g + t * (soil.g - leaf.g) + n,
                         leaf.b + t * (soil.b - leaf.b) + n};
    }
}

// A tan band along a random line; returns a test for "is (x, y) on the road".
auto PaintRoad(FloatCanvas& canvas, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, 1);
  double angle = u(rng) * M_PI, half_width = 10 + 20 * u(rng);
  double cx = u(rng) * canvas.width(), cy = u(rng) * canvas.height();
  double nx = -std::sin(angle), ny = std::cos(angle);  // the band's normal
  auto distance = [=](double x, double y) { return std::abs((x - cx) * nx + (y - cy) * ny); };
  std::normal_distribution<float> dust(0, 8);
  for (int64_t r = 0; r < canvas.height(); ++r)
    for (int64_t c = 0; c < canvas.width(); ++c) {
      double d = distance(c + 0.5, r + 0.5);
      if (d < half_width + 2)
        canvas.Blend(r, c, {196 + dust(rng), 178 + dust(rng), 138 + dust(rng)},
                     static_cast<float>(std::clamp((half_width + 2 - d) / 2, 0.0, 1.0)));
    }
  return [=](double x, double y) { return distance(x, y) < half_width + 4; };
}

}  // namespace

FieldImage GenerateField(const FieldOptions& o, uint64_t index) {
  DFLOW_REQUIRE(o.height >= 8 && o.width >= 8 && o.height * o.width <= (int64_t{1} << 26),
                "GenerateField: size ", o.width, "x", o.height, " outside 8x8 .. 64M pixels");
  DFLOW_REQUIRE(o.max_flowers >= 0 && o.min_radius > 0 && o.max_radius >= o.min_radius,
                "GenerateField: bad flower count or radius range");
  std::mt19937_64 rng(o.seed * 0x9E3779B97F4A7C15ull + index);
  std::uniform_real_distribution<double> u(0, 1);
  FloatCanvas canvas(o.height, o.width);
  PaintField(canvas, rng);
  auto on_road = [](double, double) { return false; };
  std::function<bool(double, double)> road = on_road;
  if (o.distractors && u(rng) < 0.4) road = PaintRoad(canvas, rng);
  if (o.distractors)  // sun reflections: larger, whiter than flowers
    for (int i = 0, n = static_cast<int>(u(rng) * 4); i < n; ++i)
      canvas.Disc(u(rng) * o.width, u(rng) * o.height, 5 + 6 * u(rng), {245, 245, 232});
  FieldImage field;
  int count = std::uniform_int_distribution<int>(0, o.max_flowers)(rng);
  for (int tries = 0; static_cast<int>(field.points.size()) < count && tries < 50 * (count + 1); ++tries) {
    Point p{u(rng) * o.width, u(rng) * o.height};
    if (road(p.x, p.y)) continue;
    double radius = o.min_radius + (o.max_radius - o.min_radius) * u(rng);
    canvas.Disc(p.x, p.y, radius, {238, 200 + 25 * static_cast<float>(u(rng)), 28});
    field.points.push_back(p);
  }
  field.image = canvas.ToImage();
  return field;
}

}  // namespace dflow::models
