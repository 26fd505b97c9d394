// The in-memory detection dataset shared by the COCO, VOC and YOLO formats:
// images, boxed objects and categories, plus a detector's scored boxes.
// Boxes are COCO's [x, y, width, height] in pixels (continuous coordinates).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dflow::models {

using BoxXYWH = std::array<double, 4>;  // x, y, width, height

struct DetectionImage {
  int64_t id = 0;
  std::string file_name;
  int64_t width = 0, height = 0;
  bool operator==(const DetectionImage&) const = default;
};

struct DetectionObject {
  int64_t id = 0, image_id = 0, category_id = 0;
  BoxXYWH bbox{};
  double area = 0;         // COCO's annotation area (the mask's for real COCO, not bbox w*h)
  bool iscrowd = false;    // a region of many objects: matches any number of detections
  bool difficult = false;  // Pascal VOC: neither a hit nor a miss in VOC AP
  bool operator==(const DetectionObject&) const = default;
};

struct DetectionCategory {
  int64_t id = 0;
  std::string name;
  bool operator==(const DetectionCategory&) const = default;
};

struct DetectionDataset {
  std::vector<DetectionImage> images;
  std::vector<DetectionObject> annotations;
  std::vector<DetectionCategory> categories;
  bool operator==(const DetectionDataset&) const = default;
};

// One scored box from a detector (an entry of a COCO results file).
struct Detection {
  int64_t image_id = 0, category_id = 0;
  BoxXYWH bbox{};
  double score = 0;
  bool operator==(const Detection&) const = default;
};

}  // namespace dflow::models
