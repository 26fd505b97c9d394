// Traces of remote steps: a worker task sends back the NodeExecStats of its
// partitions in its RunStep reply, as JSON, and the client folds every
// task's stats into the RunMetadata of Session::Run (`RunOptions.trace`).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "graph/run_metadata.h"

namespace dflow::dist {

// {"peak_bytes": N, "start_clock_ns": T, "step_stats": [{"node", "op",
// "device", "start_ns", "end_ns", "thread", "outputs", "output_bytes",
// "transfer"}, ...]}; T is the task's steady clock at its step's start.
nlohmann::json StepStatsToJson(const RunMetadata& metadata);

// Appends the stats of one task's reply to `metadata` (peak_bytes: the
// largest). Every field is checked; a malformed document is kInvalidArgument
// naming `task` and the field, and leaves `metadata` as it was. Returns the
// task's start_clock_ns (0 when the document has none).
int64_t AppendStepStats(const std::string& reply_text, const std::string& task, RunMetadata& metadata);

}  // namespace dflow::dist
