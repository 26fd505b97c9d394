#include "tests/dist/server_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "dist/transport/zmq_channel.h"

namespace dflow::testing {

namespace {

// A socket bound to 127.0.0.1:port, or -1 when the port is taken.
int BindLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

// Below Linux's ephemeral range (32768 and up by default), where the kernel
// never hands a port to another process's outgoing connection between our
// check and the server's bind: a port picked there (as `bind` to port 0
// would) can be taken by any test's client socket in the meantime.
int FreeLoopbackPorts(int count) {
  constexpr int kLowest = 20000, kHighest = 32000;
  std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  std::uniform_int_distribution<int> first(kLowest, kHighest - count);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int base = first(rng);
    std::vector<int> bound;
    for (int i = 0; i < count; ++i) {
      const int fd = BindLoopback(base + i);
      if (fd < 0) break;
      bound.push_back(fd);
    }
    const bool all = static_cast<int>(bound.size()) == count;
    for (int fd : bound) close(fd);
    if (all) return base;
  }
  Fail(Code::kUnavailable, "cannot find ", count, " free consecutive loopback ports in [", kLowest, ", ", kHighest,
       ")");
}

int FreeLoopbackPort() { return FreeLoopbackPorts(1); }

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
// a refused connection must not wait out the heartbeat timeout). A server
// that exits first is an error quoting its log.
void WaitUntilServing(const std::string& address, ChildProcess& server, const std::string& log) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < give_up) {
    if (server.WaitForExit(0)) {
      std::ifstream in(log);
      const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      Fail(Code::kUnavailable, "dflow server at ", address, " exited at start: ", said);
    }
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

// The server's output goes to DIR/task-N.log; if it does not answer, the
// child is killed as the constructor throws.
ServerProcess::ServerProcess(const ScratchCluster& cluster, int task)
    : child_({DflowExe(), "server", "--cluster", cluster.file(), "--job", "worker", "--task",
              std::to_string(task), "--threads", "1"},
             {}, StrCat(cluster.dir(), "/task-", task, ".log")) {
  WaitUntilServing(cluster.address(task), child_, StrCat(cluster.dir(), "/task-", task, ".log"));
}

void ServerProcess::Signal(int signal) const { child_.Signal(signal); }

bool ServerProcess::WaitForExit(double seconds) { return child_.WaitForExit(seconds).has_value(); }

}  // namespace dflow::testing
