// Drawing detections; see draw.h.
#include "apps/detect/draw.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "apps/common/canvas.h"

namespace dflow::detect_app {
namespace {

using apps::Colour;

// Well-separated colours, one per class (cycled).
Colour ClassColour(size_t k) {
  static const Colour kPalette[] = {{230, 25, 75},  {60, 180, 75},   {0, 130, 200},
                                    {245, 130, 48}, {145, 30, 180},  {70, 240, 240},
                                    {240, 50, 230}, {210, 245, 60},  {0, 128, 128},
                                    {170, 110, 40}};
  return kPalette[k % std::size(kPalette)];
}

}  // namespace

void DrawDetections(Tensor& image, const std::vector<models::Detection>& detections,
                    const std::vector<int64_t>& category_ids,
                    const std::vector<std::string>& class_names) {
  apps::Canvas canvas(image);
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
