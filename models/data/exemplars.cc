// Exemplar choice and the memory folder; see exemplars.h.
#include "models/data/exemplars.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "graph/status.h"
#include "models/data/coco.h"
#include "models/data/seeded_random.h"

namespace dflow::models {
namespace {

namespace fs = std::filesystem;

// category id -> the ids of the images holding one of its objects, ascending.
std::map<int64_t, std::vector<int64_t>> ImagesPerCategory(const DetectionDataset& data) {
  std::map<int64_t, std::set<int64_t>> sets;
  for (const DetectionObject& o : data.annotations) sets[o.category_id].insert(o.image_id);
  std::map<int64_t, std::vector<int64_t>> lists;
  for (const auto& [category, images] : sets) lists[category].assign(images.begin(), images.end());
  return lists;
}

int64_t ExemplarCount(double share, size_t images) {
  DFLOW_REQUIRE(share >= 0 && share <= 1, "exemplars: the share must be within [0, 1], got ", share);
  return static_cast<int64_t>(std::ceil(share * static_cast<double>(images)));
}

}  // namespace

DetectionDataset JoinDatasets(const std::vector<DatasetPart>& parts,
                              const std::vector<std::string>& class_names,
                              const std::vector<int64_t>& category_ids) {
  DFLOW_REQUIRE(class_names.size() == category_ids.size(), "JoinDatasets: ", class_names.size(),
                " class names but ", category_ids.size(), " category ids");
  DetectionDataset joined;
  for (size_t k = 0; k < class_names.size(); ++k) joined.categories.push_back({category_ids[k], class_names[k]});
  for (const DatasetPart& part : parts) {
    std::map<int64_t, int64_t> category_of;  // the part's id -> the joined id
    for (const DetectionCategory& c : part.data.categories) {
      auto k = std::find(class_names.begin(), class_names.end(), c.name);
      DFLOW_REQUIRE(k != class_names.end(), part.root, ": category \"", c.name,
                    "\" is not one of the run's classes");
      category_of[c.id] = category_ids[static_cast<size_t>(k - class_names.begin())];
    }
    std::map<int64_t, int64_t> image_of;
    for (DetectionImage image : part.data.images) {
      image_of[image.id] = static_cast<int64_t>(joined.images.size()) + 1;
      image.id = image_of[image.id];
      image.file_name = fs::absolute(fs::path(part.root) / image.file_name).lexically_normal().string();
      joined.images.push_back(std::move(image));
    }
    for (DetectionObject o : part.data.annotations) {
      o.id = static_cast<int64_t>(joined.annotations.size()) + 1;
      o.image_id = image_of.at(o.image_id);
      o.category_id = category_of.at(o.category_id);
      joined.annotations.push_back(o);
    }
  }
  return joined;
}

std::vector<int64_t> ChooseRandomExemplars(const DetectionDataset& data, double share, uint64_t seed) {
  std::set<int64_t> chosen;
  for (auto& [category, images] : ImagesPerCategory(data)) {
    const int64_t count = ExemplarCount(share, images.size());
    // A partial Fisher-Yates shuffle, seeded per category so that one
    // class's choice does not shift another's.
    SeededRandom random(SeededRandom::Combine({seed, static_cast<uint64_t>(category)}));
    for (int64_t i = 0; i < count; ++i) {
      auto j = static_cast<size_t>(i) + random.Below(images.size() - static_cast<size_t>(i));
      std::swap(images[static_cast<size_t>(i)], images[j]);
      chosen.insert(images[static_cast<size_t>(i)]);
    }
  }
  return {chosen.begin(), chosen.end()};
}

std::vector<int64_t> ChooseHerdingExemplars(const DetectionDataset& data,
                                            const std::vector<std::vector<float>>& features,
                                            double share) {
  DFLOW_REQUIRE(features.size() == data.images.size(), "herding: ", features.size(),
                " feature vectors for ", data.images.size(), " images");
  std::map<int64_t, size_t> row_of;
  for (size_t i = 0; i < data.images.size(); ++i) row_of[data.images[i].id] = i;
  std::set<int64_t> chosen;
  for (const auto& [category, images] : ImagesPerCategory(data)) {
    const size_t dims = features[row_of.at(images[0])].size();
    std::vector<double> mean(dims, 0.0), sum(dims, 0.0);
    for (int64_t id : images) {
      const std::vector<float>& f = features[row_of.at(id)];
      DFLOW_REQUIRE(f.size() == dims, "herding: feature vectors of different lengths");
      for (size_t d = 0; d < dims; ++d) mean[d] += f[d] / static_cast<double>(images.size());
    }
    std::vector<bool> taken(images.size(), false);
    const int64_t count = ExemplarCount(share, images.size());
    for (int64_t k = 1; k <= count; ++k) {
      // The image whose addition brings the chosen features' mean closest
      // to the class mean: argmin || mean - (sum + f) / k ||.
      size_t best = 0;
      double best_distance = INFINITY;
      for (size_t i = 0; i < images.size(); ++i) {
        if (taken[i]) continue;
        const std::vector<float>& f = features[row_of.at(images[i])];
        double distance = 0;
        for (size_t d = 0; d < dims; ++d) {
          double diff = mean[d] - (sum[d] + f[d]) / static_cast<double>(k);
          distance += diff * diff;
        }
        if (distance < best_distance) best_distance = distance, best = i;
      }
      taken[best] = true;
      const std::vector<float>& f = features[row_of.at(images[best])];
      for (size_t d = 0; d < dims; ++d) sum[d] += f[d];
      chosen.insert(images[best]);
    }
  }
  return {chosen.begin(), chosen.end()};
}

DetectionDataset SelectImages(const DetectionDataset& data, const std::vector<int64_t>& image_ids) {
  std::set<int64_t> keep(image_ids.begin(), image_ids.end());
  DetectionDataset selected;
  selected.categories = data.categories;
  for (const DetectionImage& image : data.images)
    if (keep.count(image.id)) selected.images.push_back(image);
  for (const DetectionObject& o : data.annotations)
    if (keep.count(o.image_id)) selected.annotations.push_back(o);
  return selected;
}

void WriteDatasetFolder(const std::string& dir, const DetectionDataset& data) {
  const fs::path target(dir), staging(dir + ".tmp"), previous(dir + ".old");
  fs::remove_all(staging);
  fs::create_directories(staging / "images");
  DetectionDataset stored = data;
  for (DetectionImage& image : stored.images) {
    fs::path source(image.file_name);
    DFLOW_REQUIRE(source.is_absolute(), "WriteDatasetFolder: ", image.file_name, " is not an absolute path");
    char name[32];
    std::snprintf(name, sizeof name, "%06lld", static_cast<long long>(image.id));
    fs::path relative = fs::path("images") / (name + source.extension().string());
    std::error_code error;
    fs::copy_file(source, staging / relative, error);
    if (error) Fail(Code::kNotFound, "cannot copy ", source.string(), " into ", dir, ": ", error.message());
    image.file_name = relative.string();
  }
  WriteCocoInstances((staging / "annotations.json").string(), stored);
  // Swap the folders so that DIR is always the old or the new memory, whole.
  fs::remove_all(previous);
  if (fs::exists(target)) fs::rename(target, previous);
  fs::rename(staging, target);
  fs::remove_all(previous);
}

}  // namespace dflow::models
