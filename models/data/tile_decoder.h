// The input pipeline's decoding step (pipeline.h): an image's tile becomes a
// float [S, S, 3] slot in [0, 1] and its points a density map [S, S, 1],
// both optionally mirrored. A small cache keeps the last few decoded images,
// since consecutive tiles (shuffle off, or several tiles of one image in a
// batch) come from the same file.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <utility>

#include "models/data/pipeline.h"

namespace dflow::models {

// The most recently decoded images of one TileIndex, as uint8 [H, W, 3].
// Safe to call from several threads; two threads missing on the same image
// both decode it (rare, and cheaper than making one wait on the other).
class DecodedImageCache {
 public:
  DecodedImageCache(const TileIndex& index, size_t capacity);
  // Throws what ReadImage throws (naming the file), or kDataLoss when the
  // file's size no longer matches the one it had when it was indexed.
  Tensor Get(int64_t image);

 private:
  Tensor Decode(int64_t image) const;

  const TileIndex& index_;
  size_t capacity_;
  std::mutex mu_;
  std::list<std::pair<int64_t, Tensor>> recent_;  // most recently used first
};

// Writes `example`'s tile of `pixels` (its whole uint8 [H, W, 3] image) into
// `image_slot` (S * S * 3 floats) and the density of its points into
// `density_slot` (S * S floats); `flip` mirrors both left to right, which
// keeps the density's sum, the count.
void DecodeTile(const TileIndex& index, const TileExample& example, const Tensor& pixels,
                double sigma, bool flip, float* image_slot, float* density_slot);

}  // namespace dflow::models
