// dflow-detect: object detection over models/. Subcommands: cocoeval (COCO
// box evaluation of a results file, as pycocotools prints it) and convert
// (a dataset between COCO, Pascal VOC and YOLO); see --help.
#include <iostream>

#include <CLI/CLI.hpp>

#include "apps/detect/commands.h"

namespace {

using namespace dflow::detect_app;

void AddCocoEval(CLI::App& app, CocoEvalSettings& s) {
  app.add_option("--gt", s.gt, "Ground truth: COCO instances JSON")->required();
  app.add_option("--dt", s.dt, "Detections: COCO results JSON")->required();
  app.add_option("--threads", s.threads, "Threads (default: one per core)")
      ->check(CLI::PositiveNumber);
}

void AddConvert(CLI::App& app, ConvertSettings& s) {
  app.add_option("--data", s.data,
                 "Dataset folder: annotations.json (COCO), Annotations/ (VOC) or labels/ (YOLO)")
      ->required();
  app.add_option("--out", s.out, "New or empty folder to write the converted dataset to")
      ->required();
  app.add_option("--format", s.format, "Format to write")
      ->required()
      ->check(CLI::IsMember({"coco", "voc", "yolo"}));
  app.add_option("--split", s.split,
                 "VOC source: read only the images listed in ImageSets/Main/SPLIT.txt");
  app.add_flag("--voc-classes", s.voc_classes,
               "VOC source: VOC's 20 classes as categories 1..20 in the benchmark's order "
               "(default: the names found, sorted)");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("dflow-detect: object detection (evaluation, dataset formats)");
  app.require_subcommand(1);
  CocoEvalSettings cocoeval;
  CLI::App* cocoeval_app =
      app.add_subcommand("cocoeval", "COCO box AP/AR of a results file against ground truth");
  AddCocoEval(*cocoeval_app, cocoeval);
  ConvertSettings convert;
  CLI::App* convert_app =
      app.add_subcommand("convert", "Convert a detection dataset between COCO, VOC and YOLO");
  AddConvert(*convert_app, convert);
  CLI11_PARSE(app, argc, argv);
  try {
    if (convert_app->parsed()) return Convert(convert);
    return CocoEval(cocoeval);
  } catch (const std::exception& e) {  // dflow::Error names the file and entry
    std::cerr << "dflow-detect: " << e.what() << "\n";
    return 1;
  }
}
