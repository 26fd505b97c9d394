// dflow-detect predict: a trained detector on image files of any size: the
// boxes printed, drawn into PNGs, and written as COCO results or CSV.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/common/image_files.h"
#include "apps/common/progress.h"
#include "apps/detect/commands.h"
#include "apps/detect/detector.h"
#include "apps/detect/draw.h"
#include "graph/file.h"
#include "models/data/detection_augment.h"
#include "models/data/image.h"

namespace dflow::detect_app {
namespace {

namespace fs = std::filesystem;

std::string ClassName(const TrainSettings& run, int64_t category_id) {
  auto k = std::find(run.category_ids.begin(), run.category_ids.end(), category_id);
  return run.class_names.at(static_cast<size_t>(k - run.category_ids.begin()));
}

std::string CsvRows(const std::string& path, const std::vector<models::Detection>& detections,
                    const TrainSettings& run) {
  std::ostringstream csv;
  csv << std::fixed << std::setprecision(2);
  for (const models::Detection& d : detections)
    csv << path << "," << ClassName(run, d.category_id) << "," << d.score << "," << d.bbox[0]
        << "," << d.bbox[1] << "," << d.bbox[2] << "," << d.bbox[3] << "\n";
  return csv.str();
}

// A COCO results entry, plus the image's file and the class's name (the
// image ids are positions in the list of inputs).
nlohmann::json ResultEntry(const models::Detection& d, const std::string& path,
                           const TrainSettings& run) {
  return {{"image_id", d.image_id}, {"file_name", path}, {"category_id", d.category_id},
          {"category_name", ClassName(run, d.category_id)},
          {"bbox", {d.bbox[0], d.bbox[1], d.bbox[2], d.bbox[3]}}, {"score", d.score}};
}

}  // namespace

Tensor NetworkInput(const Tensor& image, int64_t size) {
  Tensor input(DType::kFloat32, Shape{1, size, size, 3});
  models::RenderGeometry(image, models::IdentityGeometry(image.shape().dim(0), image.shape().dim(1)),
                         size, models::AugmentOptions{}.fill, input.data<float>());
  return input;
}

int Predict(const PredictSettings& settings) {
  DFLOW_REQUIRE(!settings.inputs.empty(), "predict: give image files or directories");
  DFLOW_REQUIRE(settings.score >= 0 && settings.score <= 1, "predict: --score must be in [0, 1], got ",
                settings.score);
  std::vector<std::string> images = apps::ListImages(settings.inputs);
  std::vector<std::string> drawn = apps::UniqueOutputNames(images, "_boxes.png");
  std::unique_ptr<TrainedDetector> detector =
      LoadDetector(settings.checkpoint, settings.graph, settings.threads, settings.device,
                   {.score_threshold = static_cast<float>(settings.score)});
  if (const std::string note = ScoreThresholdNote(*detector, settings.score); !note.empty())
    std::cerr << note << "\n";
  const TrainSettings& run = detector->config;
  // A failed command writes nothing: the drawn images are staged until every
  // image is done and the CSV and JSON are written.
  apps::StagedOutputDir drawn_dir(settings.out);
  std::string csv = "image,class,score,x,y,width,height\n";
  nlohmann::json results = nlohmann::json::array();
  // A few images are listed with their boxes; a folder gets a progress bar.
  const bool list = images.size() <= 10;
  apps::Progress progress(0, static_cast<int64_t>(images.size()), 50);
  int64_t objects = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    Tensor image = models::ReadImage(images[i], 3);
    std::vector<models::Detection> found =
        Detect(*detector, NetworkInput(image, run.size), {static_cast<int64_t>(i) + 1},
               {{image.shape().dim(0), image.shape().dim(1)}}, run.category_ids);
    std::erase_if(found, [&](const models::Detection& d) { return d.score < settings.score; });
    objects += static_cast<int64_t>(found.size());
    std::string rows = CsvRows(images[i], found, run);
    csv += rows;
    for (const models::Detection& d : found) results.push_back(ResultEntry(d, images[i], run));
    if (!settings.out.empty()) {
      DrawDetections(image, found, run.category_ids, run.class_names);
      models::WritePng(drawn_dir.StagingPath(drawn[i]), image);
    }
    if (list)
      std::cout << images[i] << ": " << found.size() << " objects\n" << rows;
    else
      progress.Update(static_cast<int64_t>(i) + 1, 1, {{"objects", static_cast<double>(found.size())}});
  }
  if (!list) progress.Finish();
  if (!settings.csv.empty()) WriteFileAtomic(settings.csv, csv);
  if (!settings.json.empty()) WriteFileAtomic(settings.json, results.dump() + "\n");
  drawn_dir.Commit();
  std::cout << objects << " objects in " << images.size() << " images (score >= " << settings.score
            << ")" << (settings.out.empty() ? "" : ", drawn in " + settings.out) << "\n";
  return 0;
}

}  // namespace dflow::detect_app
