// Which object owns each pixel of a synthetic scene (scene_generator.h), and
// the rule that keeps every labelled object recognisable: a new object may
// not cover more than `occlusion` of an earlier one's pixels, nor shrink a
// side of its visible box below `min_size` (or below the side it had
// uncovered, for a narrow sprite). Internal to models/data (not installed).
#pragma once

#include <cstdint>
#include <vector>

#include "models/data/scene_generator.h"
#include "models/data/scene_shapes.h"

namespace dflow::models::scenes {

class SceneLayout {
 public:
  SceneLayout(int64_t height, int64_t width, double occlusion, int64_t min_size);

  // Whether `mask`, its grid's corner at pixel (x, y), keeps the rule for
  // every object placed so far. Its inside pixels must lie in the image.
  bool Fits(const ShapeMask& mask, int64_t x, int64_t y) const;
  // Puts `mask` on top of the objects placed so far.
  void Add(const ShapeMask& mask, int64_t x, int64_t y, int64_t category_id);

  // The 1-based objects that own a pixel of `box` (clipped to the image).
  std::vector<int32_t> ObjectsIn(const PixelBox& box) const;

  std::vector<SceneObject> Objects() const;
  Tensor Instances() const;  // int32 [height, width]: 0, or the 1-based object
  size_t size() const { return placed_.size(); }

 private:
  struct Placed {
    int64_t category_id, full, visible;
    PixelBox region;  // where its inside pixels were drawn
  };
  bool MaskCovers(const ShapeMask& mask, int64_t x, int64_t y, int64_t px, int64_t py) const;
  // The box of object `id`'s pixels that `mask` would leave visible.
  PixelBox VisibleBox(int32_t id, const ShapeMask& mask, int64_t x, int64_t y) const;

  int64_t height_, width_;
  double occlusion_;
  int64_t min_size_;
  std::vector<int32_t> owner_;  // 0, or the 1-based index into placed_
  std::vector<Placed> placed_;
};

}  // namespace dflow::models::scenes
