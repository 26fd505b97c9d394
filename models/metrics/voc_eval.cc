// Pascal VOC AP; see voc_eval.h.
#include "models/metrics/voc_eval.h"

#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <unordered_map>

namespace dflow::models {
namespace {

double IoU(const BoxXYWH& a, const BoxXYWH& b) {
  double w = std::min(a[0] + a[2], b[0] + b[2]) - std::max(a[0], b[0]);
  double h = std::min(a[1] + a[3], b[1] + b[3]) - std::max(a[1], b[1]);
  if (w <= 0 || h <= 0) return 0;
  double inter = w * h;
  return inter / (a[2] * a[3] + b[2] * b[3] - inter);
}

// The curve of one class: hit/false-positive flags per detection, by score.
struct ClassCurve {
  std::vector<double> recall, precision;
  int64_t objects = 0, detections = 0;
};

ClassCurve MatchClass(const std::vector<const DetectionObject*>& objects,
                      std::vector<const Detection*> dets, double threshold) {
  ClassCurve curve;
  std::unordered_map<int64_t, std::vector<size_t>> by_image;  // image id -> objects
  for (size_t i = 0; i < objects.size(); ++i) {
    by_image[objects[i]->image_id].push_back(i);
    curve.objects += !(objects[i]->difficult || objects[i]->iscrowd);
  }
  std::stable_sort(dets.begin(), dets.end(),
                   [](const Detection* a, const Detection* b) { return a->score > b->score; });
  std::vector<char> found(objects.size(), 0);
  double tp = 0, fp = 0;
  for (const Detection* d : dets) {
    double best = -1;
    size_t best_i = 0;
    if (auto it = by_image.find(d->image_id); it != by_image.end())
      for (size_t i : it->second)
        if (double iou = IoU(d->bbox, objects[i]->bbox); iou > best) best = iou, best_i = i;
    if (best > threshold) {
      const DetectionObject& o = *objects[best_i];
      if (!(o.difficult || o.iscrowd)) {
        if (found[best_i]) fp += 1;
        else tp += 1, found[best_i] = 1;
      }
    } else {
      fp += 1;
    }
    // Recall over the objects that count; precision guarded as the devkit
    // (tp / max(tp + fp, eps)) for leading difficult hits.
    curve.recall.push_back(curve.objects ? tp / double(curve.objects) : 0);
    curve.precision.push_back(tp / std::max(tp + fp, DBL_EPSILON));
  }
  curve.detections = int64_t(dets.size());
  return curve;
}

}  // namespace

double VocAveragePrecision(const std::vector<double>& recall, const std::vector<double>& precision,
                           VocApMethod method) {
  if (method == VocApMethod::kElevenPoint) {
    double ap = 0;
    for (int i = 0; i <= 10; ++i) {
      // numpy.arange(0, 1.1, 0.1), as the Python references: i * 0.1, so
      // 0.30000000000000004, 0.6000000000000001 and 0.7000000000000001.
      double t = i * 0.1;
      double best = 0;
      for (size_t j = 0; j < recall.size(); ++j)
        if (recall[j] >= t) best = std::max(best, precision[j]);
      ap += best / 11;
    }
    return ap;
  }
  // Sentinels (0, 0) and (1, 0), the envelope from the right, then the sum of
  // rectangles where recall changes.
  std::vector<double> r = {0}, p = {0};
  r.insert(r.end(), recall.begin(), recall.end());
  p.insert(p.end(), precision.begin(), precision.end());
  r.push_back(1);
  p.push_back(0);
  for (size_t i = p.size() - 1; i > 0; --i) p[i - 1] = std::max(p[i - 1], p[i]);
  double ap = 0;
  for (size_t i = 0; i + 1 < r.size(); ++i)
    if (r[i + 1] != r[i]) ap += (r[i + 1] - r[i]) * p[i + 1];
  return ap;
}

VocEvalResult EvaluateVoc(const DetectionDataset& truth, const std::vector<Detection>& detections,
                          const VocEvalOptions& options) {
  std::unordered_map<int64_t, size_t> class_index;
  for (size_t c = 0; c < truth.categories.size(); ++c)
    class_index.emplace(truth.categories[c].id, c);
  std::vector<std::vector<const DetectionObject*>> objects(truth.categories.size());
  std::vector<std::vector<const Detection*>> dets(truth.categories.size());
  for (const DetectionObject& o : truth.annotations)
    if (auto it = class_index.find(o.category_id); it != class_index.end())
      objects[it->second].push_back(&o);
  for (const Detection& d : detections)
    if (auto it = class_index.find(d.category_id); it != class_index.end())
      dets[it->second].push_back(&d);

  VocEvalResult result;
  double sum = 0;
  int counted = 0;
  for (size_t c = 0; c < truth.categories.size(); ++c) {
    ClassCurve curve = MatchClass(objects[c], dets[c], options.iou_threshold);
    VocClassAP row{truth.categories[c].id, truth.categories[c].name, curve.objects,
                   curve.detections, -1};
    if (curve.objects > 0) {
      row.ap = VocAveragePrecision(curve.recall, curve.precision, options.method);
      sum += row.ap;
      ++counted;
    }
    result.classes.push_back(row);
  }
  if (counted) result.map = sum / counted;
  return result;
}

std::string FormatVocTable(const VocEvalResult& result) {
  std::string out = "  id  class                 objects  detections      AP\n";
  char line[160];
  for (const VocClassAP& c : result.classes) {
    std::snprintf(line, sizeof line, "%4lld  %-20.20s  %7lld  %10lld  %6.4f\n",
                  static_cast<long long>(c.category_id), c.name.c_str(),
                  static_cast<long long>(c.objects), static_cast<long long>(c.detections), c.ap);
    out += line;
  }
  std::snprintf(line, sizeof line, "%-45s  %6.4f\n", "      mAP", result.map);
  return out + line;
}

}  // namespace dflow::models
