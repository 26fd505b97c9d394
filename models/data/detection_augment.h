// SSD's data augmentation for detector training (Liu et al. 2016, section 3,
// "Data augmentation"): photometric distortion, zoom out (expand), a random
// patch with a minimum IoU to the objects (crop), a horizontal flip and a
// resize to S x S, each step with its own switch and probability.
//
// Every random choice comes from one SeededRandom, so an example augments to
// the same bytes on every platform for the same seed. The geometric steps
// are not applied one after the other: they only decide an AugmentGeometry
// (where each output pixel comes from), and one bilinear pass renders it, so
// an image is resampled once and the expanded canvas is never allocated.
//
// Coordinates: boxes go in as (y1, x1, y2, x2) in pixels of the input image
// (continuous: a box covering pixel column 0 has x1 = 0, x2 = 1) and come out
// as (y1, x1, y2, x2) normalised to [0, 1] over the output image.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "graph/tensor.h"
#include "models/data/seeded_random.h"

namespace dflow::models {

struct AugmentOptions {
  int64_t image_size = 300;  // the output is image_size x image_size

  // Photometric distortion as in SSD's references: brightness, then contrast
  // either before or after saturation and hue (even odds), each part with
  // its own probability; values are clamped to [0, 1] after every part.
  bool photometric = true;
  double brightness_probability = 0.5, brightness_delta = 32.0 / 255;  // x += U(-d, d)
  double contrast_probability = 0.5, contrast_lower = 0.5, contrast_upper = 1.5;  // x *= U(l, u)
  double saturation_probability = 0.5, saturation_lower = 0.5, saturation_upper = 1.5;  // S *= U
  double hue_probability = 0.5, hue_delta = 18;  // HSV H += U(-d, d) degrees

  // Expand (zoom out): the image is placed at a random spot of a canvas
  // ratio = U(1, max_expand_ratio) times its size, filled with `fill`.
  double expand_probability = 0.5, max_expand_ratio = 4.0;
  std::array<float, 3> fill = {123 / 255.0f, 117 / 255.0f, 104 / 255.0f};  // SSD's mean RGB

  // Crop: one of crop_min_ious is drawn; 1 (or more) keeps the whole image,
  // otherwise up to crop_trials patches (each side U(min_scale, max_scale) of
  // the canvas's, height / width in [min_aspect, max_aspect]) are tried until
  // one keeps an object (its centre inside) whose IoU with the patch is at
  // least the drawn value (0: any patch that keeps an object; an image
  // without objects takes any patch for 0 and none for more). No patch
  // found: the whole image is kept.
  bool crop = true;
  std::vector<double> crop_min_ious = {0, 0.1, 0.3, 0.5, 0.7, 0.9, 1};
  double crop_min_scale = 0.3, crop_max_scale = 1.0;
  double crop_min_aspect = 0.5, crop_max_aspect = 2.0;
  int crop_trials = 50;

  double flip_probability = 0.5;  // mirror left to right
};

// kInvalidArgument naming the first bad option (Augment checks them too).
void CheckAugmentOptions(const AugmentOptions& options);

// Evaluation: no random step, only the resize to image_size x image_size.
AugmentOptions ResizeOnlyOptions(int64_t image_size);

// Where the output's pixels come from: the input image pasted at (image_top,
// image_left) on a canvas_height x canvas_width canvas of the fill colour,
// the crop window of that canvas, mirrored when `flip`, resized to S x S.
struct AugmentGeometry {
  int64_t canvas_height = 0, canvas_width = 0, image_top = 0, image_left = 0;
  int64_t crop_top = 0, crop_left = 0, crop_height = 0, crop_width = 0;
  bool flip = false;
};

// The geometry that changes nothing but the size: canvas = crop = image.
AugmentGeometry IdentityGeometry(int64_t height, int64_t width);

// Draws expand, crop and flip for a height x width image with `boxes`
// (pixels, 4 per object).
AugmentGeometry DrawGeometry(int64_t height, int64_t width, std::span<const float> boxes,
                             const AugmentOptions& options, SeededRandom& random);

// Input pixel boxes -> normalised output boxes. A box whose centre lies
// outside the crop window is dropped with its label; the others are clipped
// to it, and a box left without area is dropped too.
void MapBoxes(const AugmentGeometry& geometry, std::vector<float>& boxes,
              std::vector<int32_t>& labels);

// Renders `image` (uint8 [H, W, 3], or float32 [H, W, 3] in [0, 1]) through
// `geometry` into `out`, size * size * 3 floats in [0, 1]: bilinear with
// half-pixel centres, sampling only inside the crop window.
void RenderGeometry(const Tensor& image, const AugmentGeometry& geometry, int64_t size,
                    const std::array<float, 3>& fill, float* out);

// The photometric part on a float32 [H, W, 3] image in [0, 1], in place.
void DistortPhotometric(Tensor& image, const AugmentOptions& options, SeededRandom& random);

struct AugmentedExample {
  Tensor image;                // float32 [S, S, 3] in [0, 1]
  std::vector<float> boxes;    // normalised (y1, x1, y2, x2), 4 per kept object
  std::vector<int32_t> labels;
};

// All the steps above on one image (uint8 [H, W, 3] or float32 in [0, 1])
// with its pixel boxes and one label per box. kInvalidArgument for bad
// options or a bad image, box or label count.
AugmentedExample Augment(const Tensor& image, std::vector<float> boxes,
                         std::vector<int32_t> labels, const AugmentOptions& options,
                         SeededRandom& random);

// The same, rendered into `out` (image_size * image_size * 3 floats, e.g. a
// slot of a batch) instead of a new tensor; the result's image is empty.
AugmentedExample AugmentInto(const Tensor& image, std::vector<float> boxes,
                             std::vector<int32_t> labels, const AugmentOptions& options,
                             SeededRandom& random, float* out);

}  // namespace dflow::models
