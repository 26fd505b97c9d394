// The subcommands of dflow-detect (apps/detect/main.cc parses the flags).
#pragma once

#include <string>

namespace dflow::detect_app {

struct CocoEvalSettings {
  std::string gt, dt;
  int threads = 0;
};
// The 12-line summary, then the stats as one JSON line (the last on stdout).
int CocoEval(const CocoEvalSettings& settings);

struct ConvertSettings {
  std::string data;    // a COCO, VOC or YOLO folder (found from what it holds)
  std::string out;     // a new or empty folder
  std::string format;  // coco, voc or yolo
  // A VOC source only: the split to read, and VOC's 20 classes as the categories.
  std::string split;
  bool voc_classes = false;
};
// Reads all of `data` before writing anything to `out`; prints one summary line.
int Convert(const ConvertSettings& settings);

}  // namespace dflow::detect_app
