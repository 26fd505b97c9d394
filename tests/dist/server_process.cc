#include "tests/dist/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "dist/zmq_channel.h"

namespace dflow::testing {

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t length = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0)
    Fail(Code::kUnavailable, "cannot find a free loopback port");
  close(fd);
  return ntohs(addr.sin_port);
}

ScratchCluster::ScratchCluster(int num_workers) {
  char pattern[] = "/tmp/dflow-cluster-XXXXXX";
  dir_ = mkdtemp(pattern);
  file_ = dir_ + "/cluster.json";
  std::string workers;
  for (int i = 0; i < num_workers; ++i) {
    ports_.push_back(FreeLoopbackPort());
    workers += StrCat(i ? ", " : "", "\"", address(i), "\"");
  }
  std::ofstream(file_) << "{\"cluster\": {\"worker\": [" << workers << "]}}\n";
}

ScratchCluster::~ScratchCluster() { std::filesystem::remove_all(dir_); }

std::string ScratchCluster::address(int task) const { return StrCat("127.0.0.1:", ports_.at(task)); }

std::string ScratchCluster::device(int task) const {
  return StrCat("/job:worker/replica:0/task:", task, "/device:CPU:0");
}

namespace {

const char* DflowExe() {
  const char* exe = std::getenv("DFLOW_EXE");
  if (!exe) Fail(Code::kFailedPrecondition, "DFLOW_EXE is not set (tests/meson.build sets it)");
  return exe;
}

// Asks the task for its status until it answers (a fresh channel each try:
// a refused connection must not wait out the heartbeat timeout).
void WaitUntilServing(const std::string& address, pid_t pid) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < give_up) {
    if (waitpid(pid, nullptr, WNOHANG) == pid) Fail(Code::kUnavailable, "dflow server exited at start");
    dist::Channel channel("probe", address);
    dist::Message request;
    request.type = dist::MessageType::kGetStatus;
    request.deadline_ms = dist::DeadlineIn(500);
    try {
      channel.CallAndWait(request);
      return;
    } catch (const Error&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  Fail(Code::kUnavailable, "dflow server at ", address, " did not answer within 20 s");
}

}  // namespace

// fork + exec rather than posix_spawn, for PR_SET_PDEATHSIG: a server dies
// with the test program even when that one is killed or exits abruptly.
// (Between fork and exec only async-signal-safe calls.)
ServerProcess::ServerProcess(const ScratchCluster& cluster, int task) {
  std::string task_arg = std::to_string(task);
  std::string log = StrCat(cluster.dir(), "/task-", task, ".log");
  std::vector<std::string> args = {DflowExe(), "server", "--cluster", cluster.file(), "--job",
                                   "worker",   "--task", task_arg,       "--threads", "1"};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) Fail(Code::kUnavailable, "cannot fork: ", strerror(errno));
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the parent died before prctl
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) dup2(fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  try {
    WaitUntilServing(cluster.address(task), pid_);
  } catch (...) {
    Signal(SIGKILL);
    waitpid(pid_, nullptr, 0);
    throw;
  }
}

ServerProcess::~ServerProcess() {
  if (exited_) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

void ServerProcess::Signal(int signal) const { kill(pid_, signal); }

bool ServerProcess::WaitForExit(double seconds) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < give_up) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return exited_ = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace dflow::testing
