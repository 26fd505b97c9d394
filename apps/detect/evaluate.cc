// dflow-detect eval: a trained detector on a labelled dataset: COCO AP/AR,
// Pascal VOC 2007 mAP@0.5 and per-class AP, and the detections as a COCO
// results file.
#include <algorithm>
#include <iostream>

#include <nlohmann/json.hpp>

#include "apps/detect/commands.h"
#include "apps/detect/detector.h"
#include "graph/json.h"
#include "models/data/coco.h"
#include "models/data/detection_pipeline.h"
#include "models/metrics/coco_eval.h"
#include "models/metrics/voc_eval.h"

namespace dflow::detect_app {

models::DetectionDataset InRunOrder(models::DetectionDataset data, const TrainSettings& run,
                                    const std::string& source) {
  std::vector<models::DetectionCategory> ordered;
  for (const std::string& name : run.class_names) {
    auto it = std::find_if(data.categories.begin(), data.categories.end(),
                           [&](const models::DetectionCategory& c) { return c.name == name; });
    if (it != data.categories.end()) ordered.push_back(*it);
  }
  for (const models::DetectionCategory& c : data.categories)
    DFLOW_REQUIRE(std::find(ordered.begin(), ordered.end(), c) != ordered.end(), source,
                  ": category ", c.id, " \"", c.name, "\" is not one of the run's ",
                  run.class_names.size(), " classes");
  // Classes the dataset lacks still take their label's place: the pipeline
  // numbers categories by position.
  std::vector<models::DetectionCategory> all;
  int64_t unused_id = -1;
  for (const std::string& name : run.class_names) {
    auto it = std::find_if(ordered.begin(), ordered.end(),
                           [&](const models::DetectionCategory& c) { return c.name == name; });
    all.push_back(it != ordered.end() ? *it : models::DetectionCategory{unused_id--, name});
  }
  data.categories = std::move(all);
  return data;
}

namespace {

nlohmann::json PerClass(const models::CocoEvalResult& coco, const models::VocEvalResult& voc) {
  nlohmann::json rows = nlohmann::json::array();
  for (const models::VocClassAP& c : voc.classes) {
    auto k = std::find(coco.category_ids.begin(), coco.category_ids.end(), c.category_id);
    double ap = k == coco.category_ids.end()
                    ? -1
                    : coco.CategoryAP(static_cast<size_t>(k - coco.category_ids.begin()));
    rows.push_back({{"id", c.category_id}, {"name", c.name}, {"objects", c.objects},
                    {"AP", ap}, {"voc07_ap", c.ap}});
  }
  return rows;
}

}  // namespace

models::DetectionPipelineOptions InferencePipelineOptions(int64_t size, int64_t batch) {
  models::DetectionPipelineOptions options;
  options.image_size = size;
  options.batch_size = batch;
  options.augment = false;
  options.shuffle = false;
  options.repeat = false;
  options.drop_remainder = false;
  return options;
}

Evaluation Evaluate(TrainedDetector& detector, const std::string& data_dir, int64_t batch, int threads) {
  const TrainSettings& run = detector.config;
  models::DetectionDataset data = InRunOrder(LoadDataset(data_dir), run, data_dir);
  std::vector<int64_t> category_ids;
  for (const models::DetectionCategory& c : data.categories) category_ids.push_back(c.id);

  models::DetectionPipeline pipeline(data, data_dir, InferencePipelineOptions(run.size, batch));
  Evaluation e;
  while (std::optional<models::DetectionBatch> next = pipeline.Next()) {
    std::vector<models::Detection> found =
        Detect(detector, next->images, next->image_ids, next->original_sizes, category_ids);
    e.detections.insert(e.detections.end(), found.begin(), found.end());
  }
  // Evaluation sees the dataset's own categories only.
  std::erase_if(data.categories, [](const models::DetectionCategory& c) { return c.id < 0; });
  e.coco = models::EvaluateCoco(data, e.detections, {.threads = threads});
  e.voc = models::EvaluateVoc(data, e.detections);
  e.images = static_cast<int64_t>(data.images.size());
  e.summary = nlohmann::json::parse(models::CocoStatsJson(e.coco.stats));
  e.summary["voc07_map"] = e.voc.map;
  e.summary["per_class"] = PerClass(e.coco, e.voc);
  e.summary["checkpoint"] = detector.checkpoint;
  e.summary["images"] = e.images;
  return e;
}

int Eval(const EvalSettings& settings) {
  std::unique_ptr<TrainedDetector> detector =
      LoadDetector(settings.checkpoint, settings.graph, settings.threads, settings.device, {});
  if (settings.int8) QuantizeDetector(*detector, settings.calibration, settings.calibration_images, settings.threads);
  Evaluation e = Evaluate(*detector, settings.data, settings.batch, settings.threads);
  e.summary["int8"] = detector->int8;
  e.summary["score_threshold"] = ShortestDecimal(detector->inference.score_threshold);
  if (const std::string note = ScoreThresholdNote(*detector); !note.empty()) std::cerr << note << "\n";
  if (!settings.results.empty()) models::WriteCocoResults(settings.results, e.detections);
  std::cout << "evaluated " << detector->checkpoint << " on " << e.images << " images of "
            << settings.data << " (" << e.detections.size() << " detections)\n"
            << models::FormatCocoSummary(e.coco.stats) << "Pascal VOC 2007 AP@0.5 (11-point):\n"
            << models::FormatVocTable(e.voc);
  std::cout << e.summary.dump() << std::endl;
  return 0;
}

}  // namespace dflow::detect_app
