// SSD's geometric augmentation (expand, IoU-constrained crop, flip) and the
// whole Augment; see detection_augment.h. Photometric distortion is in
// photometric.cc, the rendering in render_geometry.cc.
#include "models/data/detection_augment.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace dflow::models {
namespace {

// Uniform in [0, room]: where something `room` pixels smaller than its
// container may start.
int64_t Offset(SeededRandom& random, int64_t room) {
  return static_cast<int64_t>(random.Below(static_cast<uint64_t>(room) + 1));
}

struct Window {
  int64_t top, left, height, width;
};

// Intersection over union of box (y1, x1, y2, x2) and the window.
double IoU(const float* box, const Window& w) {
  double ih = std::min<double>(box[2], w.top + w.height) - std::max<double>(box[0], w.top);
  double iw = std::min<double>(box[3], w.left + w.width) - std::max<double>(box[1], w.left);
  if (ih <= 0 || iw <= 0) return 0;
  double inter = ih * iw;
  double box_area = (box[2] - box[0]) * static_cast<double>(box[3] - box[1]);
  return inter / (box_area + static_cast<double>(w.height) * w.width - inter);
}

bool CentreInside(const float* box, const Window& w) {
  double cy = 0.5 * (box[0] + box[2]), cx = 0.5 * (box[1] + box[3]);
  return w.top < cy && cy < w.top + w.height && w.left < cx && cx < w.left + w.width;
}

// Whether the patch keeps an object whose IoU with it is >= min_iou; an
// image without objects accepts any patch only for min_iou 0.
bool Acceptable(const Window& patch, std::span<const float> boxes, double min_iou) {
  if (boxes.empty()) return min_iou <= 0;
  for (size_t i = 0; i + 3 < boxes.size(); i += 4)
    if (CentreInside(&boxes[i], patch) && IoU(&boxes[i], patch) >= min_iou) return true;
  return false;
}

// SSD's sampler: draws a minimum IoU, then tries patches until one passes.
// `boxes` are on the canvas.
void DrawCrop(AugmentGeometry& g, std::span<const float> boxes, const AugmentOptions& o,
              SeededRandom& random) {
  const double min_iou = o.crop_min_ious[random.Below(o.crop_min_ious.size())];
  if (min_iou >= 1) return;  // keep the whole image
  for (int trial = 0; trial < o.crop_trials; ++trial) {
    const double h = random.Uniform(o.crop_min_scale, o.crop_max_scale) * g.canvas_height;
    const double w = random.Uniform(o.crop_min_scale, o.crop_max_scale) * g.canvas_width;
    if (h < o.crop_min_aspect * w || h > o.crop_max_aspect * w) continue;
    Window patch{0, 0, std::max<int64_t>(1, std::llround(h)),
                 std::max<int64_t>(1, std::llround(w))};
    patch.top = Offset(random, g.canvas_height - patch.height);
    patch.left = Offset(random, g.canvas_width - patch.width);
    if (!Acceptable(patch, boxes, min_iou)) continue;
    g.crop_top = patch.top, g.crop_left = patch.left;
    g.crop_height = patch.height, g.crop_width = patch.width;
    return;
  }
}

}  // namespace

void CheckAugmentOptions(const AugmentOptions& o) {
  DFLOW_REQUIRE(o.image_size >= 1, "Augment: image_size must be >= 1, got ", o.image_size);
  DFLOW_REQUIRE(o.max_expand_ratio >= 1, "Augment: max_expand_ratio must be >= 1, got ",
                o.max_expand_ratio);
  DFLOW_REQUIRE(o.crop_trials >= 0, "Augment: crop_trials must be >= 0, got ", o.crop_trials);
  DFLOW_REQUIRE(!o.crop || !o.crop_min_ious.empty(),
                "Augment: crop is on but crop_min_ious is empty");
  DFLOW_REQUIRE(0 < o.crop_min_scale && o.crop_min_scale <= o.crop_max_scale &&
                    o.crop_max_scale <= 1,
                "Augment: crop scales must satisfy 0 < min <= max <= 1, got ", o.crop_min_scale,
                " and ", o.crop_max_scale);
  DFLOW_REQUIRE(0 < o.crop_min_aspect && o.crop_min_aspect <= o.crop_max_aspect,
                "Augment: crop aspects must satisfy 0 < min <= max, got ", o.crop_min_aspect,
                " and ", o.crop_max_aspect);
  DFLOW_REQUIRE(o.contrast_lower >= 0 && o.contrast_lower <= o.contrast_upper &&
                    o.saturation_lower >= 0 && o.saturation_lower <= o.saturation_upper,
                "Augment: contrast and saturation ranges must satisfy 0 <= lower <= upper");
}

AugmentOptions ResizeOnlyOptions(int64_t image_size) {
  AugmentOptions o;
  o.image_size = image_size;
  o.photometric = false;
  o.expand_probability = 0;
  o.crop = false;
  o.flip_probability = 0;
  return o;
}

