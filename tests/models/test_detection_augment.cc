// models/data/detection_augment.h on known cases: each geometric step moves
// boxes and pixels exactly where it should, the crop keeps boxes by their
// centre, photometric distortion stays in [0, 1], and a seed fixes the bytes.
#include <algorithm>
#include <cstring>

#include <catch2/catch.hpp>

#include "models/data/detection_augment.h"
#include "tests/models/checkpoint_test_util.h"

using namespace dflow;
using namespace dflow::models;
using dflow::testing::ExpectError;

namespace {

using Floats = std::vector<float>;
using Ints = std::vector<int32_t>;

// A uint8 [h, w, 3] image whose every pixel and channel differs.
Tensor Pattern(int64_t h, int64_t w) {
  Tensor t(DType::kUInt8, {h, w, 3});
  for (int64_t i = 0; i < t.NumElements(); ++i)
    t.data<uint8_t>()[i] = static_cast<uint8_t>(i * 7 + 3);
  return t;
}

float PixelOf(const Tensor& uint8_image, int64_t row, int64_t col, int c) {
  return uint8_image.data<uint8_t>()[(row * uint8_image.dim(1) + col) * 3 + c] / 255.0f;
}

// Renders `g` at `size` and returns the float [size, size, 3] result.
std::vector<float> Render(const Tensor& image, const AugmentGeometry& g, int64_t size,
                          const std::array<float, 3>& fill = {0.25f, 0.5f, 0.75f}) {
  std::vector<float> out(static_cast<size_t>(size * size * 3));
  RenderGeometry(image, g, size, fill, out.data());
  return out;
}

std::pair<Floats, Ints> Map(const AugmentGeometry& g, Floats boxes, Ints labels) {
  MapBoxes(g, boxes, labels);
  return {boxes, labels};
}

}  // namespace

TEST_CASE("augment: flip mirrors the pixels and maps a box exactly", "[augment]") {
  Tensor image = Pattern(8, 8);
  AugmentGeometry g = IdentityGeometry(8, 8);
  g.flip = true;
  std::vector<float> out = Render(image, g, 8);
  for (int64_t r = 0; r < 8; ++r)
    for (int64_t c = 0; c < 8; ++c)
      for (int k = 0; k < 3; ++k) CHECK(out[(r * 8 + c) * 3 + k] == PixelOf(image, r, 7 - c, k));
  // A 10 x 20 image: x 4..10 of 20 is 0.2..0.5, mirrored 0.5..0.8.
  auto [boxes, labels] = Map(
      [] {
        AugmentGeometry wide = IdentityGeometry(10, 20);
        wide.flip = true;
        return wide;
      }(),
      {2, 4, 6, 10}, {3});
  CHECK_THAT(boxes, Catch::Matchers::Approx(Floats{0.2f, 0.5f, 0.6f, 0.8f}));
  CHECK(labels == Ints{3});
}

TEST_CASE("augment: expand pastes the pixels on the fill colour and shifts the boxes",
          "[augment]") {
  Tensor image = Pattern(4, 6);
  AugmentGeometry g = IdentityGeometry(4, 6);
  g.canvas_height = g.crop_height = 12;
  g.canvas_width = g.crop_width = 12;
  g.image_top = 3, g.image_left = 5;
  const std::array<float, 3> fill = {0.25f, 0.5f, 0.75f};
  std::vector<float> out = Render(image, g, 12, fill);
  for (int64_t r = 0; r < 12; ++r)
    for (int64_t c = 0; c < 12; ++c) {
      bool pasted = r >= 3 && r < 7 && c >= 5 && c < 11;
      for (int k = 0; k < 3; ++k)
        CHECK(out[(r * 12 + c) * 3 + k] == (pasted ? PixelOf(image, r - 3, c - 5, k) : fill[k]));
    }
  auto [boxes, labels] = Map(g, {1, 2, 3, 5}, {1});
  CHECK_THAT(boxes, Catch::Matchers::Approx(Floats{4 / 12.0f, 7 / 12.0f, 6 / 12.0f, 10 / 12.0f}));
}

