// Drawing detections; see draw.h. Text is stb_easy_font's: characters made
// of axis-aligned quads, which fill as rectangles.
#include "apps/detect/draw.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop

namespace dflow::detect_app {
namespace {

using Colour = std::array<uint8_t, 3>;

// Well-separated colours, one per class (cycled).
Colour ClassColour(size_t k) {
  static const Colour kPalette[] = {{230, 25, 75},  {60, 180, 75},   {0, 130, 200},
                                    {245, 130, 48}, {145, 30, 180},  {70, 240, 240},
                                    {240, 50, 230}, {210, 245, 60},  {0, 128, 128},
                                    {170, 110, 40}};
  return kPalette[k % std::size(kPalette)];
}

class Canvas {
 public:
  explicit Canvas(Tensor& image)
      : pixels_(image.data<uint8_t>()), height_(image.shape().dim(0)), width_(image.shape().dim(1)) {}

  // Fills [x0, x1) x [y0, y1), clipped to the image.
  void Fill(int64_t x0, int64_t y0, int64_t x1, int64_t y1, Colour c) {
    x0 = std::clamp<int64_t>(x0, 0, width_), x1 = std::clamp<int64_t>(x1, 0, width_);
    y0 = std::clamp<int64_t>(y0, 0, height_), y1 = std::clamp<int64_t>(y1, 0, height_);
    for (int64_t y = y0; y < y1; ++y)
      for (int64_t x = x0; x < x1; ++x) std::copy(c.begin(), c.end(), pixels_ + (y * width_ + x) * 3);
  }

  void Outline(int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t thickness, Colour c) {
    Fill(x0, y0, x1, y0 + thickness, c);
    Fill(x0, y1 - thickness, x1, y1, c);
    Fill(x0, y0, x0 + thickness, y1, c);
    Fill(x1 - thickness, y0, x1, y1, c);
  }

  // `text` at (x, y), each font unit `scale` pixels, on a tab of `background`.
  void Label(int64_t x, int64_t y, const std::string& text, int64_t scale, Colour background) {
    std::string copy = text;
    int64_t w = stb_easy_font_width(copy.data()) * scale, h = 8 * scale;
    y = std::max<int64_t>(0, y - h - 2);  // above the box, or inside it at the top edge
    Fill(x, y, x + w + 4, y + h + 2, background);
    static char vertices[64 * 1024];  // ~270 bytes per character
    int quads = stb_easy_font_print(0, 0, copy.data(), nullptr, vertices, sizeof vertices);
    struct Vertex {
      float x, y, z;
      uint8_t colour[4];
    };
    const auto* v = reinterpret_cast<const Vertex*>(vertices);
    for (int q = 0; q < quads; ++q, v += 4) {
      auto px = [&](float f) { return static_cast<int64_t>(std::lround(f * static_cast<float>(scale))); };
      Fill(x + 2 + px(v[0].x), y + 1 + px(v[0].y), x + 2 + px(v[2].x), y + 1 + px(v[2].y),
           {255, 255, 255});
    }
  }

 private:
  uint8_t* pixels_;
  int64_t height_, width_;
};

}  // namespace

void DrawDetections(Tensor& image, const std::vector<models::Detection>& detections,
                    const std::vector<int64_t>& category_ids,
                    const std::vector<std::string>& class_names) {
  Canvas canvas(image);
  const int64_t side = std::min(image.shape().dim(0), image.shape().dim(1));
  const int64_t thickness = std::max<int64_t>(1, side / 200), scale = std::max<int64_t>(1, side / 300);
  // Lowest score first, so the best boxes end up on top.
  std::vector<models::Detection> ordered(detections);
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.score < b.score; });
  for (const models::Detection& d : ordered) {
    size_t k = static_cast<size_t>(
        std::find(category_ids.begin(), category_ids.end(), d.category_id) - category_ids.begin());
    Colour colour = ClassColour(k);
    auto x0 = static_cast<int64_t>(std::floor(d.bbox[0])), y0 = static_cast<int64_t>(std::floor(d.bbox[1]));
    auto x1 = static_cast<int64_t>(std::ceil(d.bbox[0] + d.bbox[2]));
    auto y1 = static_cast<int64_t>(std::ceil(d.bbox[1] + d.bbox[3]));
    canvas.Outline(x0, y0, x1, y1, thickness, colour);
    char score[16];
    std::snprintf(score, sizeof score, " %.2f", d.score);
    std::string name = k < class_names.size() ? class_names[k] : std::to_string(d.category_id);
    canvas.Label(x0, y0, name + score, scale, colour);
  }
}

}  // namespace dflow::detect_app
