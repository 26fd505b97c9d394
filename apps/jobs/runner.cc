#include "apps/jobs/runner.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "graph/status.h"

namespace dflow::jobs {
namespace {

namespace fs = std::filesystem;

// The launchers' variables of the service's own environment must not reach
// a job: its workers find their cluster from their own launcher.
constexpr const char* kLauncherVariables[] = {
    "DFLOW_CLUSTER", "TF_CONFIG", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
    "SLURM_PROCID", "SLURM_STEP_ID", "SLURM_STEPID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "DFLOW_STRATEGY",
    "DFLOW_COORDINATOR", "DFLOW_NUM_PS"};

// `program` itself when it holds a '/', else its path on PATH; "" when none.
std::string FindProgram(const std::string& program) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return dir + "/" + program;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

// The session of process `pid` (field 6 of /proc/PID/stat), or -1.
pid_t SessionOf(const std::string& pid) {
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t close = text.rfind(')');  // the command may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  char state = 0;
  long ppid = 0, pgrp = 0, session = -1;
  if (std::sscanf(text.c_str() + close + 1, " %c %ld %ld %ld", &state, &ppid, &pgrp, &session) != 4) return -1;
  return static_cast<pid_t>(session);
}

// The first of `count` consecutive ports that are free now, from a block
// of 32 chosen by the job's id onwards (a port that another job or program
// holds moves the job to the next block).
int FreePortBlock(int first_port, int64_t job_id, int count) {
  constexpr int kBlock = 32, kBlocks = 250;
  for (int tried = 0; tried < kBlocks; ++tried) {
    int base = first_port + static_cast<int>((job_id + tried) % kBlocks) * kBlock;
    bool free = true;
    for (int port = base; free && port < base + count; ++port) {
      int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(port));
      free = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
      if (fd >= 0) close(fd);
    }
    if (free) return base;
  }
  Fail(Code::kUnavailable, "no ", count, " free consecutive ports from ", first_port, " on");
}

// The environment a job starts with: ours, without any launcher's
// variables, with `extra` added.
std::vector<std::string> JobEnvironment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> out;
  for (char** entry = environ; *entry; ++entry) {
    std::string_view text(*entry);
    std::string_view name = text.substr(0, text.find('='));
    bool launcher = false;
    for (const char* variable : kLauncherVariables) launcher = launcher || name == variable;
    if (!launcher) out.emplace_back(text);
  }
  for (const auto& [name, value] : extra) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int OpenForAppend(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  DFLOW_REQUIRE(fd >= 0, "cannot open ", path, ": ", std::strerror(errno));
  return fd;
}

// The last line of a file.
std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

// The child's side of fork(), in a process that has threads: only
// async-signal-safe calls until exec. A session of its own (so that a stop
// reaches every process it starts), no blocked signals (the service blocks
// SIGINT and SIGTERM for its signal thread; a mask survives exec), output to
// the log.
[[noreturn]] void ExecJob(const char* program, char* const argv[], char* const envp[], int out_fd, int log_fd) {
  setsid();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  dup2(out_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  int null = open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, STDIN_FILENO);
  execve(program, argv, envp);
  const char message[] = "dflow jobs: cannot run the job's program\n";
  ssize_t ignored = write(STDERR_FILENO, message, sizeof message - 1);
  (void)ignored;
  _exit(127);
}

}  // namespace

void SignalSession(pid_t sid, int signal) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    if (SessionOf(name) == sid) kill(static_cast<pid_t>(std::stol(name)), signal);
  }
}

Runner::Runner(Store& store, RunnerOptions options) : store_(store), options_(std::move(options)) {}

Runner::~Runner() {
  std::vector<std::thread> watchers;
  {
    std::lock_guard lock(mu_);
    shutting_down_ = true;
    for (const auto& [id, pid] : running_) {
      stopping_.insert(id);
      kill(pid, SIGINT);
    }
    watchers.swap(watchers_);
  }
  for (std::thread& watcher : watchers) watcher.join();
}

