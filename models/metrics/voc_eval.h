// Pascal VOC detection AP as the VOC devkit (and py-faster-rcnn's voc_eval)
// computes it: one IoU threshold, `difficult` objects neither hits nor
// misses, the VOC2007 11-point or the VOC2010+ all-point area; per-class table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/data/detection_dataset.h"

namespace dflow::models {

enum class VocApMethod {
  kElevenPoint,  // VOC2007: mean over recall 0, .1, .., 1 of the best precision at recall >= it
  kAllPoint,     // VOC2010+: the area under the monotone precision envelope
};

struct VocEvalOptions {
  double iou_threshold = 0.5;  // a hit needs IoU strictly above it
  VocApMethod method = VocApMethod::kElevenPoint;
};

struct VocClassAP {
  int64_t category_id = 0;
  std::string name;
  int64_t objects = 0;     // not difficult: the recall denominator
  int64_t detections = 0;
  double ap = -1;          // -1 when the class has no object that counts
};

struct VocEvalResult {
  std::vector<VocClassAP> classes;  // in truth.categories order
  double map = -1;                  // mean AP over the classes with objects (-1: none)
};

// AP of a precision/recall curve (detections in score order).
double VocAveragePrecision(const std::vector<double>& recall, const std::vector<double>& precision,
                           VocApMethod method);

// Per class: detections by descending score (stable) each take the object of
// highest IoU in their image (the first of equal ones); IoU > threshold and
// the object not yet found is a hit, found already is a false positive, a
// difficult (or crowd) object makes it neither. Boxes are continuous
// [x, y, w, h]: a VOC XML box [xmin, xmax] in inclusive pixels is
// [xmin - 1, xmax] here, which gives the devkit's "+1" IoU.
VocEvalResult EvaluateVoc(const DetectionDataset& truth, const std::vector<Detection>& detections,
                          const VocEvalOptions& options = {});

// One row per class (id, name, objects, detections, AP) and a mAP row.
std::string FormatVocTable(const VocEvalResult& result);

}  // namespace dflow::models
