// Decoding tiles for the input pipeline; see tile_decoder.h.
#include "models/data/tile_decoder.h"

namespace dflow::models {

DecodedImageCache::DecodedImageCache(const TileIndex& index, size_t capacity)
    : index_(index), capacity_(capacity) {}

Tensor DecodedImageCache::Get(int64_t image) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = recent_.begin(); it != recent_.end(); ++it)
      if (it->first == image) {
        recent_.splice(recent_.begin(), recent_, it);
        return it->second;  // a Tensor copy shares the (read-only) pixels
      }
  }
  Tensor pixels = Decode(image);  // outside the lock: decoding is the slow part
  std::lock_guard<std::mutex> lock(mu_);
  recent_.emplace_front(image, pixels);
  if (recent_.size() > capacity_) recent_.pop_back();
  return pixels;
}

Tensor DecodedImageCache::Decode(int64_t image) const {
  const std::string& path = index_.images[image].path;
  Tensor pixels = ReadImage(path, 3);
  const ImageInfo& indexed = index_.sizes[image];
  if (pixels.dim(0) != indexed.height || pixels.dim(1) != indexed.width)
    Fail(Code::kDataLoss, "image '", path, "' is now ", pixels.dim(1), "x", pixels.dim(0),
         " pixels but was ", indexed.width, "x", indexed.height, " when it was indexed");
  return pixels;
}

void DecodeTile(const TileIndex& index, const TileExample& example, const Tensor& pixels,
                double sigma, bool flip, float* image_slot, float* density_slot) {
  const int64_t size = index.tile_size;
  Tensor crop = CropTile(pixels, example.tile, size);  // uint8 [S, S, 3], zero past the edge
  Tensor density = DensityMap(PointsInTile(index.images[example.image].points, example.tile, size),
                              size, size, sigma);
  const uint8_t* rgb = crop.data<uint8_t>();
  const float* map = density.data<float>();
  for (int64_t row = 0; row < size; ++row)
    for (int64_t col = 0; col < size; ++col) {
      int64_t from = row * size + (flip ? size - 1 - col : col), to = row * size + col;
      for (int64_t c = 0; c < 3; ++c) image_slot[to * 3 + c] = rgb[from * 3 + c] / 255.0f;
      density_slot[to] = map[from];
    }
}

}  // namespace dflow::models
