// COCO box evaluation; see coco_eval.h. The algorithm is pycocotools'
// cocoeval.py (evaluateImg, accumulate), reorganised for speed: objects and
// detections are grouped by category once, each category is evaluated by
// one thread over flat arrays (no allocation per image), and a detection's
// outcome at every (area, IoU) is a byte that accumulate() only counts.
#include "models/metrics/coco_eval.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <unordered_map>

#include "graph/status.h"

namespace dflow::models {

// numpy.linspace(start, stop, n): i * ((stop - start) / (n - 1)) + start, the
// last point exactly stop; the same doubles, so IoUs at a threshold compare alike.
template <size_t N>
static std::array<double, N> Linspace(double start, double stop) {
  std::array<double, N> out{};
  double step = (stop - start) / (N - 1);
  for (size_t i = 0; i < N; ++i) out[i] = double(i) * step + start;
  out[N - 1] = stop;
  return out;
}

const std::array<double, kNumCocoIous> kCocoIouThresholds = Linspace<kNumCocoIous>(0.5, 0.95);
const std::array<double, kNumCocoRecalls> kCocoRecallThresholds =
    Linspace<kNumCocoRecalls>(0.0, 1.0);
const std::array<std::array<double, 2>, kNumCocoAreas> kCocoAreaRanges = {
    {{0, 1e10}, {0, 32 * 32}, {32 * 32, 96 * 96}, {96 * 96, 1e10}}};
const std::array<const char*, kNumCocoAreas> kCocoAreaNames = {"all", "small", "medium", "large"};
const std::array<int, kNumCocoMaxDets> kCocoMaxDets = {1, 10, 100};

namespace {

constexpr int kMaxDet = 100;  // kCocoMaxDets.back(): the per-image cap of evaluateImg
constexpr double kSpacing1 = 2.220446049250313e-16;  // numpy.spacing(1): pycocotools' 0/0 guard
enum Outcome : uint8_t { kFalsePositive = 0, kTruePositive = 1, kIgnored = 2 };

// Box IoU as pycocotools' bbIou: for a crowd region the union is the
// detection's own area (the fraction of the detection inside the crowd).
double BoxIoU(const BoxXYWH& d, const BoxXYWH& g, bool crowd) {
  double w = std::min(d[0] + d[2], g[0] + g[2]) - std::max(d[0], g[0]);
  if (w <= 0) return 0;
  double h = std::min(d[1] + d[3], g[1] + g[3]) - std::max(d[1], g[1]);
  if (h <= 0) return 0;
  double inter = w * h, det_area = d[2] * d[3];
  return inter / (crowd ? det_area : det_area + g[2] * g[3] - inter);
}

// Annotations and detections of each category, ordered by (image, file order).
struct Groups {
  size_t categories = 0;
  std::vector<uint32_t> gt_begin, dt_begin;   // K + 1 offsets into the lists below
  std::vector<const DetectionObject*> gt;
  std::vector<const Detection*> dt;
  std::vector<uint32_t> gt_image, dt_image;   // the image index of each entry
};

template <typename T>
void Group(const std::vector<T>& items, const std::unordered_map<int64_t, uint32_t>& images,
           const std::unordered_map<int64_t, uint32_t>& categories, std::vector<uint32_t>& begin,
           std::vector<const T*>& list, std::vector<uint32_t>& image_of) {
  struct Key {
    uint32_t category, image, index;
    auto operator<=>(const Key&) const = default;
  };
  std::vector<Key> keys;
  keys.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    auto img = images.find(items[i].image_id);
    auto cat = categories.find(items[i].category_id);
    if (img == images.end() || cat == categories.end())
      Fail(Code::kInvalidArgument, "COCO evaluation: entry ", i, " names image ",
           items[i].image_id, " and category ", items[i].category_id,
           ", not both in the ground truth");
    keys.push_back({cat->second, img->second, uint32_t(i)});
  }
  std::sort(keys.begin(), keys.end());
  begin.assign(categories.size() + 1, 0);
  for (const Key& k : keys) {
    ++begin[k.category + 1];
    list.push_back(&items[k.index]);
    image_of.push_back(k.image);
  }
  for (size_t k = 0; k < categories.size(); ++k) begin[k + 1] += begin[k];
}

// One category's detections (at most kMaxDet per image), in image order and
// best first within an image, and their outcomes.
struct CategoryDets {
  std::vector<double> score;
  std::vector<uint8_t> rank;     // place among its image's detections of this category
  std::vector<uint8_t> outcome;  // [area][iou][detection]
  std::array<int64_t, kNumCocoAreas> counted_gt{};  // ground truth not ignored, per area
  size_t size = 0;
  uint8_t& At(int a, int t, size_t i) { return outcome[(size_t(a) * kNumCocoIous + t) * size + i]; }
};

// Buffers reused across the (image, category) pairs of one thread.
struct Scratch {
  std::vector<const Detection*> dets;
  std::vector<double> iou;          // [detection][gt], gt in file order
  std::vector<uint32_t> gt_order;   // counted gt first, ignored after (both stable)
  std::vector<uint8_t> gt_ignored;  // by position in gt_order
  std::vector<uint8_t> gt_matched;
  std::vector<uint32_t> order;      // accumulate: detections by score
  std::vector<double> rc, pr;
  CategoryDets out;
};

// evaluateImg for one image and category, all areas and thresholds at once:
// each detection, best first, takes the unmatched gt of highest IoU >= t
// (the last of equal ones; a crowd gt stays available), preferring counted
// gt over ignored ones; it is ignored when its gt is, or when unmatched and
// outside the area range.
void MatchImage(const DetectionObject* const* gt, size_t G, size_t D, size_t base, Scratch& s) {
  const std::vector<const Detection*>& dt = s.dets;
  s.iou.resize(D * G);
  for (size_t d = 0; d < D; ++d)
    for (size_t g = 0; g < G; ++g)
      s.iou[d * G + g] = BoxIoU(dt[d]->bbox, gt[g]->bbox, gt[g]->iscrowd);
  for (int a = 0; a < kNumCocoAreas; ++a) {
    auto [lo, hi] = kCocoAreaRanges[a];
    auto ignored = [&](size_t g) { return gt[g]->iscrowd || gt[g]->area < lo || gt[g]->area > hi; };
    s.gt_order.clear();
    s.gt_ignored.clear();
    for (int pass = 0; pass < 2; ++pass)
      for (size_t g = 0; g < G; ++g)
        if (ignored(g) == bool(pass)) {
          s.gt_order.push_back(uint32_t(g));
          s.gt_ignored.push_back(uint8_t(pass));
        }
    s.out.counted_gt[a] += int64_t(std::count(s.gt_ignored.begin(), s.gt_ignored.end(), 0));
    for (int t = 0; t < kNumCocoIous; ++t) {
      s.gt_matched.assign(G, 0);
      for (size_t d = 0; d < D; ++d) {
        double best = std::min(kCocoIouThresholds[t], 1 - 1e-10);
        int m = -1;
        for (size_t j = 0; j < G; ++j) {
          uint32_t g = s.gt_order[j];
          if (s.gt_matched[j] && !gt[g]->iscrowd) continue;
          if (m >= 0 && !s.gt_ignored[m] && s.gt_ignored[j]) break;
          if (s.iou[d * G + g] < best) continue;
          best = s.iou[d * G + g];
          m = int(j);
        }
        uint8_t outcome;
        if (m >= 0) {
          s.gt_matched[m] = 1;
          outcome = s.gt_ignored[m] ? kIgnored : kTruePositive;
        } else {
          double area = dt[d]->bbox[2] * dt[d]->bbox[3];
          outcome = area < lo || area > hi ? kIgnored : kFalsePositive;
        }
        s.out.At(a, t, base + d) = outcome;
      }
    }
  }
}

// Matches every image of category k into s.out.
void MatchCategory(const Groups& groups, size_t k, Scratch& s) {
  size_t g0 = groups.gt_begin[k], g1 = groups.gt_begin[k + 1];
  size_t d0 = groups.dt_begin[k], d1 = groups.dt_begin[k + 1];
  CategoryDets& out = s.out;
  out.size = 0;
  for (size_t d = d0; d < d1;) {  // the number of detections kept: <= kMaxDet per image
    size_t e = d;
    while (e < d1 && groups.dt_image[e] == groups.dt_image[d]) ++e;
    out.size += std::min<size_t>(e - d, kMaxDet);
    d = e;
  }
  out.score.resize(out.size);
  out.rank.resize(out.size);
  out.outcome.resize(out.size * kNumCocoAreas * kNumCocoIous);
  out.counted_gt.fill(0);
  size_t base = 0;
  while (g0 < g1 || d0 < d1) {
    uint32_t image = std::min(g0 < g1 ? groups.gt_image[g0] : UINT32_MAX,
                              d0 < d1 ? groups.dt_image[d0] : UINT32_MAX);
    size_t ge = g0, de = d0;
    while (ge < g1 && groups.gt_image[ge] == image) ++ge;
    while (de < d1 && groups.dt_image[de] == image) ++de;
    s.dets.assign(groups.dt.begin() + d0, groups.dt.begin() + de);
    std::stable_sort(s.dets.begin(), s.dets.end(),
                     [](const Detection* a, const Detection* b) { return a->score > b->score; });
    size_t D = std::min<size_t>(s.dets.size(), kMaxDet);
    for (size_t d = 0; d < D; ++d) {
      out.score[base + d] = s.dets[d]->score;
      out.rank[base + d] = uint8_t(d);
    }
    MatchImage(groups.gt.data() + g0, ge - g0, D, base, s);
    base += D;
    g0 = ge;
    d0 = de;
  }
}

}  // namespace

