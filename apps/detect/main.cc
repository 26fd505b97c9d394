// dflow-detect: object detection over models/. Subcommands: cocoeval (COCO
// box evaluation of a results file, as pycocotools prints it), generate
// (synthetic scenes, apps/detect/generate.h); see --help.
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "apps/detect/generate.h"
#include "graph/status.h"
#include "models/data/coco.h"
#include "models/metrics/coco_eval.h"

namespace {

struct CocoEvalSettings {
  std::string gt, dt;
  int threads = 0;
};

// The 12-line summary, then the stats as one JSON line (the last on stdout).
int CocoEval(const CocoEvalSettings& s) {
  using namespace dflow::models;
  DetectionDataset truth = ReadCocoInstances(s.gt);
  std::vector<Detection> detections = ReadCocoResults(s.dt, truth);
  CocoEvalResult result = EvaluateCoco(truth, detections, {.threads = s.threads});
  std::cout << FormatCocoSummary(result.stats) << CocoStatsJson(result.stats) << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("dflow-detect: object detection (COCO evaluation, synthetic data)");
  app.require_subcommand(1);
  CocoEvalSettings cocoeval;
  CLI::App* cocoeval_app =
      app.add_subcommand("cocoeval", "COCO box AP/AR of a results file against ground truth");
  cocoeval_app->add_option("--gt", cocoeval.gt, "Ground truth: COCO instances JSON")->required();
  cocoeval_app->add_option("--dt", cocoeval.dt, "Detections: COCO results JSON")->required();
  cocoeval_app->add_option("--threads", cocoeval.threads, "Threads (default: one per core)")
      ->check(CLI::PositiveNumber);
  dflow::detect_app::GenerateSettings generate;
  dflow::detect_app::AddGenerateCommand(app, generate);
  CLI11_PARSE(app, argc, argv);
  try {
    if (app.got_subcommand("generate")) return dflow::detect_app::Generate(generate);
    return CocoEval(cocoeval);
  } catch (const std::exception& e) {  // dflow::Error names the file and entry
    std::cerr << "dflow-detect: " << e.what() << "\n";
    return 1;
  }
}