AugmentGeometry IdentityGeometry(int64_t height, int64_t width) {
  AugmentGeometry g;
  g.canvas_height = g.crop_height = height;
  g.canvas_width = g.crop_width = width;
  return g;
}

AugmentGeometry DrawGeometry(int64_t height, int64_t width, std::span<const float> boxes,
                             const AugmentOptions& o, SeededRandom& random) {
  AugmentGeometry g = IdentityGeometry(height, width);
  std::vector<float> on_canvas(boxes.begin(), boxes.end());
  if (o.max_expand_ratio > 1 && random.Chance(o.expand_probability)) {
    const double ratio = random.Uniform(1, o.max_expand_ratio);
    g.canvas_height = g.crop_height = std::llround(height * ratio);
    g.canvas_width = g.crop_width = std::llround(width * ratio);
    g.image_top = Offset(random, g.canvas_height - height);
    g.image_left = Offset(random, g.canvas_width - width);
    for (size_t i = 0; i + 3 < on_canvas.size(); i += 4) {
      on_canvas[i] += g.image_top, on_canvas[i + 2] += g.image_top;
      on_canvas[i + 1] += g.image_left, on_canvas[i + 3] += g.image_left;
    }
  }
  if (o.crop) DrawCrop(g, on_canvas, o, random);
  g.flip = random.Chance(o.flip_probability);
  return g;
}

void MapBoxes(const AugmentGeometry& g, std::vector<float>& boxes, std::vector<int32_t>& labels) {
  const Window crop{g.crop_top, g.crop_left, g.crop_height, g.crop_width};
  size_t kept = 0;
  for (size_t k = 0; k < labels.size(); ++k) {
    float box[4] = {boxes[4 * k] + g.image_top, boxes[4 * k + 1] + g.image_left,
                    boxes[4 * k + 2] + g.image_top, boxes[4 * k + 3] + g.image_left};
    if (!CentreInside(box, crop)) continue;
    // Clip to the window, then normalise by it.
    float y1 = (std::max<float>(box[0], crop.top) - crop.top) / crop.height;
    float x1 = (std::max<float>(box[1], crop.left) - crop.left) / crop.width;
    float y2 = (std::min<float>(box[2], crop.top + crop.height) - crop.top) / crop.height;
    float x2 = (std::min<float>(box[3], crop.left + crop.width) - crop.left) / crop.width;
    if (!(y2 > y1 && x2 > x1)) continue;
    if (g.flip) std::tie(x1, x2) = std::pair(1 - x2, 1 - x1);
    std::copy_n(std::array{y1, x1, y2, x2}.begin(), 4, boxes.begin() + 4 * kept);
    labels[kept++] = labels[k];
  }
  boxes.resize(4 * kept);
  labels.resize(kept);
}

AugmentedExample AugmentInto(const Tensor& image, std::vector<float> boxes,
                             std::vector<int32_t> labels, const AugmentOptions& options,
                             SeededRandom& random, float* out) {
  CheckAugmentOptions(options);
  DFLOW_REQUIRE(image.rank() == 3 && image.dim(2) == 3 && image.dim(0) > 0 && image.dim(1) > 0 &&
                    (image.dtype() == DType::kUInt8 || image.dtype() == DType::kFloat32),
                "Augment: the image must be uint8 or float32 [H, W, 3], got ",
                DTypeName(image.dtype()), " ", image.shape().ToString());
  DFLOW_REQUIRE(boxes.size() == 4 * labels.size(), "Augment: ", boxes.size(),
                " box coordinates for ", labels.size(), " labels; want 4 per label");
  Tensor pixels = image;
  if (options.photometric) {
    pixels = Tensor(DType::kFloat32, image.shape());  // the input stays untouched
    float* to = pixels.data<float>();
    if (image.dtype() == DType::kUInt8)
      std::transform(image.data<uint8_t>(), image.data<uint8_t>() + image.NumElements(), to,
                     [](uint8_t v) { return v / 255.0f; });
    else
      std::copy_n(image.data<float>(), image.NumElements(), to);
    DistortPhotometric(pixels, options, random);
  }
  AugmentGeometry geometry = DrawGeometry(image.dim(0), image.dim(1), boxes, options, random);
  RenderGeometry(pixels, geometry, options.image_size, options.fill, out);
  MapBoxes(geometry, boxes, labels);
  AugmentedExample example;
  example.boxes = std::move(boxes);
  example.labels = std::move(labels);
  return example;
}

AugmentedExample Augment(const Tensor& image, std::vector<float> boxes,
                         std::vector<int32_t> labels, const AugmentOptions& options,
                         SeededRandom& random) {
  const int64_t s = std::max<int64_t>(options.image_size, 0);  // AugmentInto checks it
  Tensor rendered(DType::kFloat32, Shape{s, s, 3});
  AugmentedExample example = AugmentInto(image, std::move(boxes), std::move(labels), options,
                                         random, rendered.data<float>());
  example.image = std::move(rendered);
  return example;
}

}  // namespace dflow::models
