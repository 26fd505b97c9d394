// Small hand-made detection datasets for the COCO and VOC evaluation tests,
// files of hand-made dataset folders for the format tests, and the one-object
// image the detectors' graph tests fit.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "graph/file.h"
#include "graph/tensor.h"
#include "models/data/detection_dataset.h"

namespace dflow::testing {

// `images` images (ids 1..n, 640x480) and categories with ids `category_ids`.
inline models::DetectionDataset MakeTruth(int images, std::vector<int64_t> category_ids) {
  models::DetectionDataset truth;
  for (int i = 1; i <= images; ++i)
    truth.images.push_back({i, "image" + std::to_string(i) + ".png", 640, 480});
  for (int64_t c : category_ids) truth.categories.push_back({c, "class" + std::to_string(c)});
  return truth;
}

// Adds an object; area < 0: the box's w * h.
inline void AddObject(models::DetectionDataset& truth, int64_t image, int64_t category,
                      models::BoxXYWH box, bool crowd = false, double area = -1,
                      bool difficult = false) {
  int64_t id = int64_t(truth.annotations.size()) + 1;
  truth.annotations.push_back(
      {id, image, category, box, area < 0 ? box[2] * box[3] : area, crowd, difficult});
}

// Writes `text` to `path`, creating the folders on the way (Annotations/, labels/).
inline void WriteDatasetFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  WriteFileAtomic(path, text);
}

// One image: a bright square on a dark background, and its box (y1, x1, y2, x2).
struct OneObject {
  Tensor image;  // float32 [1, size, size, 3] in [0, 1]
  std::vector<float> box = {0.25f, 0.3125f, 0.75f, 0.8125f};
};

inline OneObject MakeOneObject(int64_t size) {
  OneObject o;
  o.image = Tensor(DType::kFloat32, Shape{1, size, size, 3});
  float* p = o.image.data<float>();
  for (int64_t y = 0; y < size; ++y)
    for (int64_t x = 0; x < size; ++x) {
      float fy = (static_cast<float>(y) + 0.5f) / static_cast<float>(size);
      float fx = (static_cast<float>(x) + 0.5f) / static_cast<float>(size);
      bool inside = fy > o.box[0] && fy < o.box[2] && fx > o.box[1] && fx < o.box[3];
      for (int c = 0; c < 3; ++c) p[(y * size + x) * 3 + c] = inside ? 0.9f : 0.1f;
    }
  return o;
}

}  // namespace dflow::testing