std::vector<std::string> Runner::Command(const Job& job, const Dataset& dataset, bool resume) const {
  const JobSpec& s = job.spec;
  std::vector<std::string> train = {options_.bin_dir + "/dflow-" + s.app, "train", "--out", job.run_dir};
  if (resume) {
    train.push_back("--resume");
  } else {
    train.insert(train.end(), {"--data", dataset.path, "--steps", std::to_string(s.steps), "--batch",
                               std::to_string(s.batch), "--checkpoint-every", std::to_string(s.checkpoint_every)});
    if (s.app == "detect") train.insert(train.end(), {"--model", s.model});
  }
  train.insert(train.end(), {"--workers", std::to_string(s.workers), "--strategy", s.strategy});
  if (s.strategy == "ps") train.insert(train.end(), {"--ps", std::to_string(s.ps)});
  const int ranks = s.workers + (s.strategy == "ps" ? s.ps : 0);
  if (s.backend == "local") {
    train.insert(train.end(), {"--base-port", std::to_string(job.base_port)});
    return train;
  }
  std::vector<std::string> command;
  if (s.backend == "mpirun") {
    std::string hosts;
    for (const std::string& node : s.nodes) hosts += (hosts.empty() ? "" : ",") + node;
    if (hosts.empty()) hosts = "localhost";
    const std::string first = hosts.substr(0, hosts.find(','));
    command = {"mpirun", "--oversubscribe", "-np", std::to_string(ranks), "--host", hosts,
               "-x", StrCat("DFLOW_COORDINATOR=", first, ":", job.base_port),
               "-x", StrCat("DFLOW_NUM_PS=", s.strategy == "ps" ? s.ps : 0)};
    if (geteuid() == 0) command.insert(command.begin() + 1, "--allow-run-as-root");
  } else {
    command = {"srun", "--ntasks", std::to_string(ranks), "--kill-on-bad-exit=1"};
    if (!s.nodes.empty()) {
      std::string list;
      for (const std::string& node : s.nodes) list += (list.empty() ? "" : ",") + node;
      command.insert(command.end(), {"--nodelist", list});
    }
  }
  command.insert(command.end(), train.begin(), train.end());
  return command;
}

void Runner::Start(int64_t job_id, bool resume) {
  try {
    Launch(job_id, resume);
  } catch (const Error& e) {
    // A job that could not start is failed, never left queued.
    if (!IsRunning(job_id)) store_.SetFinished(job_id, JobStatus::kFailed, e.message());
    throw;
  }
}

void Runner::Launch(int64_t job_id, bool resume) {
  std::optional<Job> job = store_.FindJob(job_id);
  DFLOW_REQUIRE(job, "no job ", job_id);
  std::optional<Dataset> dataset = store_.FindDataset(job->spec.dataset_id);
  DFLOW_REQUIRE(dataset, "job ", job_id, ": its dataset ", job->spec.dataset_id, " is gone");
  const std::string launcher = job->spec.backend == "mpirun" ? "mpirun" : job->spec.backend == "slurm" ? "srun" : "";
  if (!launcher.empty() && FindProgram(launcher).empty())
    Fail(Code::kInvalidArgument, "the ", job->spec.backend, " back-end needs ", launcher,
         ", which is not installed on the service's machine");
  job->base_port = FreePortBlock(options_.first_port, job_id, job->spec.workers + job->spec.ps);
  std::vector<std::string> command = Command(*job, *dataset, resume);
  fs::create_directories(job->run_dir);
  const std::string log = job->run_dir + "/log.txt";
  std::vector<std::pair<std::string, std::string>> environment;
  if (job->spec.backend == "slurm" && job->spec.strategy == "ps")
    environment.push_back({"DFLOW_NUM_PS", std::to_string(job->spec.ps)});
  {
    std::ofstream header(log, std::ios::app);
    header << "dflow jobs: job " << job_id << (resume ? " resumed:" : " started:");
    for (const std::string& arg : command) header << " " << arg;
    header << "\n";
  }
  std::lock_guard lock(mu_);
  pid_t pid = Spawn(job_id, command, environment, log, log);
  store_.SetRunning(job_id, pid, job->base_port);
  watchers_.emplace_back([this, job_id, pid, log] { Watch(job_id, pid, log); });
}

// Under mu_. Everything the child needs is made before fork.
pid_t Runner::Spawn(int64_t job_id, const std::vector<std::string>& command,
                    const std::vector<std::pair<std::string, std::string>>& environment, const std::string& out,
                    const std::string& log) {
  DFLOW_REQUIRE(!shutting_down_, "the job service is stopping");
  const std::string program = FindProgram(command.front());
  DFLOW_REQUIRE(!program.empty(), "job ", job_id, ": cannot find ", command.front());
  std::vector<std::string> args = command, env = JobEnvironment(environment);
  std::vector<char*> argv = Pointers(args), envp = Pointers(env);
  const int out_fd = OpenForAppend(out);
  const int log_fd = out == log ? out_fd : OpenForAppend(log);
  pid_t pid = fork();
  if (pid == 0) ExecJob(program.c_str(), argv.data(), envp.data(), out_fd, log_fd);
  close(out_fd);
  if (log_fd != out_fd) close(log_fd);
  if (pid < 0) Fail(Code::kUnavailable, "cannot start job ", job_id, ": fork: ", std::strerror(errno));
  running_[job_id] = pid;
  return pid;
}

void Runner::Stop(int64_t job_id) {
  std::lock_guard lock(mu_);
  auto it = running_.find(job_id);
  DFLOW_REQUIRE(it != running_.end(), "job ", job_id, " is not running");
  stopping_.insert(job_id);
  kill(it->second, SIGINT);  // the launcher forwards it to every task
}

bool Runner::IsRunning(int64_t job_id) {
  std::lock_guard lock(mu_);
  return running_.count(job_id) > 0;
}

