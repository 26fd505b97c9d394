// dflow-count predict: counts images of any size (tiled and stitched), with
// optional heatmap PNGs and a CSV of the counts.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "apps/common/image_files.h"
#include "apps/count/commands.h"
#include "apps/count/heatmap.h"
#include "apps/count/trained_model.h"
#include "graph/file.h"
#include "models/data/image.h"

namespace dflow::count_app {

namespace fs = std::filesystem;

int Predict(const PredictSettings& settings) {
  DFLOW_REQUIRE(!settings.inputs.empty(), "predict: give image files or directories");
  std::vector<std::string> images = apps::ListImages(settings.inputs);
  // Inputs that share a file name get heatmaps of their own (x, x_2, ...).
  std::vector<std::string> heatmaps = apps::UniqueOutputNames(images, "_heatmap.png");
  std::unique_ptr<TrainedModel> trained = LoadTrainedModel(settings.checkpoint, settings.threads, settings.device);
  if (!settings.heatmap_dir.empty()) fs::create_directories(settings.heatmap_dir);
  std::ostringstream csv;
  csv << "image,count\n" << std::fixed << std::setprecision(3);
  for (size_t i = 0; i < images.size(); ++i) {
    const std::string& path = images[i];
    Tensor image = models::ReadImage(path, 3);
    Tensor density = models::PredictDensity(*trained->session, trained->model, image);
    double count = 0;
    for (float v : density.flat<float>()) count += v;
    std::cout << path << "  " << std::fixed << std::setprecision(1) << count << "\n";
    csv << path << "," << count << "\n";
    if (!settings.heatmap_dir.empty()) {
      std::string out = (fs::path(settings.heatmap_dir) / heatmaps[i]).string();
      models::WritePng(out, DensityOverlay(image, density));
      std::cout << "  heatmap " << out << "\n";
    }
  }
  if (!settings.csv.empty()) WriteFileAtomic(settings.csv, csv.str());
  return 0;
}

}  // namespace dflow::count_app
