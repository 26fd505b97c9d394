// The one step runner. Every Session::Run, local or on a cluster, and every
// step a worker task runs for its clients goes through StartStep: it starts
// every partition of the step at once with the step's id and rendezvous, lets
// the first error abort the rendezvous (which fails every Recv still waiting,
// so each partition finishes), and merges the partitions' traces.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "graph/cluster.h"

namespace dflow {

using StepDone = std::function<void(std::optional<Error> error)>;

// Starts every partition of `step` and returns; calls `done` once, when all
// have finished, with the step's first error: the rendezvous's abort error
// (the origin, maybe in another partition or process) before a partition's
// own. When `metadata` is given it then holds every partition's node stats,
// the largest peak and the step's wall time. `step`'s pointers, the
// partitions and `metadata` must outlive the call of `done`. With
// `caller_joins` the calling thread may run some of the last partition's
// work before returning.
void StartStep(const std::vector<PartitionRunner*>& partitions, const ExecutorStep& step,
               const RunOptions& options, RunMetadata* metadata, StepDone done,
               bool caller_joins = false);

// StartStep, waiting for the end of the step (the calling thread joins in);
// throws the step's first error.
void RunStep(const std::vector<PartitionRunner*>& partitions, const ExecutorStep& step,
             const RunOptions& options, RunMetadata* metadata);

}  // namespace dflow
