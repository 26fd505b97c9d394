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
  // A failed command writes nothing: the heatmaps are staged until every
  // image is counted and the CSV is written.
  apps::StagedOutputDir heatmap_dir(settings.heatmap_dir);
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
    if (heatmap_dir.enabled()) {
      models::WritePng(heatmap_dir.StagingPath(heatmaps[i]), DensityOverlay(image, density));
      std::cout << "  heatmap " << heatmap_dir.FinalPath(heatmaps[i]) << "\n";
    }
  }
  if (!settings.csv.empty()) WriteFileAtomic(settings.csv, csv.str());
  heatmap_dir.Commit();
  return 0;
}

}  // namespace dflow::count_app