TEST_CASE("augment: crop keeps the boxes whose centre is inside, clipped, and drops the rest",
          "[augment]") {
  AugmentGeometry g = IdentityGeometry(20, 20);
  g.crop_top = 5, g.crop_left = 5, g.crop_height = 10, g.crop_width = 10;
  auto [boxes, labels] = Map(g,
                             {6, 6, 10, 10,    // inside
                              0, 0, 8, 8,      // centre (4, 4): outside
                              10, 10, 18, 18,  // centre (14, 14): inside, clipped
                              7, 7, 7, 9},     // no height: degenerate
                             {1, 2, 3, 4});
  CHECK(labels == Ints{1, 3});
  CHECK_THAT(boxes, Catch::Matchers::Approx(Floats{0.1f, 0.1f, 0.5f, 0.5f, 0.5f, 0.5f, 1, 1}));
  // The crop's pixels are the window's.
  Tensor image = Pattern(20, 20);
  std::vector<float> out = Render(image, g, 10);
  CHECK(out[0] == PixelOf(image, 5, 5, 0));
  CHECK(out[(9 * 10 + 9) * 3 + 2] == PixelOf(image, 14, 14, 2));
}

TEST_CASE("augment: resize scales the pixels bilinearly and keeps normalised boxes", "[augment]") {
  // 8 x 8 -> 4 x 4: output pixel (r, c) samples (2r + 0.5, 2c + 0.5), the
  // mean of a 2 x 2 block.
  Tensor image = Pattern(8, 8);
  std::vector<float> out = Render(image, IdentityGeometry(8, 8), 4);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 4; ++c) {
      float mean = (PixelOf(image, 2 * r, 2 * c, 1) + PixelOf(image, 2 * r, 2 * c + 1, 1) +
                    PixelOf(image, 2 * r + 1, 2 * c, 1) + PixelOf(image, 2 * r + 1, 2 * c + 1, 1)) /
                   4;
      CHECK(out[(r * 4 + c) * 3 + 1] == Catch::Detail::Approx(mean).margin(1e-6));
    }
  SeededRandom random(1);
  AugmentedExample e = Augment(Pattern(10, 40), {2, 8, 6, 16}, {2}, ResizeOnlyOptions(20), random);
  CHECK(e.image.shape() == Shape{20, 20, 3});
  CHECK_THAT(e.boxes, Catch::Matchers::Approx(Floats{0.2f, 0.2f, 0.6f, 0.4f}));
}

TEST_CASE("augment: the crop sampler meets its minimum IoU or keeps the whole image", "[augment]") {
  AugmentOptions o;
  o.expand_probability = 0, o.flip_probability = 0;
  o.crop_min_ious = {0.5};
  const Floats boxes = {10, 10, 80, 70, 60, 5, 90, 95};  // in a 100 x 100 image
  int cropped = 0;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    SeededRandom random(seed);
    AugmentGeometry g = DrawGeometry(100, 100, boxes, o, random);
    if (g.crop_height == 100 && g.crop_width == 100) continue;
    ++cropped;
    double aspect = static_cast<double>(g.crop_height) / g.crop_width;
    CHECK((aspect >= 0.49 && aspect <= 2.01));
    CHECK(std::min(g.crop_height, g.crop_width) >= 29);
    double best = 0;
    for (size_t i = 0; i < boxes.size(); i += 4) {
      double cy = (boxes[i] + boxes[i + 2]) / 2, cx = (boxes[i + 1] + boxes[i + 3]) / 2;
      if (cy <= g.crop_top || cy >= g.crop_top + g.crop_height || cx <= g.crop_left ||
          cx >= g.crop_left + g.crop_width)
        continue;
      double ih = std::min<double>(boxes[i + 2], g.crop_top + g.crop_height) -
                  std::max<double>(boxes[i], g.crop_top);
      double iw = std::min<double>(boxes[i + 3], g.crop_left + g.crop_width) -
                  std::max<double>(boxes[i + 1], g.crop_left);
      double inter = std::max(0.0, ih) * std::max(0.0, iw);
      double area = (boxes[i + 2] - boxes[i]) * (boxes[i + 3] - boxes[i + 1]);
      best = std::max(best, inter / (area + double(g.crop_height) * g.crop_width - inter));
    }
    CHECK(best >= 0.5);
  }
  CHECK(cropped > 5);
}

