// COCO box evaluation with pycocotools' definitions (COCOeval, iouType
// "bbox", default parameters): precision at 101 recall points per IoU
// threshold, category, area range and detection cap, and the 12 summary stats.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "models/data/detection_dataset.h"

namespace dflow::models {

// pycocotools' Params: IoU .50:.05:.95, recall 0:.01:1 (both as numpy's
// linspace computes them), areas all/small/medium/large in pixels^2 (bounds
// inclusive), at most 1/10/100 detections per image and category.
inline constexpr int kNumCocoIous = 10, kNumCocoRecalls = 101, kNumCocoAreas = 4,
                     kNumCocoMaxDets = 3;
extern const std::array<double, kNumCocoIous> kCocoIouThresholds;
extern const std::array<double, kNumCocoRecalls> kCocoRecallThresholds;
extern const std::array<std::array<double, 2>, kNumCocoAreas> kCocoAreaRanges;
extern const std::array<const char*, kNumCocoAreas> kCocoAreaNames;
extern const std::array<int, kNumCocoMaxDets> kCocoMaxDets;

// AP, AP50, AP75, APs, APm, APl, AR1, AR10, AR100, ARs, ARm, ARl.
using CocoStats = std::array<double, 12>;
extern const std::array<const char*, 12> kCocoStatNames;

struct CocoEvalOptions {
  int threads = 0;  // categories evaluated in parallel; 0: one per hardware thread
};

struct CocoEvalResult {
  std::vector<int64_t> category_ids;  // sorted: the k of the arrays below
  // pycocotools' eval["precision"] [T][R][K][A][M] and eval["recall"]
  // [T][K][A][M], row-major; -1 where the category has no ground truth that
  // counts in that area range (left out of every mean).
  std::vector<double> precision, recall;
  CocoStats stats{};

  size_t PrecisionIndex(int t, int r, size_t k, int a, int m) const {
    size_t K = category_ids.size();
    return (((size_t(t) * kNumCocoRecalls + r) * K + k) * kNumCocoAreas + a) * kNumCocoMaxDets + m;
  }
  size_t RecallIndex(int t, size_t k, int a, int m) const {
    return ((size_t(t) * category_ids.size() + k) * kNumCocoAreas + a) * kNumCocoMaxDets + m;
  }
  double Precision(int t, int r, size_t k, int a, int m) const {
    return precision[PrecisionIndex(t, r, k, a, m)];
  }
  double Recall(int t, size_t k, int a, int m) const { return recall[RecallIndex(t, k, a, m)]; }
  // Category k's AP@[.50:.95] (area all, 100 detections); -1 without ground truth.
  double CategoryAP(size_t k) const;
};

// Evaluates `detections` against `truth` over all of truth's images and
// categories (detections must name those; see ReadCocoResults).
CocoEvalResult EvaluateCoco(const DetectionDataset& truth, const std::vector<Detection>& detections,
                            const CocoEvalOptions& options = {});

// summarize()'s 12 means over the entries > -1 (-1 when there are none).
CocoStats SummarizeCoco(const CocoEvalResult& result);
// pycocotools' summarize() table: 12 lines, each ending in '\n'.
std::string FormatCocoSummary(const CocoStats& stats);
// {"AP": .., "AP50": .., ...} on one line, keys in kCocoStatNames order.
std::string CocoStatsJson(const CocoStats& stats);

}  // namespace dflow::models
