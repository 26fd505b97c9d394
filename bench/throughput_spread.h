// The spread of per-step throughput, as the flower-counting thesis's Table 5.2 reports it for
// parameter servers and ring all-reduce: each step's images/s, then their
// mean and standard deviation.
#pragma once

#include <cmath>
#include <vector>

namespace dflow::bench {

struct ThroughputSpread {
  double mean = 0, deviation = 0;  // images/s
};

inline ThroughputSpread SpreadOf(const std::vector<double>& step_seconds, double images_per_step) {
  ThroughputSpread spread;
  const double steps = static_cast<double>(step_seconds.size());
  for (double seconds : step_seconds) spread.mean += images_per_step / seconds / steps;
  double variance = 0;
  for (double seconds : step_seconds) variance += std::pow(images_per_step / seconds - spread.mean, 2) / steps;
  spread.deviation = std::sqrt(variance);
  return spread;
}

}  // namespace dflow::bench
