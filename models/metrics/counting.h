// Counting metrics (the flower-counting thesis, ch. 5): mean absolute error, root mean
// squared error and mean relative error of predicted counts, overall and
// per bin of the true count. MRE leaves out images whose true count is 0
// (the relative error is undefined there), as the seed does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dflow::models {

// The true counts in [lo, hi] (inclusive; hi < 0: no upper end).
struct CountBin {
  std::string label;
  double lo = 0, hi = -1;
  bool Contains(double count) const { return count >= lo && (hi < 0 || count <= hi); }
};

// The seed's model-m bins: 0, 1, 2, 3, 4, 5-7, >=8.
std::vector<CountBin> DefaultCountBins();
// Parses "0,1,2,3,4,5-7,8+" (single counts, ranges a-b, and a last "n+").
std::vector<CountBin> ParseCountBins(const std::string& spec);

struct CountErrors {
  int64_t images = 0;
  double mae = 0, rmse = 0;
  double mre = 0;              // over the `mre_images` with a non-zero true count
  int64_t mre_images = 0;
};

struct CountReport {
  CountErrors overall;
  std::vector<CountBin> bins;
  std::vector<CountErrors> per_bin;  // one per bin; images outside every bin count only overall
};

// predicted[i] and truth[i] belong to image i; throws if the sizes differ.
CountReport EvaluateCounts(const std::vector<double>& predicted, const std::vector<double>& truth,
                           const std::vector<CountBin>& bins = DefaultCountBins());

// The report as a text table (one row per bin, then "all").
std::string FormatCountReport(const CountReport& report);

}  // namespace dflow::models