Runner::Exit Runner::WaitFor(int64_t job_id, pid_t pid) {
  Exit exit;
  std::optional<std::chrono::steady_clock::time_point> stop_asked;
  while (waitpid(pid, &exit.status, WNOHANG) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::lock_guard lock(mu_);
    if (!stopping_.count(job_id)) continue;
    if (!stop_asked) stop_asked = std::chrono::steady_clock::now();
    if (!exit.killed && std::chrono::steady_clock::now() - *stop_asked > options_.stop_grace) {
      SignalSession(pid, SIGKILL);
      exit.killed = true;
    }
  }
  SignalSession(pid, SIGKILL);  // whatever the launcher left behind
  return exit;
}

// Evaluates the trained model on the job's evaluation dataset: the app's
// `eval`, whose last line of output is its metrics as JSON, kept in
// RUN/eval.json. Returns why it failed, or "".
std::string Runner::Evaluate(int64_t job_id, const Job& job, const std::string& log) {
  std::optional<Dataset> data = store_.FindDataset(job.spec.eval_dataset_id);
  if (!data) return StrCat("evaluation dataset ", job.spec.eval_dataset_id, " is gone");
  std::vector<std::string> command = {options_.bin_dir + "/dflow-" + job.spec.app, "eval", "--data", data->path,
                                      "--checkpoint", job.run_dir};
  std::ofstream(log, std::ios::app) << "dflow jobs: evaluating on " << data->name << "\n";
  const std::string out = job.run_dir + "/eval.txt";
  std::error_code ignored;
  fs::remove(out, ignored);
  pid_t pid = 0;
  {
    std::lock_guard lock(mu_);
    pid = Spawn(job_id, command, {}, out, log);
  }
  Exit exit = WaitFor(job_id, pid);
  if (!WIFEXITED(exit.status) || WEXITSTATUS(exit.status) != 0) return "the evaluation failed: " + Reason(log, exit.status);
  Json metrics = Json::parse(LastLine(out), nullptr, false);
  if (!metrics.is_object()) return "the evaluation printed no metrics";
  metrics["dataset"] = data->name;
  std::ofstream(job.run_dir + "/eval.json") << metrics.dump() << "\n";
  return "";
}

void Runner::Watch(int64_t job_id, pid_t pid, std::string log) {
  Exit exit = WaitFor(job_id, pid);
  const bool trained = WIFEXITED(exit.status) && WEXITSTATUS(exit.status) == 0;
  std::string evaluation;
  std::optional<Job> job = store_.FindJob(job_id);
  bool stopping = false;
  {
    std::lock_guard lock(mu_);
    stopping = stopping_.count(job_id) > 0;
  }
  if (trained && !stopping && job && job->spec.eval_dataset_id != 0) {
    try {
      evaluation = Evaluate(job_id, *job, log);
    } catch (const Error& e) {
      evaluation = "the evaluation could not start: " + e.message();
    }
  }
  std::lock_guard lock(mu_);
  running_.erase(job_id);
  if (stopping_.erase(job_id)) {
    store_.SetFinished(job_id, JobStatus::kStopped,
                       shutting_down_ ? "the job service stopped"
                       : exit.killed  ? "stopped (killed after the grace period)"
                                      : "stopped on request");
  } else if (trained) {
    store_.SetFinished(job_id, evaluation.empty() ? JobStatus::kSucceeded : JobStatus::kFailed, evaluation);
  } else {
    store_.SetFinished(job_id, JobStatus::kFailed, Reason(log, exit.status));
  }
}

// What went wrong, from the log: the first error a task reported (the
// cause) and the launcher's last word (which task failed how), else the
// exit status.
std::string Runner::Reason(const std::string& log, int wait_status) const {
  static const char* kCodes[] = {"InvalidArgument:", "NotFound:", "AlreadyExists:", "FailedPrecondition:",
                                 "OutOfRange:", "Unimplemented:", "DataLoss:", "Cancelled:", "Unavailable:",
                                 "Internal:"};
  std::ifstream in(log);
  std::string line, first_task_error, last_error;
  while (std::getline(in, line)) {
    const bool from_task = !line.empty() && line[0] == '[';
    bool coded = false;
    for (const char* code : kCodes) coded = coded || line.find(code) != std::string::npos;
    if (from_task && coded && first_task_error.empty()) first_task_error = line;
    if (line.find("error") != std::string::npos || line.find("killed by signal") != std::string::npos ||
        (!from_task && coded))
      last_error = line;
  }
  std::string reason = first_task_error;
  if (!last_error.empty() && last_error != first_task_error)
    reason += (reason.empty() ? "" : " -- ") + last_error;
  if (!reason.empty()) return reason.size() > 600 ? reason.substr(0, 600) + "..." : reason;
  if (WIFSIGNALED(wait_status)) return StrCat("the launcher was killed by signal ", WTERMSIG(wait_status));
  return StrCat("the launcher exited with status ", WEXITSTATUS(wait_status));
}

}  // namespace dflow::jobs
