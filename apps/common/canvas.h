// Drawing on uint8 [H, W, 3] images for the apps' pictures (detections,
// heatmaps): filled and outlined rectangles, clipped to the image, and text
// in stb_easy_font's characters (made of axis-aligned quads, which fill as
// rectangles) on a filled tab.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "graph/tensor.h"

namespace dflow::apps {

using Colour = std::array<uint8_t, 3>;

class Canvas {
 public:
  explicit Canvas(Tensor& image);
  int64_t width() const { return width_; }
  int64_t height() const { return height_; }

  // Fills [x0, x1) x [y0, y1), clipped to the image.
  void Fill(int64_t x0, int64_t y0, int64_t x1, int64_t y1, Colour c);
  void Outline(int64_t x0, int64_t y0, int64_t x1, int64_t y1, int64_t thickness, Colour c);
  // The size of `text` drawn with `scale` pixels per font unit, its tab included.
  static int64_t TextWidth(const std::string& text, int64_t scale);
  static int64_t TextHeight(int64_t scale) { return 8 * scale + 2; }
  // White `text` on a tab of `background` whose top-left corner is (x, y).
  void Text(int64_t x, int64_t y, const std::string& text, int64_t scale, Colour background);
  // The same tab just above y (or at the top edge when there is no room): a box's label.
  void Label(int64_t x, int64_t y, const std::string& text, int64_t scale, Colour background);

 private:
  uint8_t* pixels_;
  int64_t height_, width_;
};

}  // namespace dflow::apps
