// dflow-detect cocoeval: COCO box AP/AR of a results file, as pycocotools prints it.
#include <iostream>

#include "apps/detect/commands.h"
#include "models/data/coco.h"
#include "models/metrics/coco_eval.h"

namespace dflow::detect_app {

int CocoEval(const CocoEvalSettings& s) {
  using namespace dflow::models;
  DetectionDataset truth = ReadCocoInstances(s.gt);
  std::vector<Detection> detections = ReadCocoResults(s.dt, truth);
  CocoEvalResult result = EvaluateCoco(truth, detections, {.threads = s.threads});
  std::cout << FormatCocoSummary(result.stats) << CocoStatsJson(result.stats) << std::endl;
  return 0;
}

}  // namespace dflow::detect_app
