// SSD's photometric distortion (detection_augment.h): random brightness,
// contrast, saturation and hue, on float pixels in [0, 1].
#include <algorithm>
#include <cmath>

#include "models/data/detection_augment.h"

namespace dflow::models {
namespace {

// x -> clamp(scale * x + shift) over every value.
void ScaleShift(std::span<float> values, float scale, float shift) {
  for (float& v : values) v = std::clamp(scale * v + shift, 0.0f, 1.0f);
}

// RGB <-> HSV (Smith 1978) with H in degrees [0, 360), S and V in [0, 1].
struct Hsv {
  float h, s, v;
};

Hsv ToHsv(float r, float g, float b) {
  const float v = std::max({r, g, b}), delta = v - std::min({r, g, b});
  if (delta <= 0) return {0, 0, v};  // grey: no hue
  float h = v == r ? (g - b) / delta : v == g ? 2 + (b - r) / delta : 4 + (r - g) / delta;
  h *= 60;
  if (h < 0) h += 360;
  return {h, delta / v, v};
}

void FromHsv(const Hsv& p, float* rgb) {
  // The hexcone: chroma c = V S; the middle channel rises or falls linearly
  // with H inside each 60-degree sector.
  const float c = p.v * p.s, sector = p.h / 60;
  const float x = c * (1 - std::fabs(std::fmod(sector, 2.0f) - 1)), m = p.v - c;
  float r = 0, g = 0, b = 0;
  switch (std::clamp(static_cast<int>(sector), 0, 5)) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
  }
  rgb[0] = r + m, rgb[1] = g + m, rgb[2] = b + m;
}

// HSV saturation S *= saturation (at most 1) and hue H += hue degrees, V kept.
void SaturateAndRotateHue(std::span<float> rgb, float saturation, float hue) {
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) {
    Hsv p = ToHsv(rgb[i], rgb[i + 1], rgb[i + 2]);
    if (p.s == 0) continue;  // grey stays grey whatever the factors
    p.s = std::min(1.0f, p.s * saturation);
    p.h = std::fmod(p.h + hue + 360.0f, 360.0f);
    FromHsv(p, &rgb[i]);
  }
}

}  // namespace

void DistortPhotometric(Tensor& image, const AugmentOptions& o, SeededRandom& random) {
  DFLOW_REQUIRE(image.dtype() == DType::kFloat32 && image.rank() == 3 && image.dim(2) == 3,
                "DistortPhotometric: the image must be float32 [H, W, 3], got ",
                DTypeName(image.dtype()), " ", image.shape().ToString());
  std::span<float> values(image.data<float>(), static_cast<size_t>(image.NumElements()));
  const double delta = o.brightness_delta;
  if (random.Chance(o.brightness_probability))
    ScaleShift(values, 1, static_cast<float>(random.Uniform(-delta, delta)));
  auto contrast = [&] {
    if (random.Chance(o.contrast_probability))
      ScaleShift(values, static_cast<float>(random.Uniform(o.contrast_lower, o.contrast_upper)), 0);
  };
  // SSD applies contrast before or after the HSV parts with even odds.
  const bool contrast_first = random.Chance(0.5);
  if (contrast_first) contrast();
  float saturation = 1, hue = 0;
  if (random.Chance(o.saturation_probability))
    saturation = static_cast<float>(random.Uniform(o.saturation_lower, o.saturation_upper));
  if (random.Chance(o.hue_probability))
    hue = static_cast<float>(random.Uniform(-o.hue_delta, o.hue_delta));
  if (saturation != 1 || hue != 0) SaturateAndRotateHue(values, saturation, hue);
  if (!contrast_first) contrast();
}

}  // namespace dflow::models
