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

  std::vector<std::vector<int64_t>> histograms(tensors.size(), std::vector<int64_t>(kBins, 0));
  std::vector<int64_t> totals(tensors.size(), 0);
  ForEachBatch(session, tensors, batches, [&](size_t i, const float* v, int64_t n) {
    const double width = (static_cast<double>(ranges[i].max) - ranges[i].min) / kBins;
    for (int64_t j = 0; j < n; ++j) {
      const int b = width > 0 ? static_cast<int>((v[j] - ranges[i].min) / width) : 0;
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
    const double tail = (100 - percentile) / 100;
    cut[i] = {Quantile(histograms[i], totals[i], tail, ranges[i]),
              Quantile(histograms[i], totals[i], 1 - tail, ranges[i])};
  }
  return cut;
}

}  // namespace dflow::models
