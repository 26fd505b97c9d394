// dflow-detect cocoeval: COCO box evaluation of a results file, printed as
// pycocotools prints it, then the stats as one JSON line (the last on stdout).
#include <iostream>

#include "apps/detect/commands.h"
#include "models/data/coco.h"
#include "models/data/detection_formats.h"
#include "models/metrics/coco_eval.h"

namespace dflow::detect_app {

int CocoEval(const CocoEvalSettings& s) {
  models::DetectionDataset truth = models::ReadCocoInstances(s.gt);
  std::vector<models::Detection> detections = models::ReadCocoResults(s.dt, truth);
  models::CocoEvalResult result = models::EvaluateCoco(truth, detections, {.threads = s.threads});
  std::cout << models::FormatCocoSummary(result.stats) << models::CocoStatsJson(result.stats) << std::endl;
  return 0;
}

models::DetectionDataset LoadDataset(const std::string& dir) {
  return models::LoadDetectionDataset(dir);
}

}  // namespace dflow::detect_app
