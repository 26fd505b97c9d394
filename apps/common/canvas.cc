// Drawing on images; see canvas.h.
#include "apps/common/canvas.h"

#include <algorithm>
#include <cmath>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop

namespace dflow::apps {

Canvas::Canvas(Tensor& image)
    : pixels_(image.data<uint8_t>()), height_(image.shape().dim(0)), width_(image.shape().dim(1)) {}

void Canvas::Fill(int64_t x0, int64_t y0, int64_t x1, int64_t y1, Colour c) {
  x0 = std::clamp<int64_t>(x0, 0, width_), x1 = std::clamp<int64_t>(x1, 0, width_);
  y0 = std::clamp<int64_t>(y0, 0, height_), y1 = std::clamp<int64_t>(y1, 0, height_);
  for (int64_t y = y0; y < y1; ++y)
    for (int64_t x = x0; x < x1; ++x) std::copy(c.begin(), c.end(), pixels_ + (y * width_ + x) * 3);
}

void Canvas::Outline(int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t thickness, Colour c) {
  Fill(x0, y0, x1, y0 + thickness, c);
  Fill(x0, y1 - thickness, x1, y1, c);
  Fill(x0, y0, x0 + thickness, y1, c);
  Fill(x1 - thickness, y0, x1, y1, c);
}

int64_t Canvas::TextWidth(const std::string& text, int64_t scale) {
  std::string copy = text;
  return stb_easy_font_width(copy.data()) * scale + 4;
}

void Canvas::Text(int64_t x, int64_t y, const std::string& text, int64_t scale, Colour background) {
  std::string copy = text;
  Fill(x, y, x + TextWidth(text, scale), y + TextHeight(scale), background);
  static thread_local char vertices[64 * 1024];  // ~270 bytes per character
  int quads = stb_easy_font_print(0, 0, copy.data(), nullptr, vertices, sizeof vertices);
  struct Vertex {
    float x, y, z;
    uint8_t colour[4];
  };
  const auto* v = reinterpret_cast<const Vertex*>(vertices);
  auto px = [&](float f) { return static_cast<int64_t>(std::lround(f * static_cast<float>(scale))); };
  for (int q = 0; q < quads; ++q, v += 4)
    Fill(x + 2 + px(v[0].x), y + 1 + px(v[0].y), x + 2 + px(v[2].x), y + 1 + px(v[2].y), {255, 255, 255});
}

void Canvas::Label(int64_t x, int64_t y, const std::string& text, int64_t scale, Colour background) {
  Text(x, std::max<int64_t>(0, y - TextHeight(scale)), text, scale, background);
}

}  // namespace dflow::apps
