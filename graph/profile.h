// Measured profiles for the placer's cost model: each node's compute time
// from traced steps (RunMetadata, or the Chrome trace that `dflow run
// --trace` and `dflow profile --trace` write), keyed by node name, with the
// type of device it ran on. CostModelOptions::measured takes the result.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/cost_model.h"
#include "graph/run_metadata.h"

namespace dflow {

using MeasuredProfile = std::map<std::string, MeasuredTime>;

// Each node's mean duration over the steps it appears in (one step, or
// several folded by MeanOfSteps). Nodes without a device are skipped.
MeasuredProfile ProfileFromRunMetadata(const RunMetadata& metadata);

// Reads a Chrome trace written by WriteChromeTrace: every complete ("X")
// event is a node run (name, dur in microseconds), its process names the
// device. Throws kNotFound for a missing file and kInvalidArgument naming
// the file and what is wrong (not JSON, no traceEvents, no node events).
MeasuredProfile LoadProfile(const std::string& path);

}  // namespace dflow
