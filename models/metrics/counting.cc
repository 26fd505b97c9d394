// Counting metrics; see counting.h.
#include "models/metrics/counting.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "graph/status.h"

namespace dflow::models {
namespace {

struct Accumulator {
  int64_t n = 0, relative_n = 0;
  double abs = 0, squared = 0, relative = 0;
  void Add(double predicted, double truth) {
    double error = predicted - truth;
    ++n;
    abs += std::abs(error);
    squared += error * error;
    if (truth != 0) relative += std::abs(error) / std::abs(truth), ++relative_n;
  }
  CountErrors Result() const {
    CountErrors e{n, 0, 0, 0, relative_n};
    if (n > 0) e.mae = abs / n, e.rmse = std::sqrt(squared / n);
    if (relative_n > 0) e.mre = relative / relative_n;
    return e;
  }
};

double ParseCount(const std::string& text, const std::string& spec) {
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 0)
    Fail(Code::kInvalidArgument, "count bins '", spec, "': '", text, "' is not a count");
  return value;
}

}  // namespace

std::vector<CountBin> DefaultCountBins() { return ParseCountBins("0,1,2,3,4,5-7,8+"); }

std::vector<CountBin> ParseCountBins(const std::string& spec) {
  std::vector<CountBin> bins;
  std::stringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) {
    CountBin bin{item};
    if (!item.empty() && item.back() == '+') {
      bin.lo = ParseCount(item.substr(0, item.size() - 1), spec);
    } else if (size_t dash = item.find('-'); dash != std::string::npos && dash > 0) {
      bin.lo = ParseCount(item.substr(0, dash), spec);
      bin.hi = ParseCount(item.substr(dash + 1), spec);
      if (bin.hi < bin.lo) Fail(Code::kInvalidArgument, "count bins '", spec, "': '", item, "' is empty");
    } else {
      bin.lo = bin.hi = ParseCount(item, spec);
    }
    if (!bins.empty() && (bins.back().hi < 0 || bin.lo <= bins.back().hi))
      Fail(Code::kInvalidArgument, "count bins '", spec, "': '", item,
           "' overlaps or comes before the bin before it");
    bins.push_back(bin);
  }
  if (bins.empty()) Fail(Code::kInvalidArgument, "count bins '", spec, "': no bins");
  return bins;
}

CountReport EvaluateCounts(const std::vector<double>& predicted, const std::vector<double>& truth,
                           const std::vector<CountBin>& bins) {
  DFLOW_REQUIRE(predicted.size() == truth.size(), "EvaluateCounts: ", predicted.size(),
                " predictions for ", truth.size(), " true counts");
  Accumulator all;
  std::vector<Accumulator> per_bin(bins.size());
  for (size_t i = 0; i < truth.size(); ++i) {
    all.Add(predicted[i], truth[i]);
    for (size_t b = 0; b < bins.size(); ++b)
      if (bins[b].Contains(truth[i])) per_bin[b].Add(predicted[i], truth[i]);
  }
  CountReport report{all.Result(), bins, {}};
  for (const Accumulator& a : per_bin) report.per_bin.push_back(a.Result());
  return report;
}

std::string FormatCountReport(const CountReport& report) {
  std::string out = "  bin      images      MAE     RMSE      MRE\n";
  auto row = [&](const std::string& label, const CountErrors& e) {
    char line[128];
    if (e.images == 0) {  // no errors to speak of, rather than errors of 0
      std::snprintf(line, sizeof line, "  %-8s %6d        -        -        -\n", label.c_str(), 0);
      out += line;
      return;
    }
    std::snprintf(line, sizeof line, "  %-8s %6lld %8.3f %8.3f ", label.c_str(),
                  static_cast<long long>(e.images), e.mae, e.rmse);
    out += line;
    out += e.mre_images > 0 ? (std::snprintf(line, sizeof line, "%8.3f\n", e.mre), line) : "       -\n";
  };
  for (size_t b = 0; b < report.bins.size(); ++b) row(report.bins[b].label, report.per_bin[b]);
  row("all", report.overall);
  return out;
}

}  // namespace dflow::models
