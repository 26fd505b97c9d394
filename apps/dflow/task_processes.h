// The processes `dflow launch` runs: one per task, each in its own process
// group with its stdout and stderr on one pipe. The supervisor prefixes every
// line with the task ("[worker:1] ..."), forwards SIGINT/SIGTERM (and kills
// every task after `interrupt_wait`, or at a second signal), and when a
// task fails (non-zero exit or a signal) or all workers are done, stops the
// rest: SIGTERM to each group, SIGKILL after the grace period. After a
// failure it first waits up to `failure_wait` for the others to exit by
// themselves, so that each can notice the dead peer (the transport's
// heartbeat) and say which task died before it exits.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dflow::cli {

struct TaskLaunch {
  std::string label;  // "worker:0", "ps:1"
  bool is_worker = true;
  std::map<std::string, std::string> environment;  // set on top of ours
};

struct LaunchTimes {
  std::chrono::milliseconds grace{3000};          // SIGTERM .. SIGKILL
  std::chrono::milliseconds failure_wait{10000};  // a failure .. SIGTERM to the others
  // A SIGINT/SIGTERM forwarded to the tasks .. SIGKILL (a second signal: at once).
  std::chrono::milliseconds interrupt_wait{60000};
};

// With `elastic`, a worker that fails is reported and the others go on
// (elastic training regroups without it); the job succeeds when a worker
// finishes. A worker that fails is started again, up to `max_restarts`
// times in all (torchrun's --max-restarts), when the job can take it back:
// parameter servers, or an elastic ring.
struct LaunchPolicy {
  bool elastic = false;
  int max_restarts = 0;
  // Elastic: told the label of each worker that failed, as soon as it exits.
  std::function<void(const std::string& label)> on_worker_lost{};
};

struct LaunchOutcome {
  bool ok = true;              // every worker exited 0 and nothing failed
  // "task worker:1 (pid 42) exited with status 3", "... was killed by signal 9 (Killed)"
  std::string failure;
  int interrupted_by = 0;      // SIGINT/SIGTERM received by the launcher, else 0
};

// Runs `program args` once per task and supervises them until all exit.
LaunchOutcome RunTasks(const std::vector<TaskLaunch>& tasks,
                       const std::vector<std::string>& command, LaunchTimes times, LaunchPolicy policy = {});

}  // namespace dflow::cli
