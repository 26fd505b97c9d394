// Data-parallel `train --workers N --strategy ring|ps` in the apps
// (dflow-count, dflow-detect): a run with N > 1 and no cluster re-executes
// itself through `dflow launch`; a process that a launcher's variables make a worker
// trains its own shard with the others.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/common/data_parallel_settings.h"
#include "dist/cluster.h"
#include "dist/training/data_parallel.h"
#include "dist/training/elastic.h"
#include "dist/training/ps_training.h"
#include "models/checkpoint.h"

namespace dflow::apps {

// --workers, --strategy, --ps, --ps-mode, --codec, --base-port, --elastic,
// --min-workers and --max-workers.
void AddDataParallelOptions(CLI::App& app, DataParallelSettings& settings);

// True when this process should start the workers instead of training:
// --workers > 1 or --split, and no launcher started it as a task.
bool ShouldLaunchWorkers(const DataParallelSettings& settings);
// True when a launcher's variables make this process a task of a cluster
// (DFLOW_CLUSTER, TF_CONFIG, torchrun's, Slurm's, MPI's:
// dist/cluster_environment.h), or DFLOW_ELASTIC a worker of an elastic job.
bool LaunchedAsTask();
// Replaces this process by `dflow launch -n N [--ps P] [--model-parts G]
// --strategy S -- THIS_PROGRAM ARGS...` (the dflow next to this executable, else on PATH); returns only
// on failure, by throwing. Checks the strategy first.
[[noreturn]] void LaunchWorkers(const DataParallelSettings& settings, int argc, char** argv);

// The cluster this worker belongs to, from the launcher's variables
// (ClusterSpec::FromEnvironment); nullopt for a
// single-process run. Throws when --workers disagrees with the cluster, the
// cluster does not name this process as a worker, or `device` (--device) is
// not the CPU (RequireCpuWhenDistributed).
std::optional<dist::ClusterSpec> TrainingCluster(const DataParallelSettings& settings, const std::string& device);
// True for a single-process run and for worker 0 of a cluster (the one that
// writes a run's files); false for the other workers and the ps tasks.
bool IsChiefProcess();
// This process's worker index and the number of workers: 0 and 1 without a cluster.
int WorkerIndex(const std::optional<dist::ClusterSpec>& cluster);
int NumWorkers(const std::optional<dist::ClusterSpec>& cluster);
// --strategy, else DFLOW_STRATEGY, else "ps" when the launcher's cluster
// has parameter servers, else "ring".
std::string StrategyName(const DataParallelSettings& settings);
// --ps-mode, else "sync".
std::string PsModeName(const DataParallelSettings& settings);
// Throws kInvalidArgument for an unknown strategy or ps mode,
// or --ps/--ps-mode with a strategy other than ps.
void CheckStrategy(const DataParallelSettings& settings);
// True under a cluster with strategy ps (the process is a ps task or a
// worker of one); then throws when `device` is not the CPU.
bool UsesParameterServers(const DataParallelSettings& settings, const std::string& device);
// A ps worker's TrainingCluster: also throws when --ps disagrees with the
// cluster's ps tasks.
void CheckPsWorker(const DataParallelSettings& settings, const std::string& device, const dist::PsTask& task);
// Throws when --device names a GPU for data-parallel training: workers read
// and write the variables they hold directly, written and tested for host
// memory only.
void RequireCpuWhenDistributed(const std::string& device);

// This process as a worker of an elastic job (DFLOW_ELASTIC is set), or
// nullopt. Throws when the strategy is not ring or `device` is not the CPU.
std::optional<dist::ElasticWorker> ElasticTrainingWorker(const DataParallelSettings& settings,
                                                         const std::string& device);
// The worker index and count an elastic worker prepares its run with
// before it joins (the launcher's index; a worker joining later is not the
// chief); the strategy's round decides after.
int ProvisionalWorkerIndex(const dist::ElasticWorker& worker);
// The elastic ring strategy for the gradients of `variables` (as
// MakeStrategy's): joins this worker's first round.
std::unique_ptr<dist::DataParallelStrategy> MakeElasticStrategy(const DataParallelSettings& settings,
                                                                const dist::ElasticWorker& worker,
                                                                const std::vector<Output>& variables);
// After a dist::MembershipChanged: joins the next round (`completed_step`
// steps done here), takes its rank 0's variables (again in a later round
// when a worker dies meanwhile) and returns the global step to go on from.
// Prints the change.
int64_t Regroup(dist::DataParallelStrategy& strategy, Session& session, const Saver& saver, const Output& global_step,
                int64_t completed_step, const std::string& why);

// The all-reduce strategy of `cluster` for the gradients of `variables`,
// which it takes in backprop order (last layer first: the first buckets
// fill first), as InBackpropOrder's step hands them over.
std::unique_ptr<dist::DataParallelStrategy> MakeStrategy(const DataParallelSettings& settings,
                                                         const dist::ClusterSpec& cluster,
                                                         const std::vector<Output>& variables);
// Every worker's variables (all that `saver` saves: optimizer slots,
// batch-norm statistics and the global step included) become the chief's,
// read and assigned through `session`, wherever it keeps them (this
// process, or model-part tasks). In an elastic job whose workers change
// meanwhile, the chief of the next round.
void SynchronizeVariables(Session& session, const Saver& saver, dist::DataParallelStrategy& strategy);

// `step` with its gradients and gradient feeds (given in the variables'
// order) reversed, to match MakeStrategy's specs.
dist::ReplicatedStep InBackpropOrder(dist::ReplicatedStep step);

}  // namespace dflow::apps
