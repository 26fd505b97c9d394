// Real `dflow server` processes for the distributed tests: free loopback
// ports, a cluster file, starting a task and waiting until it answers,
// signals, and a kill on destruction so no test leaves a server behind. The
// dflow executable comes from $DFLOW_EXE (tests/meson.build sets it).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tests/dist/child_process.h"

namespace dflow::testing {

// A TCP port on 127.0.0.1 that nothing listens on right now, below the
// ephemeral range; FreeLoopbackPorts: the first of `count` consecutive ones
// (`dflow launch --base-port` gives its tasks consecutive ports).
int FreeLoopbackPort();
int FreeLoopbackPorts(int count);

// A scratch directory with a cluster file of one "worker" job on `ports`.
class ScratchCluster {
 public:
  explicit ScratchCluster(int num_workers);
  ~ScratchCluster();
  const std::string& file() const { return file_; }
  const std::string& dir() const { return dir_; }
  std::string address(int task) const;
  std::string target(int task) const { return "zmq://" + address(task); }
  std::string device(int task) const;  // "/job:worker/replica:0/task:N/device:CPU:0"

 private:
  std::string dir_, file_;
  std::vector<int> ports_;
};

class ServerProcess {
 public:
  // Starts worker task `task` of `cluster` (one thread per device) and waits
  // up to 20 s until it answers GetStatus; its output goes to DIR/task-N.log.
  // The server is killed when the starting thread exits (PR_SET_PDEATHSIG),
  // so start it from a thread that outlives it: the test's own.
  // It is killed (SIGKILL, then reaped) on destruction.
  ServerProcess(const ScratchCluster& cluster, int task);

  pid_t pid() const { return child_.pid(); }
  void Signal(int signal) const;
  // Waits up to `seconds` for the process to exit; true when it did.
  bool WaitForExit(double seconds);

 private:
  ChildProcess child_;
};

}  // namespace dflow::testing
