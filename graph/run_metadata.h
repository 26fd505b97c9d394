// What a step can report about itself: per-node timings and output sizes
// (when RunOptions::trace is set) and the peak memory of the step; and, while
// it runs, each fetch as soon as it is produced (RunOptions::on_fetch_ready).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dflow {

class Tensor;

struct RunOptions {
  bool trace = false;  // record per-node start/end times and outputs
  // Called once per fetch, with its index in the fetch list and the very
  // tensor Run will return for it, as soon as the step has produced it:
  // before Run returns and usually before the rest of the step has run (data
  // parallelism starts reducing a gradient while backprop goes on). It runs
  // on an executor thread, possibly on several at once for different
  // fetches, so it must be thread-safe and return quickly. An exception it
  // throws fails the step like a kernel's error. Not called for fetches of a
  // step that failed before producing them. A remote session calls it for
  // every fetch when the results arrive.
  std::function<void(size_t fetch_index, const Tensor& value)> on_fetch_ready{};
};

struct NodeExecStats {
  std::string node;
  std::string op;
  std::string device;
  int64_t start_ns = 0;  // since the step started
  int64_t end_ns = 0;
  int thread = 0;        // small integer per OS thread
  std::vector<std::string> outputs;  // "float32[2,3]" per output
  int64_t output_bytes = 0;
  // _Send and _Recv: the edge they carry, "send_device;recv_device;tensor",
  // the same at both ends (a trace draws an arrow from one to the other).
  std::string transfer;
};

struct RunMetadata {
  std::vector<NodeExecStats> step_stats;  // in completion order
  int64_t peak_bytes = 0;                 // allocator peak during the step
  int64_t step_ns = 0;                    // wall time of the whole step
  // The moment the stats' times count from, on this process's steady clock
  // (ns since its epoch): partitions that started at different moments, or
  // ran in other processes, are laid on one timeline by it.
  int64_t start_clock_ns = 0;
};

// Now on the steady clock, in ns since its epoch (RunMetadata::start_clock_ns).
int64_t SteadyClockNs();

// Writes the step as Chrome trace-event JSON (chrome://tracing, Perfetto):
// one process track per task (job/replica/task of the device), one thread
// track per device and executor thread, and a flow arrow from every _Send
// to its _Recv.
void WriteChromeTrace(const RunMetadata& metadata, const std::string& path);
// Several traced steps of the same executor folded into one: each node's
// duration is its mean over the steps (laid out from start 0), step_ns is the
// median step time and peak_bytes the largest peak. For profiles that do not
// hang on one noisy step. Nodes are matched by name.
RunMetadata MeanOfSteps(const std::vector<RunMetadata>& steps);

// A short table: the nodes that took longest, total time per op, peak memory.
std::string TraceSummary(const RunMetadata& metadata, int top = 10);

}  // namespace dflow
