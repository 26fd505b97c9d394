// Sprites for the synthetic scenes (scene_generator.h): reading a labelled
// set from IDX files, and rasterising one sprite like a shape (integer
// bilinear scaling, for the reason given in scene_shapes.h).
#include <algorithm>

#include "graph/status.h"
#include "models/data/idx.h"
#include "models/data/scene_generator.h"
#include "models/data/scene_shapes.h"

namespace dflow::models {

int SpriteSet::num_classes() const {
  int64_t largest = -1;
  for (int64_t label : labels) largest = std::max(largest, label);
  return static_cast<int>(largest + 1);
}

SpriteSet ReadSprites(const std::string& images_path, const std::string& labels_path) {
  SpriteSet sprites{ReadIdx(images_path), {}};
  const Tensor labels = ReadIdx(labels_path);
  const Shape& shape = sprites.images.shape();
  if (shape.rank() != 3 || shape[0] == 0 || shape[1] == 0 || shape[2] == 0)
    Fail(Code::kInvalidArgument, "sprite images '", images_path, "' are ", shape.ToString(),
         ", not [count, height, width] with each at least 1");
  if (labels.shape().rank() != 1 || labels.shape()[0] != shape[0])
    Fail(Code::kInvalidArgument, "sprite labels '", labels_path, "' are ",
         labels.shape().ToString(), " where the ", shape[0], " images of '", images_path,
         "' need [", shape[0], "]");
  for (int64_t i = 0; i < shape[0]; ++i) sprites.labels.push_back(labels.data<uint8_t>()[i]);
  return sprites;
}

std::vector<DetectionCategory> SpriteCategories(const SpriteSet& sprites) {
  std::vector<DetectionCategory> categories;
  for (int k = 0; k < sprites.num_classes(); ++k)
    categories.push_back({k + 1, std::to_string(k)});
  return categories;
}

namespace scenes {
namespace {

// Brightness 0..255 at (x, y) in 1/256 pixels (pixel centres at +128),
// bilinear between pixel centres, 0 outside the sprite.
int64_t Sample(const uint8_t* pixels, int64_t height, int64_t width, int64_t x, int64_t y) {
  auto at = [&](int64_t px, int64_t py) -> int64_t {
    return px < 0 || py < 0 || px >= width || py >= height ? 0 : pixels[py * width + px];
  };
  x -= 128, y -= 128;
  const int64_t x0 = x >> 8, y0 = y >> 8, fx = x & 255, fy = y & 255;
  const int64_t top = at(x0, y0) * (256 - fx) + at(x0 + 1, y0) * fx;
  const int64_t bottom = at(x0, y0 + 1) * (256 - fx) + at(x0 + 1, y0 + 1) * fx;
  return (top * (256 - fy) + bottom * fy) >> 16;
}

}  // namespace

ShapeMask RasterizeSprite(const Tensor& images, int64_t index, int64_t size, bool antialias) {
  const int64_t height = images.shape()[1], width = images.shape()[2];
  const uint8_t* pixels = images.data<uint8_t>() + index * height * width;
  PixelBox crop;
  for (int64_t y = 0; y < height; ++y)
    for (int64_t x = 0; x < width; ++x)
      if (pixels[y * width + x] > 0) crop.Add(x, y);
  ShapeMask m;
  if (crop.x1 < crop.x0) return m;  // a blank sprite: no pixels, never placed
  const int64_t longer = std::max(crop.width(), crop.height());
  // The scaled crop, and a pixel of margin all round for the soft edge.
  m.width = std::max<int64_t>(1, crop.width() * size / longer) + 2;
  m.height = std::max<int64_t>(1, crop.height() * size / longer) + 2;
  m.inside.assign(static_cast<size_t>(m.width * m.height), 0);
  m.coverage.assign(m.inside.size(), 0);
  for (int64_t y = 0; y < m.height; ++y)
    for (int64_t x = 0; x < m.width; ++x) {
      // The centre of output pixel (x - 1, y - 1), in 1/256 source pixels.
      const int64_t sx = crop.x0 * 256 + (2 * (x - 1) + 1) * longer * 128 / size;
      const int64_t sy = crop.y0 * 256 + (2 * (y - 1) + 1) * longer * 128 / size;
      const int64_t v = Sample(pixels, height, width, sx, sy);
      const bool inside = v >= 128;
      m.coverage[y * m.width + x] =
          static_cast<uint8_t>(antialias ? (v * 16 + 127) / 255 : (inside ? 16 : 0));
      if (!inside) continue;
      m.inside[y * m.width + x] = 1;
      m.box.Add(x, y);
      ++m.pixels;
    }
  return m;
}

}  // namespace scenes
}  // namespace dflow::models
