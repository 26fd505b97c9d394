// Reading a run's RUN/metrics.jsonl (progress.h writes it): one JSON object
// per step. A resumed run appends after its checkpoint's step, so a step
// may appear twice: the later line wins. Lines cut short are skipped.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace dflow::apps {

// By step; empty when the file is missing or holds no step.
std::map<int64_t, nlohmann::json> ReadRunMetrics(const std::string& run_dir);

}  // namespace dflow::apps
