// How the job service runs a job: it builds the app's `train` command and
// hands it to a launch back-end, which starts the workers through a launcher
// they already understand (docs/jobs.md):
//   local   `dflow-APP train --workers N` on this machine (which becomes `dflow launch`)
//   mpirun  Open MPI over the job's nodes, the ranks meeting at the first node
//   slurm   `srun` in the current allocation (when Slurm is installed)
// The launching process leads a session of its own; its output (every
// task's) goes to RUN/log.txt. A watcher thread per job records how it
// ended: succeeded, failed with the reason (the log's last error line), or
// stopped. A job with an evaluation dataset is then evaluated by the app's
// `eval` (its metrics kept in RUN/eval.json) before it counts as succeeded.
// Stop sends SIGINT (the apps finish their step, save a checkpoint and
// exit), then, after the grace period, SIGKILL to every process of the
// session.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "apps/jobs/store.h"

namespace dflow::jobs {

struct RunnerOptions {
  std::string bin_dir;        // where dflow-count and dflow-detect are
  int first_port = 21000;     // each job's workers get 32 ports from here on
  // Longer than `dflow launch`'s own wait after a forwarded SIGINT (60 s):
  // a step of a big model must finish and its checkpoint be saved.
  std::chrono::milliseconds stop_grace{75000};
};

class Runner {
 public:
  Runner(Store& store, RunnerOptions options);
  // Stops every job still running (they are recorded as stopped).
  ~Runner();

  // Starts a queued job (resume: continues its run directory from its last
  // snapshot). Throws kInvalidArgument for a back-end that cannot start it
  // (no srun, no mpirun) and records the job as failed with the reason.
  void Start(int64_t job_id, bool resume);
  // Asks a running job to stop; returns at once (the watcher records it).
  void Stop(int64_t job_id);
  bool IsRunning(int64_t job_id);

  // The command a job runs (for the API's job detail, and tests).
  std::vector<std::string> Command(const Job& job, const Dataset& dataset, bool resume) const;

 private:
  struct Exit {
    int status = 0;       // waitpid's
    bool killed = false;  // after a stop's grace period
  };
  void Launch(int64_t job_id, bool resume);
  pid_t Spawn(int64_t job_id, const std::vector<std::string>& command,
              const std::vector<std::pair<std::string, std::string>>& environment, const std::string& out,
              const std::string& log);
  Exit WaitFor(int64_t job_id, pid_t pid);
  std::string Evaluate(int64_t job_id, const Job& job, const std::string& log);
  void Watch(int64_t job_id, pid_t pid, std::string log);
  std::string Reason(const std::string& log, int wait_status) const;

  Store& store_;
  RunnerOptions options_;
  std::mutex mu_;
  std::map<int64_t, pid_t> running_;  // job -> launching process (its session id)
  std::set<int64_t> stopping_;
  std::vector<std::thread> watchers_;
  bool shutting_down_ = false;
};

// Sends `signal` to every process of session `sid`, found through /proc.
void SignalSession(pid_t sid, int signal);

}  // namespace dflow::jobs
