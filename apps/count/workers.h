// Data-parallel `dflow-count train --workers N --strategy ring|ps`: a run with
// N > 1 and no cluster re-executes itself through `dflow launch`; a process
// that DFLOW_CLUSTER makes a worker trains its own shard with the others.
#pragma once

#include <memory>
#include <optional>

#include "apps/count/run_config.h"
#include "dist/cluster.h"

namespace dflow::count_app {

// True when this process should start the workers instead of training:
// --workers > 1 and DFLOW_CLUSTER unset.
bool ShouldLaunchWorkers(const TrainSettings& settings);
// Replaces this process by `dflow launch -n N [--ps P] --strategy S --
// THIS_PROGRAM ARGS...` (the dflow next to this executable, else on PATH); returns only
// on failure, by throwing. Checks the strategy first.
[[noreturn]] void LaunchWorkers(const TrainSettings& settings, int argc, char** argv);

// The cluster this worker belongs to, from DFLOW_CLUSTER; nullopt for a
// single-process run. Throws when --workers disagrees with the cluster, or
// the cluster does not name this process as a worker.
std::optional<dist::ClusterSpec> TrainingCluster(const TrainSettings& settings);
// --strategy, else DFLOW_STRATEGY, else "ring".
std::string StrategyName(const TrainSettings& settings);
// --ps-mode, else "sync".
std::string PsModeName(const TrainSettings& settings);
// Throws kInvalidArgument for an unknown strategy or ps mode,
// or --ps/--ps-mode with a strategy other than ps.
void CheckStrategy(const TrainSettings& settings);

}  // namespace dflow::count_app
