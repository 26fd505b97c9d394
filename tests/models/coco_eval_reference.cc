// See coco_eval_reference.h. Names follow cocoeval.py; a slow, plain version.
#include "tests/models/coco_eval_reference.h"

#include <algorithm>
#include <map>
#include <optional>

#include "models/metrics/coco_eval.h"

namespace dflow::testing {
namespace {

using namespace dflow::models;
using Key = std::pair<int64_t, int64_t>;  // (image id, category id)

struct EvalImg {
  std::vector<double> dt_scores;
  std::vector<std::vector<int64_t>> dt_matches;  // [T][D]: the matched gt's id, 0 if none
  std::vector<std::vector<bool>> dt_ignore;      // [T][D]
  std::vector<bool> gt_ignore;
};

// maskUtils.iou for boxes (bbIou).
double BbIou(const BoxXYWH& d, const BoxXYWH& g, bool crowd) {
  double w = std::min(d[2] + d[0], g[2] + g[0]) - std::max(d[0], g[0]);
  if (w <= 0) return 0;
  double h = std::min(d[3] + d[1], g[3] + g[1]) - std::max(d[1], g[1]);
  if (h <= 0) return 0;
  double i = w * h, da = d[2] * d[3], ga = g[2] * g[3];
  return i / (crowd ? da : da + ga - i);
}

std::vector<const Detection*> SortedDets(std::vector<const Detection*> dt, size_t max_det) {
  std::stable_sort(dt.begin(), dt.end(),
                   [](const Detection* a, const Detection* b) { return -a->score < -b->score; });
  if (dt.size() > max_det) dt.resize(max_det);
  return dt;
}

std::optional<EvalImg> EvaluateImg(const std::vector<const DetectionObject*>& gt_in,
                                   const std::vector<const Detection*>& dt_in,
                                   std::array<double, 2> rng, size_t max_det) {
  if (gt_in.empty() && dt_in.empty()) return std::nullopt;
  // computeIoU: dt sorted and cut, gt in file order.
  std::vector<const Detection*> dt = SortedDets(dt_in, max_det);
  std::vector<int> g_ig(gt_in.size());
  for (size_t g = 0; g < gt_in.size(); ++g)
    g_ig[g] = gt_in[g]->iscrowd || gt_in[g]->area < rng[0] || gt_in[g]->area > rng[1];
  std::vector<size_t> gtind(gt_in.size());
  for (size_t g = 0; g < gtind.size(); ++g) gtind[g] = g;
  std::stable_sort(gtind.begin(), gtind.end(),
                   [&](size_t a, size_t b) { return g_ig[a] < g_ig[b]; });
  std::vector<const DetectionObject*> gt;
  for (size_t g : gtind) gt.push_back(gt_in[g]);
  const size_t T = kNumCocoIous, G = gt.size(), D = dt.size();
  EvalImg e;
  e.dt_matches.assign(T, std::vector<int64_t>(D, 0));
  e.dt_ignore.assign(T, std::vector<bool>(D, false));
  std::vector<std::vector<int64_t>> gtm(T, std::vector<int64_t>(G, 0));
  for (size_t g = 0; g < G; ++g) e.gt_ignore.push_back(g_ig[gtind[g]]);
  for (size_t t = 0; t < T && G > 0 && D > 0; ++t)
    for (size_t d = 0; d < D; ++d) {
      double iou = std::min(kCocoIouThresholds[t], 1 - 1e-10);
      long m = -1;
      for (size_t g = 0; g < G; ++g) {
        if (gtm[t][g] > 0 && !gt[g]->iscrowd) continue;
        if (m > -1 && !e.gt_ignore[m] && e.gt_ignore[g]) break;
        double v = BbIou(dt[d]->bbox, gt[g]->bbox, gt[g]->iscrowd);
        if (v < iou) continue;
        iou = v;
        m = long(g);
      }
      if (m == -1) continue;
      e.dt_ignore[t][d] = e.gt_ignore[m];
      e.dt_matches[t][d] = gt[m]->id;
      gtm[t][m] = int64_t(d) + 1;
    }
  for (size_t d = 0; d < D; ++d) {
    double area = dt[d]->bbox[2] * dt[d]->bbox[3];
    bool outside = area < rng[0] || area > rng[1];
    for (size_t t = 0; t < T; ++t)
      e.dt_ignore[t][d] = e.dt_ignore[t][d] || (e.dt_matches[t][d] == 0 && outside);
    e.dt_scores.push_back(dt[d]->score);
  }
  return e;
}

}  // namespace

ReferenceCocoEval EvaluateCocoReference(const DetectionDataset& truth,
                                        const std::vector<Detection>& detections) {
  std::vector<int64_t> img_ids, cat_ids;
  for (const auto& i : truth.images) img_ids.push_back(i.id);
  for (const auto& c : truth.categories) cat_ids.push_back(c.id);
  std::sort(img_ids.begin(), img_ids.end());
  std::sort(cat_ids.begin(), cat_ids.end());
  std::map<Key, std::vector<const DetectionObject*>> gts;
  std::map<Key, std::vector<const Detection*>> dts;
  for (const auto& g : truth.annotations) gts[{g.image_id, g.category_id}].push_back(&g);
  for (const auto& d : detections) dts[{d.image_id, d.category_id}].push_back(&d);
  const size_t T = kNumCocoIous, R = kNumCocoRecalls, K = cat_ids.size(), A = kNumCocoAreas,
               M = kNumCocoMaxDets, I = img_ids.size();
  // evalImgs[k][a][i]
  std::vector<std::optional<EvalImg>> eval_imgs;
  for (int64_t cat : cat_ids)
    for (const auto& rng : kCocoAreaRanges)
      for (int64_t img : img_ids)
        eval_imgs.push_back(EvaluateImg(gts[{img, cat}], dts[{img, cat}], rng, kCocoMaxDets[2]));

  ReferenceCocoEval out;
  out.precision.assign(T * R * K * A * M, -1);
  out.recall.assign(T * K * A * M, -1);
  for (size_t k = 0; k < K; ++k)
    for (size_t a = 0; a < A; ++a)
      for (size_t m = 0; m < M; ++m) {
        size_t max_det = size_t(kCocoMaxDets[m]);
        std::vector<const EvalImg*> E;
        for (size_t i = 0; i < I; ++i)
          if (const auto& e = eval_imgs[(k * A + a) * I + i]) E.push_back(&*e);
        if (E.empty()) continue;
        // concatenate, then a stable sort by -score
        struct Entry { double score; std::vector<int64_t> dtm; std::vector<bool> dtig; };
        std::vector<Entry> entries;
        int64_t npig = 0;
        for (const EvalImg* e : E) {
          for (size_t d = 0; d < std::min(max_det, e->dt_scores.size()); ++d) {
            Entry entry{e->dt_scores[d], {}, {}};
            for (size_t t = 0; t < T; ++t) {
              entry.dtm.push_back(e->dt_matches[t][d]);
              entry.dtig.push_back(e->dt_ignore[t][d]);
            }
            entries.push_back(entry);
          }
          for (bool ig : e->gt_ignore) npig += !ig;
        }
        if (npig == 0) continue;
        std::stable_sort(entries.begin(), entries.end(),
                         [](const Entry& x, const Entry& y) { return -x.score < -y.score; });
        const size_t nd = entries.size();
        for (size_t t = 0; t < T; ++t) {
          std::vector<double> rc(nd), pr(nd);
          double tp = 0, fp = 0;
          for (size_t d = 0; d < nd; ++d) {
            tp += entries[d].dtm[t] != 0 && !entries[d].dtig[t];
            fp += entries[d].dtm[t] == 0 && !entries[d].dtig[t];
            rc[d] = tp / double(npig);
            pr[d] = tp / (fp + tp + 2.220446049250313e-16);
          }
          out.recall[((t * K + k) * A + a) * M + m] = nd ? rc[nd - 1] : 0;
          for (size_t i = nd - 1; nd > 0 && i > 0; --i)
            if (pr[i] > pr[i - 1]) pr[i - 1] = pr[i];
          for (size_t r = 0; r < R; ++r) {
            size_t pi = size_t(std::lower_bound(rc.begin(), rc.end(), kCocoRecallThresholds[r]) -
                               rc.begin());
            out.precision[(((t * R + r) * K + k) * A + a) * M + m] = pi < nd ? pr[pi] : 0;
          }
        }
      }
  return out;
}

}  // namespace dflow::testing
