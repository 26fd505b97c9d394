// Greedy NMS on the CPU (ops/cpu/greedy_nms.h).
//
// Hard NMS asks, for each candidate, "does any kept box have IoU > t with
// it?". IoU > t >= 0 needs a positive intersection, so only kept boxes that
// overlap the candidate matter. The kept boxes are filed in a uniform grid
// (cells about the candidates' mean box size) under every cell they cover;
// two overlapping boxes always share a cell, because the cell of a
// coordinate is a monotone function of it. A candidate then reads the few
// cells it covers instead of every kept box: O(n) IoUs for n boxes of
// bounded density, against O(n * kept) for the naive loop. Boxes covering
// many cells go to a short list every candidate reads; candidates covering
// many cells read every kept box.
#include "ops/cpu/greedy_nms.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <queue>

namespace dflow::detection {
namespace {

// A key whose ascending order is descending score, then ascending index:
// the float's bits made monotone (-0 and +0 equal), inverted, above the index.
uint64_t CandidateKey(float score, int32_t index) {
  if (score == 0.0f) score = 0.0f;
  uint32_t bits = std::bit_cast<uint32_t>(score);
  bits = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
  return (static_cast<uint64_t>(~bits) << 32) | static_cast<uint32_t>(index);
}

constexpr int64_t kMaxCellsPerBox = 16;    // a kept box covering more goes to large_
constexpr int64_t kMaxCellsPerQuery = 64;  // a candidate covering more reads all_

class KeptBoxGrid {
 public:
  KeptBoxGrid(const std::vector<Box>& boxes, const std::vector<int32_t>& order);

  // Does a kept box have IoU > threshold with b?
  bool Suppresses(const Box& b, float threshold) const {
    Cells c = CellsOf(b);
    if (c.count() > kMaxCellsPerQuery) return AnyAbove(all_, b, threshold);
    if (AnyAbove(large_, b, threshold)) return true;
    for (int64_t y = c.y0; y <= c.y1; ++y)
      for (int64_t x = c.x0; x <= c.x1; ++x)
        if (AnyAbove(cells_[y * gx_ + x], b, threshold)) return true;
    return false;
  }

  void Add(const Box& b) {
    all_.push_back(b);
    Cells c = CellsOf(b);
    if (c.count() > kMaxCellsPerBox) {
      large_.push_back(b);
      return;
    }
    for (int64_t y = c.y0; y <= c.y1; ++y)
      for (int64_t x = c.x0; x <= c.x1; ++x) cells_[y * gx_ + x].push_back(b);
  }

 private:
  struct Cells {
    int64_t y0, y1, x0, x1;
    int64_t count() const { return (y1 - y0 + 1) * (x1 - x0 + 1); }
  };

  static bool AnyAbove(const std::vector<Box>& kept, const Box& b, float threshold) {
    for (const Box& k : kept)
      if (Iou(b, k) > threshold) return true;
    return false;
  }

  static int64_t CellOf(double v, double lo, double inv, int64_t n) {
    auto i = static_cast<int64_t>(std::floor((v - lo) * inv));
    return std::clamp<int64_t>(i, 0, n - 1);
  }

  Cells CellsOf(const Box& b) const {
    return {CellOf(b.ymin, ylo_, inv_h_, gy_), CellOf(b.ymax, ylo_, inv_h_, gy_),
            CellOf(b.xmin, xlo_, inv_w_, gx_), CellOf(b.xmax, xlo_, inv_w_, gx_)};
  }

