#include "tests/dist/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "graph/status.h"

extern char** environ;

namespace dflow::testing {

// fork + exec (not posix_spawn) for PR_SET_PDEATHSIG; everything the child
// needs is built before fork, since only async-signal-safe calls may follow.
ChildProcess::ChildProcess(std::vector<std::string> argv, std::vector<std::string> env, const std::string& log) {
  size_t extras = env.size();
  for (char** e = environ; *e; ++e) {  // the test's own, unless an extra sets it
    std::string var = *e;
    bool replaced = false;
    for (size_t i = 0; i < extras; ++i)
      replaced |= var.substr(0, var.find('=') + 1) == env[i].substr(0, env[i].find('=') + 1);
    if (!replaced) env.push_back(var);
  }
  std::vector<char*> args, envp;
  for (std::string& arg : argv) args.push_back(arg.data());
  args.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) Fail(Code::kUnavailable, "cannot fork: ", strerror(errno));
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (exit_code_) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

void ChildProcess::Signal(int signal) const {
  if (!exit_code_) kill(pid_, signal);
}

std::optional<int> ChildProcess::WaitForExit(double seconds) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!exit_code_) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_)
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    else if (std::chrono::steady_clock::now() >= give_up) break;
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_code_;
}

}  // namespace dflow::testing
