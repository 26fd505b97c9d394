// A process that lends its task to other processes' sessions: it serves the
// partitions they register (a WorkerService on its cluster address) until a
// client sets its stop variable, or SIGINT/SIGTERM arrives (how `dflow
// launch` ends the tasks that are not workers once the workers are done).
// Parameter servers (dist/training/ps_training.h) and the model-part tasks
// of model parallelism are such tasks; the client that owns one sets its
// stop variable (a scalar int64 VariableV2 placed on the task) to 1 when
// training finished, to anything else after an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dist/cluster.h"

namespace dflow::dist {

struct ServeTaskOptions {
  std::string stop_variable;  // the resource name of the stop variable
  std::string role;           // "ps task", "model-part task": how its log lines start
  int num_threads = 0;        // the kernels' pool; 0: one per hardware thread
};

// Serves `task` of `cluster` on 127.0.0.1 at the port of its cluster
// address. Returns the process's exit code: 1 when a client stopped it
// after an error, else 0.
int ServeTaskUntilStopped(const ClusterSpec& cluster, const TaskId& task, const ServeTaskOptions& options);

struct ServedTask {
  TaskId task;
  std::string stop_variable;  // its ServeTaskOptions::stop_variable
};

// Sets every task's stop variable to `code` (1: finished; else: after an
// error) in one step of a session of its own, which contacts these tasks
// alone.
void StopServedTasks(const ClusterSpec& cluster, const std::vector<ServedTask>& tasks, int64_t code);

}  // namespace dflow::dist
