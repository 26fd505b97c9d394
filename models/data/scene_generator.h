// Synthetic detection scenes: 1-10 classes of filled shapes (circle, square,
// triangle, diamond, ring, cross, star, hexagon, crescent, tee) in random colours, sizes,
// aspect ratios and rotations, over textured gradients with unlabelled
// clutter, so that detectors can be trained and tested in minutes on a CPU.
// Each scene is a pure function of (options, index), byte for byte on every
// platform (integer arithmetic only), so held-out data is just another seed.
// Sprites from IDX files (e.g. MNIST digits) can stand in for the shapes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/tensor.h"
#include "models/data/detection_dataset.h"

namespace dflow::models {

// The category names, in category order (id = position + 1).
inline constexpr std::array<std::string_view, 10> kSceneShapeNames = {
    "circle", "square", "triangle", "diamond", "ring", "cross", "star", "hexagon", "crescent", "tee"};

struct SceneOptions {
  int64_t height = 320, width = 320;  // each 16 .. 4096
  int num_classes = 8;                // the first num_classes shapes, 1..10
  int min_objects = 1, max_objects = 8;
  int64_t min_size = 12;  // the sides of every visible box, pixels
  int64_t max_size = 0;   // 0: half the image's shorter side
  // The most of an object's pixels that objects drawn after it may cover;
  // a placement that would cover more is retried, and after a few tries the
  // new object is dropped (so a crowded scene may hold fewer than min_objects).
  double occlusion = 0.3;
  bool textured = true;     // texture blobs and mottle on the background gradient
  bool distractors = true;  // lines, dot clusters, blotches: not any class
  bool antialias = true;    // soft shape edges (ownership is by pixel centre either way)
  uint64_t seed = 1;
};

struct SceneObject {
  int64_t category_id = 0;  // 1..num_classes, named by kSceneShapeNames[category_id - 1]
  BoxXYWH bbox{};           // the tight box of the visible pixels, pixel edges
  int64_t area = 0;         // visible pixels (COCO's mask area), not the box's w * h
  int64_t full_area = 0;    // pixels before later objects covered some
};

struct Scene {
  Tensor image;      // uint8 [height, width, 3], RGB
  Tensor instances;  // int32 [height, width]: 0 background, k where objects[k - 1] is visible
  std::vector<SceneObject> objects;  // in drawing order, later ones on top
};

// Sprites drawn instead of the shapes: sprite i is of category labels[i] + 1,
// cropped to its non-zero pixels, scaled so that its longer side is
// min_size..max_size (a "1" stays narrow), tinted with a random colour
// where bright and owning the pixels of at least half brightness.
struct SpriteSet {
  Tensor images;                // uint8 [count, height, width], 0: transparent
  std::vector<int64_t> labels;  // count labels, each 0..255
  int num_classes() const;      // the largest label + 1
};
// An IDX image file [count, height, width] and an IDX label file [count]
// (idx.h). Throws naming the file when one is malformed, of another rank, or
// the counts differ.
SpriteSet ReadSprites(const std::string& images_path, const std::string& labels_path);
// categories 1..num_classes named by their labels ("0", "1", ...).
std::vector<DetectionCategory> SpriteCategories(const SpriteSet& sprites);

// Throws kInvalidArgument naming the option and its bounds. With sprites,
// num_classes is not used (the labels are the classes).
void CheckSceneOptions(const SceneOptions& options, const SpriteSet* sprites = nullptr);
// `options.max_size`, or its default when 0.
int64_t SceneMaxSize(const SceneOptions& options);

Scene GenerateScene(const SceneOptions& options, uint64_t index);
Scene GenerateScene(const SceneOptions& options, const SpriteSet& sprites, uint64_t index);

// categories 1..num_classes with the shapes' names, for a COCO file.
std::vector<DetectionCategory> SceneCategories(int num_classes);

}  // namespace dflow::models
