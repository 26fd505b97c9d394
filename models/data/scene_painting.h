// Painting a synthetic detection scene (scene_generator.h) in integer RGB:
// the background (a gradient with texture blobs), unlabelled clutter, the
// shapes themselves and a sensor grain. Integer arithmetic only, for the
// reason given in scene_shapes.h. Internal to models/data (not installed).
#pragma once

#include <cstdint>
#include <vector>

#include "graph/tensor.h"
#include "models/data/scene_shapes.h"

namespace dflow::models::scenes {

struct Rgb {
  int64_t r = 0, g = 0, b = 0;  // 0..255
};

// A uint8 [height, width, 3] image being painted.
class Canvas {
 public:
  Canvas(int64_t height, int64_t width);
  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  uint8_t* at(int64_t y, int64_t x) { return pixels_ + 3 * (y * width_ + x); }
  const uint8_t* at(int64_t y, int64_t x) const { return pixels_ + 3 * (y * width_ + x); }
  // Mixes `color` in with weight alpha / 16.
  void Blend(int64_t y, int64_t x, Rgb color, int64_t alpha);
  Tensor& image() { return image_; }

 private:
  int64_t height_, width_;
  Tensor image_;
  uint8_t* pixels_;
};

Rgb RandomColor(SeededRandom& random);
// The mean colour of a box (clipped to the canvas).
Rgb MeanColor(const Canvas& canvas, const PixelBox& box);
// A colour that stands out from each of `avoid` (the background under a
// shape, the shapes it touches): the most distant of a few random draws, so
// that no colour (and so no hue) is tied to a class.
Rgb ContrastingColor(const std::vector<Rgb>& avoid, SeededRandom& random);

// A gradient between two random colours in a random direction; `textured`
// adds blobs of a third colour and a fine mottle (value noise).
void PaintBackground(Canvas& canvas, bool textured, SeededRandom& random);
// Clutter that is no class shape: thin lines, clusters of dots smaller than
// `min_size` / 2, and soft blotches. `max_size` bounds their extent.
void PaintDistractors(Canvas& canvas, int64_t min_size, int64_t max_size, SeededRandom& random);
// Draws `mask` with its grid's corner at pixel (x, y), clipped to the canvas.
void PaintShape(Canvas& canvas, const ShapeMask& mask, int64_t x, int64_t y, Rgb color);
// Adds uniform noise in [-amplitude, amplitude] to every channel.
void AddGrain(Canvas& canvas, int64_t amplitude, SeededRandom& random);

}  // namespace dflow::models::scenes
