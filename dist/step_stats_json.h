// Traces of remote steps: a worker task sends back the NodeExecStats of its
// partitions in its RunStep reply, as JSON, and the client folds every
// task's stats into the RunMetadata of Session::Run (`RunOptions.trace`).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "graph/run_metadata.h"

namespace dflow::dist {

// {"peak_bytes": N, "step_stats": [{"node", "op", "device", "start_ns",
// "end_ns", "thread", "outputs", "output_bytes"}, ...]}
nlohmann::json StepStatsToJson(const RunMetadata& metadata);

// Appends the stats of one task's reply to `metadata` (peak_bytes: the
// largest). Every field is checked; a malformed document is kInvalidArgument
// naming `task` and the field, and leaves `metadata` as it was.
void AppendStepStats(const std::string& reply_text, const std::string& task, RunMetadata& metadata);

}  // namespace dflow::dist
