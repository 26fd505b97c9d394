// dflow-count eval: counts every image of a dataset with a trained model and
// reports MAE, RMSE and MRE overall and per count bin, next to the baseline
// that predicts the training set's mean count. The last line on stdout is
// the metrics JSON, which is also written to --metrics.
#include <cmath>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/count/commands.h"
#include "apps/count/trained_model.h"
#include "graph/file.h"
#include "models/data/image.h"
#include "models/data/points_dataset.h"
#include "models/metrics/counting.h"

namespace dflow::count_app {
namespace {

// The baseline predicts the training set's mean density times the image's
// area: the training set's mean count per image when sizes match, and a
// fair guess for images of another size.
struct Baseline {
  double count_per_pixel = 0;
  double Predict(const Tensor& image) const {
    return count_per_pixel * static_cast<double>(image.dim(0) * image.dim(1));
  }
};

Baseline FindBaseline(const EvalSettings& settings, const std::string& checkpoint,
                      const Tensor& first_image) {
  if (settings.train_mean_count >= 0)  // per image of the evaluated size
    return {settings.train_mean_count / static_cast<double>(first_image.dim(0) * first_image.dim(1))};
  std::string run = RunDirOf(checkpoint);
  if (run.empty())
    Fail(Code::kNotFound, "eval: no config.json beside ", checkpoint,
         " to take the training set's mean count from; pass --train-mean");
  return {ReadConfig(run).train_count_per_pixel};
}

// Errors of an empty bin, and the MRE of a bin without non-zero counts, are
// null rather than a misleading 0.
nlohmann::json ErrorsJson(const models::CountErrors& e) {
  auto value = [](bool defined, double v) { return defined ? nlohmann::json(v) : nlohmann::json(); };
  return {{"images", e.images},
          {"mae", value(e.images > 0, e.mae)},
          {"rmse", value(e.images > 0, e.rmse)},
          {"mre", value(e.mre_images > 0, e.mre)},
          {"mre_images", e.mre_images}};
}

}  // namespace

int Eval(const EvalSettings& settings) {
  std::vector<models::CountBin> bins = models::ParseCountBins(settings.bins);
  std::vector<models::AnnotatedImage> dataset = models::ReadPointsDataset(settings.data);
  std::unique_ptr<TrainedModel> trained = LoadTrainedModel(settings.checkpoint, settings.threads, settings.device);
  std::vector<double> predicted, truth, baseline;
  Baseline mean_density;
  for (size_t i = 0; i < dataset.size(); ++i) {
    Tensor image = models::ReadImage(dataset[i].path, 3);
    models::CheckPointsInside(dataset[i], image.dim(0), image.dim(1));
    if (i == 0) mean_density = FindBaseline(settings, trained->checkpoint, image);
    Tensor density = models::PredictDensity(*trained->session, trained->model, image);
    double count = 0;
    for (float v : density.flat<float>()) count += v;
    predicted.push_back(count);
    truth.push_back(static_cast<double>(dataset[i].points.size()));
    baseline.push_back(mean_density.Predict(image));
  }
  models::CountReport report = models::EvaluateCounts(predicted, truth, bins);
  models::CountReport base = models::EvaluateCounts(baseline, truth, bins);
  std::cout << "evaluated " << dataset.size() << " images of " << settings.data << " with "
            << trained->checkpoint << "\n"
            << models::FormatCountReport(report) << "baseline (training mean density): MAE "
            << base.overall.mae << "\n";
  nlohmann::json json = {{"mae", report.overall.mae},
                         {"rmse", report.overall.rmse},
                         {"mre", report.overall.mre},
                         {"baseline_mae", base.overall.mae},
                         {"images", report.overall.images},
                         {"checkpoint", trained->checkpoint},
                         {"data", settings.data}};
  nlohmann::json per_bin = nlohmann::json::array();
  for (size_t b = 0; b < report.bins.size(); ++b) {
    nlohmann::json row = ErrorsJson(report.per_bin[b]);
    row["bin"] = report.bins[b].label;
    per_bin.push_back(row);
  }
  json["bins"] = per_bin;
  WriteFileAtomic(settings.metrics, json.dump(2) + "\n");
  std::cout << json.dump() << "\n";
  return 0;
}

}  // namespace dflow::count_app
