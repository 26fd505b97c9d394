// Balancing tiles over count bins; see pipeline.h.
#include <algorithm>

#include "models/data/pipeline.h"
#include "models/data/seeded_random.h"

namespace dflow::models {
namespace {

// groups[b] = the indices of the counts whose first containing bin is b.
std::vector<std::vector<int64_t>> GroupByBin(const std::vector<int64_t>& counts,
                                             const std::vector<CountBin>& bins) {
  std::vector<std::vector<int64_t>> groups(bins.size());
  for (size_t i = 0; i < counts.size(); ++i)
    for (size_t b = 0; b < bins.size(); ++b)
      if (bins[b].Contains(static_cast<double>(counts[i]))) {
        groups[b].push_back(static_cast<int64_t>(i));
        break;
      }
  return groups;
}

}  // namespace

std::vector<int64_t> BalancedSelection(const std::vector<int64_t>& counts,
                                       const std::vector<CountBin>& bins, uint64_t seed,
                                       int64_t epoch) {
  DFLOW_REQUIRE(!bins.empty(), "BalancedSelection: no count bins given");
  DFLOW_REQUIRE(epoch >= 0, "BalancedSelection: epoch must be >= 0, got ", epoch);
  std::vector<std::vector<int64_t>> groups = GroupByBin(counts, bins);
  size_t smallest = 0;
  for (const auto& group : groups)
    if (!group.empty() && (smallest == 0 || group.size() < smallest)) smallest = group.size();

  // A partial Fisher-Yates per bin draws `smallest` of its members without
  // replacement; they are then sorted so the result depends only on the draw.
  SeededRandom random(SeededRandom::Combine({seed, static_cast<uint64_t>(epoch), 0xBA1A}));
  std::vector<int64_t> selected;
  for (auto& group : groups) {
    if (group.empty()) continue;
    for (size_t i = 0; i < smallest; ++i)
      std::swap(group[i], group[i + random.Below(group.size() - i)]);
    std::sort(group.begin(), group.begin() + static_cast<std::ptrdiff_t>(smallest));
    selected.insert(selected.end(), group.begin(), group.begin() + static_cast<std::ptrdiff_t>(smallest));
  }
  return selected;
}

}  // namespace dflow::models
