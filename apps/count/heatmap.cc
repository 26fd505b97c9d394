// The density overlay; see heatmap.h.
#include "apps/count/heatmap.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <numeric>

#include "apps/common/canvas.h"
#include "graph/status.h"

namespace dflow::count_app {
namespace {

// A "hot" ramp: black -> red -> yellow -> white over t in [0, 1].
std::array<float, 3> Hot(float t) {
  return {std::clamp(3 * t, 0.0f, 1.0f), std::clamp(3 * t - 1, 0.0f, 1.0f),
          std::clamp(3 * t - 2, 0.0f, 1.0f)};
}

apps::Colour ToColour(const std::array<float, 3>& c) {
  return {static_cast<uint8_t>(255 * c[0] + 0.5f), static_cast<uint8_t>(255 * c[1] + 0.5f),
          static_cast<uint8_t>(255 * c[2] + 0.5f)};
}

std::string Format(const char* format, double value) {
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// The count at the top left; the ramp from 0 (bottom) to `peak` (top) down
// the right edge, outlined, with `peak` written above it.
void DrawCountAndLegend(Tensor& out, double count, float peak) {
  apps::Canvas canvas(out);
  const apps::Colour tab = {40, 40, 40};
  const int64_t side = std::min(canvas.width(), canvas.height());
  const int64_t scale = std::max<int64_t>(1, side / 200), margin = std::max<int64_t>(2, side / 50);
  canvas.Text(margin, margin, Format("count %.1f", count), scale, tab);
  if (canvas.width() < 64 || canvas.height() < 64) return;
  const std::string top = Format("%.3g/px", peak);
  const int64_t bar = std::max<int64_t>(6, side / 30), right = canvas.width() - margin;
  const int64_t y0 = margin + apps::Canvas::TextHeight(scale) + 2, y1 = canvas.height() - margin;
  canvas.Text(right - apps::Canvas::TextWidth(top, scale), margin, top, scale, tab);
  for (int64_t y = y0; y < y1; ++y) {
    float t = static_cast<float>(y1 - 1 - y) / static_cast<float>(std::max<int64_t>(1, y1 - y0 - 1));
    canvas.Fill(right - bar, y, right, y + 1, ToColour(Hot(t)));
  }
  canvas.Outline(right - bar - 1, y0 - 1, right + 1, y1 + 1, 1, {255, 255, 255});
}

}  // namespace

Tensor DensityOverlay(const Tensor& image, const Tensor& density) {
  DFLOW_REQUIRE(image.dtype() == DType::kUInt8 && image.rank() == 3 && image.dim(2) == 3,
                "DensityOverlay: expected a uint8 [H, W, 3] image, got ", image.SummaryString());
  DFLOW_REQUIRE(density.dtype() == DType::kFloat32 && density.rank() == 2 &&
                    density.dim(0) == image.dim(0) && density.dim(1) == image.dim(1),
                "DensityOverlay: the map ", density.SummaryString(), " does not match the image ",
                image.SummaryString());
  auto values = density.flat<float>();
  float peak = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  float scale = peak > 0 ? 1 / peak : 0;
  Tensor out(DType::kUInt8, image.shape());
  const uint8_t* in = image.data<uint8_t>();
  uint8_t* o = out.data<uint8_t>();
  for (int64_t i = 0; i < density.NumElements(); ++i) {
    float t = std::clamp(values[i] * scale, 0.0f, 1.0f);
    std::array<float, 3> hot = Hot(t);
    float grey = (in[3 * i] + in[3 * i + 1] + in[3 * i + 2]) / (3.0f * 255);
    float alpha = std::min(1.0f, 2 * t);  // faint densities stay see-through
    for (int c = 0; c < 3; ++c) {
      // The background keeps some colour so the scene stays recognisable.
      float base = 0.6f * (0.5f * grey + 0.5f * in[3 * i + c] / 255.0f);
      o[3 * i + c] = static_cast<uint8_t>(255 * ((1 - alpha) * base + alpha * hot[c]) + 0.5f);
    }
  }
  DrawCountAndLegend(out, std::accumulate(values.begin(), values.end(), 0.0), peak);
  return out;
}

}  // namespace dflow::count_app