namespace {

// accumulate() for category k: precision at each recall threshold is the
// best precision at that recall or beyond (the monotone envelope), taken at
// the first detection whose recall reaches the threshold, 0 when none does.
// Only hits need recall and precision: between two hits recall stays and
// precision only falls, so the envelope's maxima and the first index that
// reaches a recall are at hits; the values are the same doubles as
// pycocotools' full arrays (tp / npig, tp / (fp + tp + eps)).
void AccumulateCategory(size_t k, Scratch& s, CocoEvalResult& r) {
  CategoryDets& c = s.out;
  // Best first; ties keep image order, then the order inside an image
  // (pycocotools sorts with numpy's stable mergesort).
  std::vector<uint32_t> all(c.size);
  for (size_t i = 0; i < c.size; ++i) all[i] = uint32_t(i);
  std::stable_sort(all.begin(), all.end(),
                   [&c](uint32_t a, uint32_t b) { return c.score[a] > c.score[b]; });
  for (int m = 0; m < kNumCocoMaxDets; ++m) {
    s.order.clear();
    for (uint32_t i : all)
      if (c.rank[i] < kCocoMaxDets[m]) s.order.push_back(i);
    const size_t nd = s.order.size();
    for (int a = 0; a < kNumCocoAreas; ++a) {
      if (c.counted_gt[a] == 0) continue;  // no gt that counts: stays -1
      const double npig = double(c.counted_gt[a]);
      for (int t = 0; t < kNumCocoIous; ++t) {
        // Integer counts: numpy's float cumsums of 0/1 hold the same integers.
        int64_t tp = 0, fp = 0;
        s.rc.clear();
        s.pr.clear();
        const uint8_t* outcome = &c.At(a, t, 0);
        for (size_t j = 0; j < nd; ++j) {
          uint8_t o = outcome[s.order[j]];
          fp += o == kFalsePositive;
          if (o != kTruePositive) continue;
          ++tp;
          s.rc.push_back(double(tp) / npig);
          s.pr.push_back(double(tp) / (double(fp + tp) + kSpacing1));
        }
        r.recall[r.RecallIndex(t, k, a, m)] = nd ? double(tp) / npig : 0;
        const size_t hits = s.pr.size();
        for (size_t j = hits; j-- > 1;) s.pr[j - 1] = std::max(s.pr[j - 1], s.pr[j]);
        size_t pi = 0;  // searchsorted(rc, threshold, side="left"), thresholds ascending
        for (int ri = 0; ri < kNumCocoRecalls; ++ri) {
          while (pi < hits && s.rc[pi] < kCocoRecallThresholds[ri]) ++pi;
          r.precision[r.PrecisionIndex(t, ri, k, a, m)] = pi < hits ? s.pr[pi] : 0;
        }
      }
    }
  }
}

std::unordered_map<int64_t, uint32_t> IndexOf(const std::vector<int64_t>& sorted_ids) {
  std::unordered_map<int64_t, uint32_t> index;
  for (size_t i = 0; i < sorted_ids.size(); ++i) index.emplace(sorted_ids[i], uint32_t(i));
  return index;
}

template <typename T, typename Fn>
std::vector<int64_t> SortedIds(const std::vector<T>& items, Fn id) {
  std::vector<int64_t> ids;
  for (const T& item : items) ids.push_back(id(item));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

CocoEvalResult EvaluateCoco(const DetectionDataset& truth, const std::vector<Detection>& detections,
                            const CocoEvalOptions& options) {
  CocoEvalResult result;
  result.category_ids = SortedIds(truth.categories, [](const auto& c) { return c.id; });
  auto images = IndexOf(SortedIds(truth.images, [](const auto& i) { return i.id; }));
  auto categories = IndexOf(result.category_ids);
  Groups groups;
  Group(truth.annotations, images, categories, groups.gt_begin, groups.gt, groups.gt_image);
  Group(detections, images, categories, groups.dt_begin, groups.dt, groups.dt_image);

  const size_t K = result.category_ids.size();
  const size_t cells = size_t(kNumCocoIous) * K * kNumCocoAreas * kNumCocoMaxDets;
  result.precision.assign(cells * kNumCocoRecalls, -1);
  result.recall.assign(cells, -1);
  // Categories are independent and write disjoint parts of the result.
  std::atomic<size_t> next{0};
  auto work = [&] {
    Scratch scratch;
    for (size_t k; (k = next++) < K;) {
      MatchCategory(groups, k, scratch);
      AccumulateCategory(k, scratch, result);
    }
  };
  size_t threads = options.threads > 0 ? size_t(options.threads)
                                       : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, std::max<size_t>(K, 1));
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  result.stats = SummarizeCoco(result);
  return result;
}

}  // namespace dflow::models
