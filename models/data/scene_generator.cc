// The synthetic scene generator; see scene_generator.h. Painting lives in
// scene_painting.cc, shapes in scene_shapes.cc, the occlusion rule in
// scene_layout.cc; this file draws the random choices in a fixed order.
#include "models/data/scene_generator.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "graph/status.h"
#include "models/data/scene_layout.h"
#include "models/data/scene_painting.h"

namespace dflow::models {
namespace {

// Declarations, not `using namespace scenes`: a using-directive would also
// bring in the helpers of scenes' own anonymous namespaces wherever this
// file shares a unity unit with them.
using scenes::AddGrain, scenes::Canvas, scenes::ContrastingColor, scenes::MeanColor, scenes::PaintBackground,
    scenes::PaintDistractors, scenes::PaintShape, scenes::PixelBox, scenes::RandomGeometry, scenes::RandomIn,
    scenes::RasterizeShape, scenes::RasterizeSprite, scenes::Rgb, scenes::Scaled, scenes::SceneLayout,
    scenes::ShapeGeometry, scenes::ShapeKind, scenes::ShapeMask, scenes::kNumShapeKinds;

constexpr int64_t kMaxSide = 4096;  // keeps the fixed-point geometry within 64 bits
constexpr int kMaxObjects = 1000;
// A new object tries this many shapes at this many positions each before
// it is dropped: enough for sparse scenes, bounded for crowded ones.
constexpr int kShapeTries = 6, kPositionTries = 6;
constexpr int64_t kGrain = 3;  // sensor noise, levels either way

bool SizeFits(const ShapeMask& mask, int64_t min_size, int64_t max_size) {
  const int64_t w = mask.box.width(), h = mask.box.height();
  return mask.pixels > 0 && std::min(w, h) >= min_size && std::max(w, h) <= max_size;
}

// A shape whose box is min_size..max_size on both sides, or none. A random
// rotation can stretch the box past max_size (or an aspect ratio leave it
// under min_size), so such a shape is rescaled once to fit.
std::optional<ShapeMask> RandomShape(ShapeKind kind, const SceneOptions& o, int64_t max_size,
                                     SeededRandom& random) {
  const int64_t size = RandomIn(random, o.min_size, max_size);
  const ShapeGeometry geometry = RandomGeometry(kind, size, random);
  ShapeMask mask = RasterizeShape(geometry, o.antialias);
  if (SizeFits(mask, o.min_size, max_size)) return mask;
  if (mask.pixels == 0) return std::nullopt;
  const int64_t longer = std::max(mask.box.width(), mask.box.height());
  const int64_t shorter = std::min(mask.box.width(), mask.box.height());
  mask = longer > max_size ? RasterizeShape(Scaled(geometry, max_size, longer + 1), o.antialias)
                           : RasterizeShape(Scaled(geometry, o.min_size + 1, shorter), o.antialias);
  if (SizeFits(mask, o.min_size, max_size)) return mask;
  return std::nullopt;
}

// A sprite whose box's longer side is min_size..max_size, or none.
std::optional<ShapeMask> RandomSprite(const SpriteSet& sprites, int64_t index,
                                      const SceneOptions& o, int64_t max_size,
                                      SeededRandom& random) {
  const int64_t size = RandomIn(random, o.min_size, max_size);
  ShapeMask mask = RasterizeSprite(sprites.images, index, size, o.antialias);
  const int64_t longer = std::max(mask.box.width(), mask.box.height());
  if (mask.pixels == 0 || longer < o.min_size || longer > max_size) return std::nullopt;
  return mask;
}

// The category of a new object and a way to draw random instances of it.
struct ObjectClass {
  int64_t category_id;
  std::function<std::optional<ShapeMask>()> draw;
};

ObjectClass RandomObjectClass(const SceneOptions& o, int64_t max_size, const SpriteSet* sprites,
                              SeededRandom& random) {
  if (sprites) {
    const auto index = static_cast<int64_t>(random.Below(sprites->labels.size()));
    return {sprites->labels[static_cast<size_t>(index)] + 1,
            [&o, &random, sprites, max_size, index] {
              return RandomSprite(*sprites, index, o, max_size, random);
            }};
  }
  const auto kind = static_cast<ShapeKind>(random.Below(static_cast<uint64_t>(o.num_classes)));
  return {static_cast<int64_t>(kind) + 1,
          [&o, &random, max_size, kind] { return RandomShape(kind, o, max_size, random); }};
}

// A colour for a shape in `box` unlike the background there and unlike
// every object it may touch (two shapes of one colour would merge).
Rgb ShapeColor(const PixelBox& box, const Canvas& canvas, const SceneLayout& layout,
               const std::vector<Rgb>& colors, SeededRandom& random) {
  std::vector<Rgb> avoid = {MeanColor(canvas, box)};
  for (int32_t id : layout.ObjectsIn({box.x0 - 2, box.y0 - 2, box.x1 + 2, box.y1 + 2}))
    avoid.push_back(colors[static_cast<size_t>(id - 1)]);
  return ContrastingColor(avoid, random);
}

// Draws one object of `object`'s class where it hides too little of the
// earlier ones; false when no try fitted (the object is dropped). `colors`
// holds each placed object's colour.
bool PlaceObject(const ObjectClass& object, const SceneOptions& o, Canvas& canvas,
                 SceneLayout& layout, std::vector<Rgb>& colors, SeededRandom& random) {
  for (int shape_try = 0; shape_try < kShapeTries; ++shape_try) {
    const std::optional<ShapeMask> mask = object.draw();
    if (!mask) continue;
    const PixelBox& b = mask->box;
    for (int position_try = 0; position_try < kPositionTries; ++position_try) {
      // The grid's corner, chosen so that the shape's box lies in the image.
      const int64_t x = RandomIn(random, -b.x0, o.width - 1 - b.x1);
      const int64_t y = RandomIn(random, -b.y0, o.height - 1 - b.y1);
      if (!layout.Fits(*mask, x, y)) continue;
      const PixelBox where{x + b.x0, y + b.y0, x + b.x1, y + b.y1};
      colors.push_back(ShapeColor(where, canvas, layout, colors, random));
      PaintShape(canvas, *mask, x, y, colors.back());
      layout.Add(*mask, x, y, object.category_id);
      return true;
    }
  }
  return false;
}

Scene Generate(const SceneOptions& o, const SpriteSet* sprites, uint64_t index) {
  CheckSceneOptions(o, sprites);
  const int64_t max_size = SceneMaxSize(o);
  SeededRandom random(SeededRandom::Combine({o.seed, index}));
  Canvas canvas(o.height, o.width);
  PaintBackground(canvas, o.textured, random);
  if (o.distractors) PaintDistractors(canvas, o.min_size, max_size, random);
  SceneLayout layout(o.height, o.width, o.occlusion, o.min_size);
  std::vector<Rgb> colors;
  for (int64_t i = 0, n = RandomIn(random, o.min_objects, o.max_objects); i < n; ++i)
    PlaceObject(RandomObjectClass(o, max_size, sprites, random), o, canvas, layout, colors,
                random);
  AddGrain(canvas, kGrain, random);
  return {std::move(canvas.image()), layout.Instances(), layout.Objects()};
}

}  // namespace

int64_t SceneMaxSize(const SceneOptions& o) {
  return o.max_size > 0 ? o.max_size : std::min(o.height, o.width) / 2;
}

void CheckSceneOptions(const SceneOptions& o, const SpriteSet* sprites) {
  DFLOW_REQUIRE(o.height >= 16 && o.width >= 16 && o.height <= kMaxSide && o.width <= kMaxSide,
                "scene options: size ", o.width, "x", o.height, " outside 16x16 .. ", kMaxSide, "x",
                kMaxSide);
  DFLOW_REQUIRE(sprites || (o.num_classes >= 1 && o.num_classes <= kNumShapeKinds),
                "scene options: num_classes ", o.num_classes, " outside 1..", kNumShapeKinds,
                " (one class per shape: circle .. tee)");
  DFLOW_REQUIRE(o.min_objects >= 0 && o.min_objects <= o.max_objects &&
                    o.max_objects <= kMaxObjects,
                "scene options: objects per image ", o.min_objects, "..", o.max_objects,
                " is not a range within 0..", kMaxObjects);
  DFLOW_REQUIRE(o.min_size >= 4, "scene options: min_size ", o.min_size,
                " below 4 pixels, too small to tell the shapes apart");
  const int64_t shorter = std::min(o.height, o.width);
  DFLOW_REQUIRE(o.min_size <= shorter, "scene options: min_size ", o.min_size,
                " larger than the image's shorter side, ", shorter);
  DFLOW_REQUIRE(o.max_size >= 0 && o.max_size <= shorter, "scene options: max_size ", o.max_size,
                " outside 0 (half the shorter side) .. the image's shorter side, ", shorter);
  DFLOW_REQUIRE(o.min_size <= SceneMaxSize(o), "scene options: min_size ", o.min_size,
                " > max_size ", SceneMaxSize(o), o.max_size == 0 ? " (half the shorter side)" : "");
  DFLOW_REQUIRE(o.occlusion >= 0 && o.occlusion <= 1, "scene options: occlusion ", o.occlusion,
                " outside 0..1");
}

Scene GenerateScene(const SceneOptions& options, uint64_t index) {
  return Generate(options, nullptr, index);
}

Scene GenerateScene(const SceneOptions& options, const SpriteSet& sprites, uint64_t index) {
  DFLOW_REQUIRE(!sprites.labels.empty(), "GenerateScene: no sprites");
  return Generate(options, &sprites, index);
}

std::vector<DetectionCategory> SceneCategories(int num_classes) {
  std::vector<DetectionCategory> categories;
  for (int k = 0; k < num_classes && k < kNumShapeKinds; ++k)
    categories.push_back({k + 1, std::string(kSceneShapeNames[static_cast<size_t>(k)])});
  return categories;
}

}  // namespace dflow::models
