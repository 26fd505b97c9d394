// Pixel ownership and the occlusion rule; see scene_layout.h.
#include "models/data/scene_layout.h"

#include <algorithm>

namespace dflow::models::scenes {

SceneLayout::SceneLayout(int64_t height, int64_t width, double occlusion, int64_t min_size)
    : height_(height), width_(width), occlusion_(occlusion), min_size_(min_size),
      owner_(static_cast<size_t>(height * width), 0) {}

bool SceneLayout::MaskCovers(const ShapeMask& mask, int64_t x, int64_t y, int64_t px,
                             int64_t py) const {
  const int64_t mx = px - x, my = py - y;
  return mx >= 0 && my >= 0 && mx < mask.width && my < mask.height &&
         mask.inside[my * mask.width + mx];
}

PixelBox SceneLayout::VisibleBox(int32_t id, const ShapeMask& mask, int64_t x, int64_t y) const {
  const PixelBox& region = placed_[id - 1].region;
  PixelBox box;
  for (int64_t py = region.y0; py <= region.y1; ++py)
    for (int64_t px = region.x0; px <= region.x1; ++px)
      if (owner_[py * width_ + px] == id && !MaskCovers(mask, x, y, px, py)) box.Add(px, py);
  return box;
}

bool SceneLayout::Fits(const ShapeMask& mask, int64_t x, int64_t y) const {
  std::vector<int64_t> covered(placed_.size() + 1, 0);
  for (int64_t my = mask.box.y0; my <= mask.box.y1; ++my)
    for (int64_t mx = mask.box.x0; mx <= mask.box.x1; ++mx)
      if (mask.inside[my * mask.width + mx]) ++covered[owner_[(y + my) * width_ + x + mx]];
  for (int32_t id = 1; id < static_cast<int32_t>(covered.size()); ++id) {
    if (covered[id] == 0) continue;
    const Placed& p = placed_[id - 1];
    const int64_t hidden = p.full - (p.visible - covered[id]);
    if (static_cast<double>(hidden) > occlusion_ * static_cast<double>(p.full)) return false;
    const PixelBox box = VisibleBox(id, mask, x, y);
    if (box.width() < std::min(min_size_, p.region.width()) ||
        box.height() < std::min(min_size_, p.region.height()))
      return false;
  }
  return true;
}

void SceneLayout::Add(const ShapeMask& mask, int64_t x, int64_t y, int64_t category_id) {
  const auto id = static_cast<int32_t>(placed_.size() + 1);
  for (int64_t my = mask.box.y0; my <= mask.box.y1; ++my)
    for (int64_t mx = mask.box.x0; mx <= mask.box.x1; ++mx) {
      if (!mask.inside[my * mask.width + mx]) continue;
      int32_t& owner = owner_[(y + my) * width_ + x + mx];
      if (owner > 0) --placed_[owner - 1].visible;
      owner = id;
    }
  const PixelBox& b = mask.box;
  const PixelBox region{x + b.x0, y + b.y0, x + b.x1, y + b.y1};
  placed_.push_back({category_id, mask.pixels, mask.pixels, region});
}

std::vector<int32_t> SceneLayout::ObjectsIn(const PixelBox& box) const {
  std::vector<int32_t> ids;
  for (int64_t y = std::max<int64_t>(box.y0, 0); y <= std::min(box.y1, height_ - 1); ++y)
    for (int64_t x = std::max<int64_t>(box.x0, 0); x <= std::min(box.x1, width_ - 1); ++x) {
      const int32_t id = owner_[y * width_ + x];
      if (id > 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
  return ids;
}

std::vector<SceneObject> SceneLayout::Objects() const {
  std::vector<SceneObject> objects;
  for (int32_t id = 1; id <= static_cast<int32_t>(placed_.size()); ++id) {
    const Placed& p = placed_[id - 1];
    const PixelBox box = VisibleBox(id, ShapeMask{}, 0, 0);
    auto d = [](int64_t v) { return static_cast<double>(v); };
    objects.push_back({.category_id = p.category_id,
                       .bbox = {d(box.x0), d(box.y0), d(box.width()), d(box.height())},
                       .area = p.visible,
                       .full_area = p.full});
  }
  return objects;
}

Tensor SceneLayout::Instances() const {
  Tensor instances(DType::kInt32, Shape{height_, width_});
  std::copy(owner_.begin(), owner_.end(), instances.data<int32_t>());
  return instances;
}

}  // namespace dflow::models::scenes
