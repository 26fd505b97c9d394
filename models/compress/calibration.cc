#include "models/compress/calibration.h"

#include <algorithm>
#include <cmath>

namespace dflow::models {
namespace {

constexpr int kBins = 4096;

// Every batch's values of each tensor, one tensor at a time: visit(i, values, n).
template <typename Visit>
void ForEachBatch(Session& session, const std::vector<std::string>& tensors, const std::vector<FeedList>& batches,
                  Visit visit) {
  std::vector<TensorName> fetches(tensors.begin(), tensors.end());
  for (const FeedList& batch : batches) {
    std::vector<Tensor> values = session.Run(batch, fetches);
    for (size_t i = 0; i < values.size(); ++i) {
      DFLOW_REQUIRE(values[i].dtype() == DType::kFloat32, "calibration: ", tensors[i], " is ",
                    DTypeName(values[i].dtype()), ", not float32");
      visit(i, values[i].data<float>(), values[i].NumElements());
    }
  }
}

// The value below which `share` of the histogram's count lies.
float Quantile(const std::vector<int64_t>& histogram, int64_t total, double share, const TensorRange& range) {
  const double wanted = share * static_cast<double>(total);
  int64_t seen = 0;
  const double width = (static_cast<double>(range.max) - range.min) / kBins;
  for (int b = 0; b < kBins; ++b) {
    if (seen + histogram[b] >= wanted && histogram[b] > 0) {
      const double within = (wanted - seen) / static_cast<double>(histogram[b]);
      return static_cast<float>(range.min + (b + within) * width);
    }
    seen += histogram[b];
  }
  return range.max;
}

// The KL divergence of P from Q (both unnormalised), over P's nonzero bins;
// an empty Q bin where P has mass counts as a tiny one.
double Divergence(const std::vector<double>& p, const std::vector<double>& q) {
  double p_sum = 0, q_sum = 0, kl = 0;
  for (size_t j = 0; j < p.size(); ++j) p_sum += p[j], q_sum += q[j];
  for (size_t j = 0; j < p.size(); ++j) {
    if (p[j] <= 0) continue;
    const double pj = p[j] / p_sum, qj = std::max(q[j] / q_sum, 1e-12);
    kl += pj * std::log(pj / qj);
  }
  return kl;
}

// TensorRT's entropy calibration on a histogram of |x| over [0, amax]: the
// threshold (a multiple of the bin width, at least `levels` bins) whose
// clipped distribution P (the mass beyond it added to its last bin) loses
// least information when quantized to `levels` levels (Q: each level's mass
// spread evenly over the bins it covers that are not empty).
double EntropyThreshold(const std::vector<int64_t>& histogram, double width, int levels) {
  const int bins = static_cast<int>(histogram.size());
  double best_kl = INFINITY;
  int best = bins;
  for (int i = levels; i <= bins; i += std::max(1, bins / 256)) {
    std::vector<double> p(histogram.begin(), histogram.begin() + i);
    for (int j = i; j < bins; ++j) p[i - 1] += static_cast<double>(histogram[j]);
    std::vector<double> q(i, 0.0);
    for (int level = 0; level < levels; ++level) {
      const int start = static_cast<int>(static_cast<int64_t>(level) * i / levels);
      const int end = static_cast<int>(static_cast<int64_t>(level + 1) * i / levels);
      double mass = 0;
      int nonzero = 0;
      for (int j = start; j < end; ++j) mass += static_cast<double>(histogram[j]), nonzero += histogram[j] > 0;
      for (int j = start; j < end && nonzero > 0; ++j) q[j] = histogram[j] > 0 ? mass / nonzero : 0.0;
    }
    const double kl = Divergence(p, q);
    if (kl < best_kl) best_kl = kl, best = i;
  }
  return best * width;
}

}  // namespace

std::vector<TensorRange> CalibrateRanges(Session& session, const std::vector<std::string>& tensors,
                                         const std::vector<FeedList>& batches, Calibrator calibrator,
                                         double percentile) {
  DFLOW_REQUIRE(!batches.empty(), "calibration needs at least one batch");
  DFLOW_REQUIRE(percentile > 50 && percentile <= 100, "calibration: the percentile must be in (50, 100], got ",
                percentile);
  std::vector<TensorRange> ranges(tensors.size(), {INFINITY, -INFINITY});
  ForEachBatch(session, tensors, batches, [&](size_t i, const float* v, int64_t n) {
    for (int64_t j = 0; j < n; ++j) {
      DFLOW_REQUIRE(std::isfinite(v[j]), "calibration: ", tensors[i], " has the value ", v[j], " (at ", j, ")");
      ranges[i].min = std::min(ranges[i].min, v[j]);
      ranges[i].max = std::max(ranges[i].max, v[j]);
    }
  });
  for (TensorRange& r : ranges)
    if (r.min > r.max) r = {0, 0};  // a tensor with no elements
  if (calibrator == Calibrator::kMinMax) return ranges;

  // The second pass: a histogram of x over [min, max] (percentiles), or of
  // |x| over [0, max |x|] (entropy).
  const bool entropy = calibrator == Calibrator::kEntropy;
  auto histogram_range = [&](size_t i) -> TensorRange {
    if (!entropy) return ranges[i];
    return {0, std::max(std::fabs(ranges[i].min), std::fabs(ranges[i].max))};
  };
  std::vector<std::vector<int64_t>> histograms(tensors.size(), std::vector<int64_t>(kBins, 0));
  std::vector<int64_t> totals(tensors.size(), 0);
  ForEachBatch(session, tensors, batches, [&](size_t i, const float* v, int64_t n) {
    const TensorRange h = histogram_range(i);
    const double width = (static_cast<double>(h.max) - h.min) / kBins;
    for (int64_t j = 0; j < n; ++j) {
      const double x = entropy ? std::fabs(v[j]) : v[j];
      const int b = width > 0 ? static_cast<int>((x - h.min) / width) : 0;
      ++histograms[i][std::clamp(b, 0, kBins - 1)];
    }
    totals[i] += n;
  });
  std::vector<TensorRange> cut(ranges.size());
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].max <= ranges[i].min) {
      cut[i] = ranges[i];
      continue;
    }
    if (entropy) {
      // 256 codes over [0, t] when nothing is negative, else 128 a side.
      const int levels = ranges[i].min >= 0 ? 255 : 128;
      const auto t = static_cast<float>(
          EntropyThreshold(histograms[i], static_cast<double>(histogram_range(i).max) / kBins, levels));
      cut[i] = {std::max(ranges[i].min, -t), std::min(ranges[i].max, t)};
      continue;
    }
    const double tail = (100 - percentile) / 100;
    cut[i] = {Quantile(histograms[i], totals[i], tail, ranges[i]),
              Quantile(histograms[i], totals[i], 1 - tail, ranges[i])};
  }
  return cut;
}

}  // namespace dflow::models
