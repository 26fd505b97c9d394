// Any program as a child process of a test, with extra environment
// variables and its output in a log file; it dies with the test program
// (PR_SET_PDEATHSIG) and is killed on destruction, so nothing is left behind.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace dflow::testing {

class ChildProcess {
 public:
  // Starts argv[0] with `argv`, the test's environment plus `env`
  // ("NAME=value"), stdout and stderr appended to `log`.
  ChildProcess(std::vector<std::string> argv, std::vector<std::string> env, const std::string& log);
  ~ChildProcess();  // SIGKILL, then reaps it, unless it exited
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signal) const;
  // Waits up to `seconds`; the exit code (128 + N when killed by signal N),
  // or nullopt when it still runs.
  std::optional<int> WaitForExit(double seconds);

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

}  // namespace dflow::testing