  double ylo_ = 0, xlo_ = 0, inv_h_ = 0, inv_w_ = 0;
  int64_t gy_ = 1, gx_ = 1;
  std::vector<std::vector<Box>> cells_;
  std::vector<Box> large_, all_;
};

// Cells of about the mean box size over the candidates' extent, at most
// one per candidate.
KeptBoxGrid::KeptBoxGrid(const std::vector<Box>& boxes, const std::vector<int32_t>& order) {
  double ylo = INFINITY, yhi = -INFINITY, xlo = INFINITY, xhi = -INFINITY, sum_h = 0, sum_w = 0;
  int64_t m = 0;
  for (int32_t i : order) {
    const Box& b = boxes[i];
    if (!TakesPart(b)) continue;
    ylo = std::min<double>(ylo, b.ymin), yhi = std::max<double>(yhi, b.ymax);
    xlo = std::min<double>(xlo, b.xmin), xhi = std::max<double>(xhi, b.xmax);
    sum_h += b.ymax - b.ymin, sum_w += b.xmax - b.xmin, ++m;
  }
  if (m > 0) {
    double span_h = yhi - ylo, span_w = xhi - xlo;
    double cells_y = std::clamp(std::ceil(span_h / (sum_h / m)), 1.0, 65536.0);
    double cells_x = std::clamp(std::ceil(span_w / (sum_w / m)), 1.0, 65536.0);
    double shrink = std::sqrt(std::min(1.0, static_cast<double>(m) / (cells_y * cells_x)));
    gy_ = std::max<int64_t>(1, static_cast<int64_t>(cells_y * shrink));
    gx_ = std::max<int64_t>(1, static_cast<int64_t>(cells_x * shrink));
    ylo_ = ylo, xlo_ = xlo;
    inv_h_ = span_h > 0 ? gy_ / span_h : 0;
    inv_w_ = span_w > 0 ? gx_ / span_w : 0;
  }
  cells_.resize(gy_ * gx_);
}

// TensorFlow's priority: the higher score first, equal scores lower index first.
struct SoftCandidate {
  int32_t index;
  float score;
  int64_t suppress_begin;  // kept boxes before this one were already applied
};
struct Lower {
  bool operator()(const SoftCandidate& a, const SoftCandidate& b) const {
    return a.score < b.score || (a.score == b.score && a.index > b.index);
  }
};

}  // namespace

std::vector<int32_t> SortedCandidates(const float* scores, int64_t stride, int64_t n,
                                      float score_threshold) {
  std::vector<uint64_t> keys;
  keys.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    float s = scores[i * stride];
    if (s > score_threshold) keys.push_back(CandidateKey(s, static_cast<int32_t>(i)));
  }
  std::sort(keys.begin(), keys.end());
  std::vector<int32_t> order(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) order[i] = static_cast<int32_t>(keys[i] & 0xffffffffu);
  return order;
}

std::vector<int32_t> HardNms(const std::vector<Box>& boxes, const std::vector<int32_t>& order,
                             int64_t max_output, float iou_threshold) {
  std::vector<int32_t> kept;
  if (max_output <= 0 || order.empty()) return kept;
  KeptBoxGrid grid(boxes, order);
  for (int32_t i : order) {
    const Box& b = boxes[i];
    if (TakesPart(b)) {
      if (grid.Suppresses(b, iou_threshold)) continue;
      grid.Add(b);
    }
    kept.push_back(i);
    if (static_cast<int64_t>(kept.size()) >= max_output) break;
  }
  return kept;
}

void SoftNms(const std::vector<Box>& boxes, const float* scores, const std::vector<int32_t>& order,
             int64_t max_output, float score_threshold, float sigma,
             std::vector<int32_t>& selected, std::vector<float>& selected_scores) {
  std::priority_queue<SoftCandidate, std::vector<SoftCandidate>, Lower> queue;
  for (int32_t i : order) queue.push({i, scores[i], 0});
  const float scale = -0.5f / sigma;
  const auto first = static_cast<int64_t>(selected.size());
  auto kept = [&] { return static_cast<int64_t>(selected.size()) - first; };
  while (kept() < max_output && !queue.empty()) {
    SoftCandidate c = queue.top();
    queue.pop();
    const float original = c.score;
    // Newest kept boxes first: overlapping boxes tend to have close scores.
    for (int64_t j = kept() - 1; j >= c.suppress_begin; --j) {
      float iou = Iou(boxes[c.index], boxes[selected[first + j]]);
      c.score *= std::exp(scale * iou * iou);
      if (c.score <= score_threshold) break;
    }
    c.suppress_begin = kept();
    if (c.score == original) {
      selected.push_back(c.index);
      selected_scores.push_back(c.score);
    } else if (c.score > score_threshold) {
      queue.push(c);
    }
  }
}

NmsSelection NonMaxSuppression(const float* boxes, const float* scores, int64_t n,
                               const NmsArgs& args, const HardNmsFn& hard_nms) {
  std::vector<Box> normalized(n);
  for (int64_t i = 0; i < n; ++i) normalized[i] = NormalizeBox(boxes + 4 * i);
  std::vector<int32_t> order = SortedCandidates(scores, 1, n, args.score_threshold);
  NmsSelection kept;
  if (args.soft_nms_sigma > 0) {
    SoftNms(normalized, scores, order, args.max_output_size, args.score_threshold,
            args.soft_nms_sigma, kept.indices, kept.scores);
    return kept;
  }
  kept.indices = hard_nms(normalized, order);
  for (int32_t i : kept.indices) kept.scores.push_back(scores[i]);
  return kept;
}

}  // namespace dflow::detection
