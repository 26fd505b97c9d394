// pycocotools' summarize(): the 12 standard means and their table; see coco_eval.h.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "models/metrics/coco_eval.h"

namespace dflow::models {

const std::array<const char*, 12> kCocoStatNames = {"AP",  "AP50", "AP75", "APs",   "APm", "APl",
                                                    "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"};

namespace {

struct StatSpec {
  bool precision;  // AP (mean precision) or AR (mean recall)
  int iou;         // index into kCocoIouThresholds; -1: all of them
  int area, max_dets;
};

// AP; AP at .50 and .75; AP by area; AR at 1, 10, 100 detections; AR by area.
constexpr std::array<StatSpec, 12> kSpecs = {{{true, -1, 0, 2},
                                              {true, 0, 0, 2},
                                              {true, 5, 0, 2},
                                              {true, -1, 1, 2},
                                              {true, -1, 2, 2},
                                              {true, -1, 3, 2},
                                              {false, -1, 0, 0},
                                              {false, -1, 0, 1},
                                              {false, -1, 0, 2},
                                              {false, -1, 1, 2},
                                              {false, -1, 2, 2},
                                              {false, -1, 3, 2}}};

// The mean of the entries > -1 over the selected thresholds, recall points
// and categories (all categories weigh the same); -1 when there are none.
double Mean(const CocoEvalResult& r, const StatSpec& spec, const std::vector<size_t>& ks) {
  double sum = 0;
  size_t n = 0;
  auto add = [&](double v) {
    if (v > -1) sum += v, ++n;
  };
  int t0 = spec.iou < 0 ? 0 : spec.iou, t1 = spec.iou < 0 ? kNumCocoIous : spec.iou + 1;
  for (int t = t0; t < t1; ++t)
    for (size_t k : ks) {
      if (!spec.precision) add(r.Recall(t, k, spec.area, spec.max_dets));
      else
        for (int ri = 0; ri < kNumCocoRecalls; ++ri)
          add(r.Precision(t, ri, k, spec.area, spec.max_dets));
    }
  return n ? sum / double(n) : -1;
}

std::vector<size_t> AllCategories(const CocoEvalResult& r) {
  std::vector<size_t> ks(r.category_ids.size());
  for (size_t k = 0; k < ks.size(); ++k) ks[k] = k;
  return ks;
}

}  // namespace

double CocoEvalResult::CategoryAP(size_t k) const { return Mean(*this, kSpecs[0], {k}); }

CocoStats SummarizeCoco(const CocoEvalResult& result) {
  CocoStats stats{};
  std::vector<size_t> ks = AllCategories(result);
  for (size_t i = 0; i < stats.size(); ++i) stats[i] = Mean(result, kSpecs[i], ks);
  return stats;
}

std::string FormatCocoSummary(const CocoStats& stats) {
  std::string out;
  for (size_t i = 0; i < stats.size(); ++i) {
    const StatSpec& spec = kSpecs[i];
    char iou[16], line[128];
    if (spec.iou < 0)
      std::snprintf(iou, sizeof iou, "%0.2f:%0.2f", kCocoIouThresholds[0], kCocoIouThresholds[9]);
    else
      std::snprintf(iou, sizeof iou, "%0.2f", kCocoIouThresholds[spec.iou]);
    // pycocotools: ' {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} ] = {:0.3f}'
    std::snprintf(line, sizeof line, " %-18s %s @[ IoU=%-9s | area=%6s | maxDets=%3d ] = %0.3f\n",
                  spec.precision ? "Average Precision" : "Average Recall",
                  spec.precision ? "(AP)" : "(AR)", iou, kCocoAreaNames[spec.area],
                  kCocoMaxDets[spec.max_dets], stats[i]);
    out += line;
  }
  return out;
}

std::string CocoStatsJson(const CocoStats& stats) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (size_t i = 0; i < stats.size(); ++i) out[kCocoStatNames[i]] = stats[i];
  return out.dump();
}

}  // namespace dflow::models
