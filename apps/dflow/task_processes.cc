#include "apps/dflow/task_processes.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "graph/status.h"

namespace dflow::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The launcher's SIGINT/SIGTERM handler only records the signal.
volatile sig_atomic_t g_received_signal = 0;
volatile sig_atomic_t g_signals = 0;  // how many arrived
void RecordSignal(int signal) {
  g_received_signal = signal;
  g_signals = g_signals + 1;
}

struct RunningTask {
  TaskLaunch launch;
  pid_t pid = -1;  // also its process group
  int output = -1;  // read end of its stdout+stderr pipe; -1 once closed
  std::string partial_line;
  bool exited = false;
  int status = 0;
};

// In the child: its own group, output to the pipe, environment, exec.
[[noreturn]] void ExecTask(const TaskLaunch& task, const std::vector<std::string>& command,
                           int out) {
  setpgid(0, 0);
  dup2(out, STDOUT_FILENO);
  dup2(out, STDERR_FILENO);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  for (const auto& [name, value] : task.environment) setenv(name.c_str(), value.c_str(), 1);
  // Output on a pipe is block-buffered by default; dflow's programs
  // line-buffer theirs, and Python workers do so with this.
  setenv("PYTHONUNBUFFERED", "1", 0);
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "dflow launch: cannot run '%s': %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

void Start(RunningTask& task, const std::vector<std::string>& command) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) Fail(Code::kUnavailable, "launch: pipe: ", std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) Fail(Code::kUnavailable, "launch: fork: ", std::strerror(errno));
  if (pid == 0) ExecTask(task.launch, command, fds[1]);
  setpgid(pid, pid);  // also here, so a signal sent right away reaches the group
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  task.pid = pid;
  task.output = fds[0];
}

// Prints every complete line read so far, prefixed with the task.
void RelayOutput(RunningTask& task) {
  char buffer[4096];
  for (;;) {
    ssize_t n = read(task.output, buffer, sizeof(buffer));
    if (n > 0) {
      task.partial_line.append(buffer, static_cast<size_t>(n));
      size_t newline;
      while ((newline = task.partial_line.find('\n')) != std::string::npos) {
        std::cout << "[" << task.launch.label << "] " << task.partial_line.substr(0, newline + 1);
        task.partial_line.erase(0, newline + 1);
      }
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) {  // end of output
      if (!task.partial_line.empty())
        std::cout << "[" << task.launch.label << "] " << task.partial_line << "\n";
      task.partial_line.clear();
      close(task.output);
      task.output = -1;
    }
    break;
  }
  std::cout.flush();
}

std::string DescribeExit(const RunningTask& task) {
  if (WIFSIGNALED(task.status)) {
    int sig = WTERMSIG(task.status);
    return StrCat("task ", task.launch.label, " (pid ", task.pid, ") was killed by signal ", sig,
                  " (", strsignal(sig), ")");
  }
  return StrCat("task ", task.launch.label, " (pid ", task.pid, ") exited with status ",
                WEXITSTATUS(task.status));
}

bool Failed(const RunningTask& task) {
  return WIFSIGNALED(task.status) || WEXITSTATUS(task.status) != 0;
}

// Supervision state: which tasks run, and whether we are stopping them.
class Supervisor {
 public:
  Supervisor(std::vector<RunningTask> tasks, const std::vector<std::string>& command, LaunchTimes times,
             LaunchPolicy policy)
      : tasks_(std::move(tasks)), command_(command), times_(times), policy_(std::move(policy)) {}

  LaunchOutcome Run() {
    while (!AllDone()) {
      WaitForOutput();
      for (RunningTask& task : tasks_)
        if (task.output >= 0) RelayOutput(task);
      if (g_received_signal && !outcome_.interrupted_by) {
        // Forwarded: a training task finishes its step and saves a
        // checkpoint, which may take long; a second signal means now.
        outcome_.interrupted_by = g_received_signal;
        outcome_.ok = false;
        SignalAll(g_received_signal);
        stop_deadline_ = Clock::now() + times_.interrupt_wait;
        first_signal_at_ = Clock::now();
      }
      // Copies of the first signal (GNU timeout sends its signal to the
      // child and to its whole group) arrive together: only a signal a
      // second or more later is a second one.
      if (g_signals > 1 && Clock::now() - first_signal_at_ < std::chrono::seconds(1)) g_signals = 1;
      if (g_signals > 1 && !killed_on_second_signal_) {
        killed_on_second_signal_ = true;
        std::cerr << "dflow launch: a second signal: killing every task\n";
        SignalAll(SIGKILL);
      }
      Reap();
      if (failure_wait_deadline_ && Clock::now() >= *failure_wait_deadline_)
        Stop(StrCat("they did not exit within ", times_.failure_wait.count(), " ms of it"));
      if (stop_deadline_ && Clock::now() >= *stop_deadline_) SignalAll(SIGKILL);
    }
    for (RunningTask& task : tasks_) kill(-task.pid, SIGKILL);  // leftovers of exited tasks
    if (policy_.elastic && outcome_.ok && !worker_finished_) {
      outcome_.ok = false;
      outcome_.failure = StrCat("no worker finished; the last: ", last_worker_failure_);
    }
    return outcome_;
  }

