// Image arguments; see image_files.h.
#include "apps/common/image_files.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "graph/status.h"
#include "models/data/image.h"

namespace dflow::apps {
namespace {

namespace fs = std::filesystem;

bool IsImageFile(const fs::path& path) {
  static const std::set<std::string> kExtensions = {".png", ".jpg", ".jpeg", ".bmp", ".tga",
                                                    ".gif", ".ppm", ".pgm", ".pnm"};
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return kExtensions.count(ext) > 0;
}

}  // namespace

std::vector<std::string> ListImages(const std::vector<std::string>& inputs) {
  std::vector<std::string> images;
  for (const std::string& input : inputs) {
    if (!fs::exists(input)) Fail(Code::kNotFound, "predict: ", input, " does not exist");
    if (!fs::is_directory(input)) {
      images.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    for (const fs::directory_entry& e : fs::directory_iterator(input))
      if (e.is_regular_file() && IsImageFile(e.path())) found.push_back(e.path().string());
    if (found.empty()) Fail(Code::kNotFound, "predict: no image files in ", input);
    std::sort(found.begin(), found.end());
    images.insert(images.end(), found.begin(), found.end());
  }
  for (const std::string& path : images) models::ReadImageInfo(path);
  return images;
}

std::vector<std::string> UniqueOutputNames(const std::vector<std::string>& inputs,
                                           const std::string& suffix) {
  std::set<std::string> taken;
  std::vector<std::string> names;
  for (const std::string& input : inputs) {
    std::string stem = fs::path(input).stem().string(), name = stem + suffix;
    for (int n = 2; taken.count(name); ++n) name = stem + "_" + std::to_string(n) + suffix;
    taken.insert(name);
    names.push_back(name);
  }
  return names;
}

}  // namespace dflow::apps
