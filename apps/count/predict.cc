// dflow-count predict: counts images of any size (tiled and stitched), with
// optional heatmap PNGs and a CSV of the counts.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "apps/count/commands.h"
#include "apps/count/heatmap.h"
#include "apps/count/trained_model.h"
#include "graph/file.h"
#include "models/data/image.h"

namespace dflow::count_app {
namespace {

namespace fs = std::filesystem;

bool IsImageFile(const fs::path& path) {
  static const std::set<std::string> kExtensions = {".png", ".jpg", ".jpeg", ".bmp", ".tga",
                                                    ".gif", ".ppm", ".pgm", ".pnm"};
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return kExtensions.count(ext) > 0;
}

// Files as given, directories expanded to their image files (sorted). Every
// image's header is read here, so a bad file stops the run before anything
// is written.
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

std::string HeatmapPath(const std::string& dir, const std::string& image) {
  return (fs::path(dir) / (fs::path(image).stem().string() + "_heatmap.png")).string();
}

}  // namespace

int Predict(const PredictSettings& settings) {
  DFLOW_REQUIRE(!settings.inputs.empty(), "predict: give image files or directories");
  std::vector<std::string> images = ListImages(settings.inputs);
  std::unique_ptr<TrainedModel> trained = LoadTrainedModel(settings.checkpoint, settings.threads, settings.device);
  if (!settings.heatmap_dir.empty()) fs::create_directories(settings.heatmap_dir);
  std::ostringstream csv;
  csv << "image,count\n" << std::fixed << std::setprecision(3);
  for (const std::string& path : images) {
    Tensor image = models::ReadImage(path, 3);
    Tensor density = models::PredictDensity(*trained->session, trained->model, image);
    double count = 0;
    for (float v : density.flat<float>()) count += v;
    std::cout << path << "  " << std::fixed << std::setprecision(1) << count << "\n";
    csv << path << "," << count << "\n";
    if (!settings.heatmap_dir.empty()) {
      std::string out = HeatmapPath(settings.heatmap_dir, path);
      models::WritePng(out, DensityOverlay(image, density));
      std::cout << "  heatmap " << out << "\n";
    }
  }
  if (!settings.csv.empty()) WriteFileAtomic(settings.csv, csv.str());
  return 0;
}

}  // namespace dflow::count_app