TEST_CASE("augment: photometric distortion keeps values in [0, 1] and changes the image",
          "[augment]") {
  AugmentOptions o;
  o.brightness_probability = o.contrast_probability = 1;
  o.saturation_probability = o.hue_probability = 1;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Tensor image(DType::kFloat32, {6, 7, 3});
    for (int64_t i = 0; i < image.NumElements(); ++i)
      image.data<float>()[i] = static_cast<float>((i * 37) % 101) / 100;
    Tensor before = image.Clone();
    SeededRandom random(seed);
    DistortPhotometric(image, o, random);
    auto values = image.flat<float>();
    CHECK(std::all_of(values.begin(), values.end(), [](float v) { return v >= 0 && v <= 1; }));
    CHECK(std::memcmp(image.raw_data(), before.raw_data(), before.TotalBytes()) != 0);
  }
}

TEST_CASE("augment: saturation and hue go through HSV and back", "[augment]") {
  AugmentOptions o;
  o.brightness_probability = o.contrast_probability = 0;
  o.saturation_probability = o.hue_probability = 1;
  Tensor image(DType::kFloat32, {1, 3, 3});
  image.flat<float>()[0] = 0.9f, image.flat<float>()[1] = 0.2f, image.flat<float>()[2] = 0.4f;
  image.flat<float>()[3] = 0.1f, image.flat<float>()[4] = 0.7f, image.flat<float>()[5] = 0.3f;
  image.flat<float>()[6] = 0.5f, image.flat<float>()[7] = 0.5f, image.flat<float>()[8] = 0.5f;
  SECTION("factor 1 and a hue shift of ~0 give the colours back") {
    Tensor copy = image.Clone();
    o.saturation_lower = o.saturation_upper = 1, o.hue_delta = 1e-9;
    SeededRandom random(1);
    DistortPhotometric(copy, o, random);
    CHECK_THAT(copy.ToVector<float>(), Catch::Matchers::Approx(image.ToVector<float>()).margin(1e-5));
  }
  SECTION("saturation 0 leaves the value (the largest channel) in every channel") {
    o.saturation_lower = o.saturation_upper = 0, o.hue_delta = 0;
    SeededRandom random(1);
    DistortPhotometric(image, o, random);
    CHECK_THAT(image.ToVector<float>(), Catch::Matchers::Approx(Floats{0.9f, 0.9f, 0.9f, 0.7f, 0.7f, 0.7f,
                                                      0.5f, 0.5f, 0.5f}).margin(1e-6));
  }
}

TEST_CASE("augment: the same seed gives the same bytes, another seed others", "[augment]") {
  Tensor image = Pattern(30, 40);
  const Floats boxes = {5, 5, 20, 25, 10, 20, 28, 38};
  auto run = [&](uint64_t seed) {
    SeededRandom random(seed);
    return Augment(image, boxes, {1, 2}, AugmentOptions{}, random);
  };
  int differing = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    AugmentedExample a = run(seed), b = run(seed), other = run(seed + 100);
    CHECK(std::memcmp(a.image.raw_data(), b.image.raw_data(), a.image.TotalBytes()) == 0);
    CHECK(a.boxes == b.boxes);
    CHECK(a.labels == b.labels);
    auto values = a.image.flat<float>();
    CHECK(std::all_of(values.begin(), values.end(), [](float v) { return v >= 0 && v <= 1; }));
    differing += std::memcmp(a.image.raw_data(), other.image.raw_data(), a.image.TotalBytes()) != 0;
  }
  CHECK(differing == 4);
}

TEST_CASE("augment: bad augmentation inputs are named errors", "[augment]") {
  SeededRandom random(1);
  AugmentOptions o;
  ExpectError(
      [&] {
        Augment(Pattern(4, 4), {0, 0, 1}, {1}, o, random);
      },
      Code::kInvalidArgument, {"3 box coordinates", "1 labels"});
  ExpectError(
      [&] {
        Augment(Tensor(DType::kUInt8, {4, 4, 1}), {}, {}, o, random);
      },
      Code::kInvalidArgument, {"[H, W, 3]"});
  o.image_size = 0;
  ExpectError([&] { Augment(Pattern(4, 4), {}, {}, o, random); }, Code::kInvalidArgument,
              {"image_size"});
  o.image_size = 8, o.crop_min_scale = 0;
  ExpectError([&] { Augment(Pattern(4, 4), {}, {}, o, random); }, Code::kInvalidArgument,
              {"crop scales"});
}
