// Model parallelism together with data parallelism in the apps:
// `train --split backbone,extras,heads [--workers N]` puts each group of a
// detector's parts on a task of its own. `dflow launch --model-parts G`
// starts, beside the N workers, G tasks of job "part" per worker: worker i's
// group g is /job:part/task:(i*G + g). A worker is then the client of its
// parts: it reads and matches its batches, its session's graph spans its
// part tasks (placement and partitioning add the Send/Recv pairs, exactly as
// for any graph over a cluster), and the workers average their gradients
// over the ring as without --split. A part task only serves its partitions,
// until its worker says stop.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/common/data_parallel_settings.h"
#include "dist/cluster.h"
#include "dist/runtime/serve_task.h"
#include "graph/session.h"
#include "models/model_parts.h"

namespace dflow::apps {

inline constexpr const char* kModelPartJob = "part";

// --split PARTS: groups of parts, comma-separated, each a part or parts
// joined by '+' ("backbone,extras+heads": two tasks per worker).
void AddModelSplitOption(CLI::App& app, DataParallelSettings& settings);

// The groups of --split; each of backbone, extras and heads in exactly one.
// Throws kInvalidArgument naming an unknown, repeated or missing part.
std::vector<std::vector<std::string>> ParseModelSplit(const std::string& split);

// Checks --split, when given: its parts, and no parameter servers with it
// (they hold every variable, so no part could have a task of its own).
void CheckModelSplit(const DataParallelSettings& settings);

// A worker's side of a split run.
struct ModelSplit {
  dist::ClusterSpec cluster;
  models::ModelPartDevices devices;         // this worker's part tasks, by part
  std::vector<dist::ServedTask> tasks;      // this worker's part tasks, group by group
  SessionOptions session;                   // runs on those tasks alone
};

// This worker's split under DFLOW_CLUSTER; nullopt without --split. Throws
// what CheckModelSplit does, and when the cluster has not G part tasks per
// worker or `device` is not the CPU.
std::optional<ModelSplit> WorkerModelSplit(const DataParallelSettings& settings, const std::string& device,
                                           int threads);

// True when DFLOW_CLUSTER names this process a task of job "part".
bool IsModelPartTask();
// A part task's life: serves its partitions with `threads` kernel threads
// until its worker stops it (or SIGINT/SIGTERM). Returns the exit code.
int ServeModelPart(int threads);
// The worker tells its part tasks that training finished (code 1) or
// failed (2). After a failure this is best effort: an error is printed.
void StopModelParts(const ModelSplit& split, int64_t code);

}  // namespace dflow::apps
