#include "apps/common/run_metrics.h"

#include <fstream>

namespace dflow::apps {

std::map<int64_t, nlohmann::json> ReadRunMetrics(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::map<int64_t, nlohmann::json> steps;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json entry = nlohmann::json::parse(line, nullptr, false);
    if (entry.is_object() && entry.contains("step") && entry["step"].is_number_integer())
      steps[entry["step"].get<int64_t>()] = entry;
  }
  return steps;
}

}  // namespace dflow::apps