 private:
  bool AllDone() const {
    for (const RunningTask& task : tasks_)
      if (!task.exited || task.output >= 0) return false;
    return true;
  }

  void WaitForOutput() {
    std::vector<pollfd> fds;
    for (const RunningTask& task : tasks_)
      if (task.output >= 0) fds.push_back({task.output, POLLIN, 0});
    poll(fds.data(), fds.size(), 100);  // also wakes for exits and signals
  }

  void SignalAll(int signal) {
    for (RunningTask& task : tasks_)
      if (!task.exited) kill(-task.pid, signal);
  }

  void Stop(std::string why) {
    if (stop_deadline_) return;
    std::cerr << "dflow launch: " << why << "; stopping the other tasks\n";
    SignalAll(SIGTERM);
    stop_deadline_ = Clock::now() + times_.grace;
  }

  // The first failure: the others get failure_wait to notice and exit.
  void StopAfterWait(const std::string& failure) {
    if (times_.failure_wait.count() == 0) return Stop(failure);
    std::cerr << "dflow launch: " << failure << "; waiting up to " << times_.failure_wait.count()
              << " ms for the other tasks to exit\n";
    failure_wait_deadline_ = Clock::now() + times_.failure_wait;
  }

  bool Restartable(const RunningTask& task) const {
    return task.launch.is_worker && Failed(task) && restarts_ < policy_.max_restarts && !stop_deadline_ &&
           !failure_wait_deadline_ && !outcome_.interrupted_by;
  }

  // Relays what the dead process still had to say, then starts it again.
  void Restart(RunningTask& task) {
    ++restarts_;
    std::cerr << "dflow launch: " << DescribeExit(task) << "; starting it again (restart " << restarts_ << " of "
              << policy_.max_restarts << ")\n";
    if (policy_.on_worker_lost) policy_.on_worker_lost(task.launch.label);
    kill(-task.pid, SIGKILL);  // anything it started
    for (int i = 0; i < 100 && task.output >= 0; ++i) {
      pollfd fd{task.output, POLLIN, 0};
      poll(&fd, 1, 10);
      RelayOutput(task);
    }
    if (task.output >= 0) close(task.output);
    task.output = -1;
    task.partial_line.clear();
    task.exited = false;
    task.status = 0;
    Start(task, command_);
  }

  void Reap() {
    for (RunningTask& task : tasks_) {
      if (task.exited || waitpid(task.pid, &task.status, WNOHANG) != task.pid) continue;
      task.exited = true;
      if (Restartable(task)) {
        Restart(task);
        continue;
      }
      if (policy_.elastic && task.launch.is_worker) {
        if (Failed(task)) {
          last_worker_failure_ = DescribeExit(task);
          if (!stop_deadline_) std::cerr << "dflow launch: " << last_worker_failure_ << "; the elastic job goes on\n";
          if (policy_.on_worker_lost) policy_.on_worker_lost(task.launch.label);
        } else {
          worker_finished_ = true;
        }
      }
      // A task that exits after the first failure or after we stopped it
      // is not a new failure (nor, in an elastic job, a worker's).
      const bool tolerated = policy_.elastic && task.launch.is_worker;
      if (Failed(task) && !tolerated && !stop_deadline_ && !failure_wait_deadline_) {
        outcome_.ok = false;
        outcome_.failure = DescribeExit(task);
        StopAfterWait(outcome_.failure);
      } else if (failure_wait_deadline_ && !stop_deadline_) {
        std::cerr << "dflow launch: then " << DescribeExit(task) << "\n";
      }
      // Exited tasks close their pipe, unless something they started holds it.
      if (task.output >= 0) kill(-task.pid, SIGKILL);
    }
    bool workers_done = true;
    for (const RunningTask& task : tasks_) workers_done &= !task.launch.is_worker || task.exited;
    if (workers_done && !stop_deadline_) {
      bool others_running = false;
      for (const RunningTask& task : tasks_) others_running |= !task.exited;
      if (others_running) {
        SignalAll(SIGTERM);  // parameter servers serve until the workers are done
        stop_deadline_ = Clock::now() + times_.grace;
      }
    }
  }

  std::vector<RunningTask> tasks_;
  const std::vector<std::string>& command_;
  LaunchTimes times_;
  LaunchPolicy policy_;
  int restarts_ = 0;
  bool worker_finished_ = false;      // elastic: a worker exited 0
  std::string last_worker_failure_;   // elastic: how the last failed worker ended
  std::optional<Clock::time_point> failure_wait_deadline_;  // set by the first failure
  std::optional<Clock::time_point> stop_deadline_;           // set when SIGTERM went out
  bool killed_on_second_signal_ = false;
  Clock::time_point first_signal_at_;
  LaunchOutcome outcome_;
};

}  // namespace

LaunchOutcome RunTasks(const std::vector<TaskLaunch>& tasks,
                       const std::vector<std::string>& command, LaunchTimes times, LaunchPolicy policy) {
  DFLOW_REQUIRE(!command.empty(), "launch: no program to run (give it after --)");
  g_received_signal = 0;
  g_signals = 0;
  struct sigaction action {};
  action.sa_handler = RecordSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::vector<RunningTask> running(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    running[i].launch = tasks[i];
    Start(running[i], command);
  }
  return Supervisor(std::move(running), command, times, std::move(policy)).Run();
}

}  // namespace dflow::cli
