// Small hand-made detection datasets for the COCO and VOC evaluation tests,
// and files of hand-made dataset folders for the format tests.
#pragma once

#include <filesystem>
#include <string>

#include "graph/file.h"
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

}  // namespace dflow::testing
