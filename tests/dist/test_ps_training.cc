// Parameter-server training across real processes on 127.0.0.1: ps tasks
// and workers are tests/dist/ps_trainer processes with DFLOW_CLUSTER set.
// Sync mode gives the in-process reference's parameters bit for bit (and so
// the ring's: test_data_parallel_training.cc); async mode trains and records
// staleness; a worker killed with SIGKILL is survived in async mode and
// reported by name in sync mode, where every process then exits non-zero.
#include <catch2/catch.hpp>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "graph/npy.h"
#include "tests/dist/child_process.h"
#include "tests/dist/replicated_mlp.h"
#include "tests/dist/server_process.h"

namespace dflow {
namespace {

using testing::ChildProcess;

const char* TrainerExe() {
  const char* exe = std::getenv("PS_TRAINER_EXE");
  if (!exe) Fail(Code::kFailedPrecondition, "PS_TRAINER_EXE is not set (tests/meson.build sets it)");
  return exe;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A scratch directory and a cluster of `workers` workers and `ps` ps tasks
// on free loopback ports; every process started is killed at the end.
class PsRun {
 public:
  PsRun(int workers, int ps) : workers_(workers) {
    char pattern[] = "/tmp/dflow-ps-XXXXXX";
    dir_ = mkdtemp(pattern);
    for (int i = 0; i < workers; ++i) addresses_["worker"].push_back(StrCat("\"127.0.0.1:", testing::FreeLoopbackPort(), "\""));
    for (int i = 0; i < ps; ++i) addresses_["ps"].push_back(StrCat("\"127.0.0.1:", testing::FreeLoopbackPort(), "\""));
  }
  ~PsRun() {
    processes_.clear();
    std::filesystem::remove_all(dir_);
  }

  // Starts every ps task, then every worker, with `args` after --out DIR.
  void Start(const std::vector<std::string>& args) {
    for (const std::string& job : {std::string("ps"), std::string("worker")})
      for (size_t i = 0; i < addresses_[job].size(); ++i) {
        std::vector<std::string> argv = {TrainerExe(), "--out", dir_};
        argv.insert(argv.end(), args.begin(), args.end());
        processes_[StrCat(job, i)] = std::make_unique<ChildProcess>(
            argv, std::vector<std::string>{"DFLOW_CLUSTER=" + ClusterJson(job, static_cast<int>(i)), "DFLOW_STRATEGY=ps"},
            Log(job, static_cast<int>(i)));
      }
  }

  ChildProcess& process(const std::string& job, int i) { return *processes_.at(StrCat(job, i)); }
  std::string Log(const std::string& job, int i) const { return StrCat(dir_, "/", job, "-", i, ".log"); }
  std::string log(const std::string& job, int i) const { return ReadFile(Log(job, i)); }
  const std::string& dir() const { return dir_; }

  // Waits for the process to exit (within `seconds`) and returns its code,
  // showing its log when the check fails.
  int ExitCode(const std::string& job, int i, double seconds) {
    std::optional<int> code = process(job, i).WaitForExit(seconds);
    INFO(job << " " << i << " log:\n" << log(job, i));
    REQUIRE(code.has_value());
    return *code;
  }

  // Waits until the worker's log shows `text` (up to 30 s).
  void WaitForLog(int worker, const std::string& text) {
    for (int i = 0; i < 1500 && log("worker", worker).find(text) == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    INFO(log("worker", worker));
    REQUIRE(log("worker", worker).find(text) != std::string::npos);
  }

  // "name value" lines of OUT/worker-K.txt.
  std::map<std::string, double> Summary(int worker) const {
    std::map<std::string, double> values;
    std::istringstream in(ReadFile(StrCat(dir_, "/worker-", worker, ".txt")));
    std::string name;
    double value;
    while (in >> name >> value) values[name] = value;
    return values;
  }

 private:
  std::string ClusterJson(const std::string& job, int index) {
    auto list = [&](const std::string& j) {
      std::string out;
      for (const std::string& a : addresses_[j]) out += (out.empty() ? "" : ", ") + a;
      return out;
    };
    return StrCat("{\"cluster\": {\"worker\": [", list("worker"), "], \"ps\": [", list("ps"),
                  "]}, \"task\": {\"type\": \"", job, "\", \"index\": ", index, "}}");
  }

  int workers_;
  std::string dir_;
  std::map<std::string, std::vector<std::string>> addresses_;
  std::map<std::string, std::unique_ptr<ChildProcess>> processes_;
};

void CheckSyncEqualsReference(int workers, int ps, int steps) {
  PsRun run(workers, ps);
  run.Start({"--mode", "sync", "--steps", std::to_string(steps)});
  for (int i = 0; i < workers; ++i) CHECK(run.ExitCode("worker", i, 60) == 0);
  for (int i = 0; i < ps; ++i) CHECK(run.ExitCode("ps", i, 10) == 0);
  auto data = models::MakeSpirals({.points_per_class = 200, .seed = 5});
  std::vector<Tensor> reference = testing::TrainSyncInOneProcess(data, workers, steps, 16);
  for (size_t v = 0; v < reference.size(); ++v) {
    INFO("variable " << v);
    CHECK(ReadNpy(StrCat(run.dir(), "/var-", v, ".npy")).Equals(reference[v]));
  }
  for (int i = 0; i < workers; ++i) CHECK(run.Summary(i).at("steps") == steps);
}

TEST_CASE("sync parameter servers across processes give the one-process parameters bit for bit", "[ps][process]") {
  SECTION("3 workers, 1 ps") { CheckSyncEqualsReference(3, 1, 12); }
  SECTION("2 workers, 2 ps (variables spread round-robin)") { CheckSyncEqualsReference(2, 2, 8); }
}

TEST_CASE("async parameter servers across processes train and record staleness", "[ps][process]") {
  PsRun run(2, 1);
  run.Start({"--mode", "async", "--steps", "300"});
  for (int i = 0; i < 2; ++i) CHECK(run.ExitCode("worker", i, 60) == 0);
  CHECK(run.ExitCode("ps", 0, 10) == 0);
  auto chief = run.Summary(0), other = run.Summary(1);
  CHECK(chief.at("steps") + other.at("steps") >= 300);
  CHECK(chief.at("last_loss") < chief.at("first_loss"));
  CHECK(other.at("last_loss") < other.at("first_loss"));
  // Two workers updating at once: some updates were computed from parameters
  // another worker changed meanwhile.
  CHECK(chief.at("total_staleness") + other.at("total_staleness") > 0);
}

TEST_CASE("async: a worker killed mid-training is survived by the others", "[ps][process]") {
  PsRun run(3, 1);
  run.Start({"--mode", "async", "--steps", "150", "--sleep-ms", "20", "--finish-timeout-ms", "2000"});
  run.WaitForLog(1, "own_step 10 ");
  run.process("worker", 1).Signal(SIGKILL);
  CHECK(run.ExitCode("worker", 1, 5) == 128 + SIGKILL);
  CHECK(run.ExitCode("worker", 0, 60) == 0);
  CHECK(run.ExitCode("worker", 2, 60) == 0);
  CHECK(run.ExitCode("ps", 0, 10) == 0);
  CHECK(run.log("worker", 0).find("only 2 of 3 workers finished") != std::string::npos);
  CHECK(run.Summary(0).at("last_loss") < run.Summary(0).at("first_loss"));
}

TEST_CASE("sync: a worker killed mid-training is named by the chief and everyone exits non-zero", "[ps][process]") {
  PsRun run(3, 1);
  run.Start({"--mode", "sync", "--steps", "1000", "--sleep-ms", "20", "--step-timeout-ms", "2000"});
  run.WaitForLog(1, "own_step 5 ");
  run.process("worker", 1).Signal(SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  CHECK(run.ExitCode("worker", 1, 5) == 128 + SIGKILL);
  CHECK(run.ExitCode("worker", 0, 10) == 1);
  CHECK(std::chrono::steady_clock::now() - killed < std::chrono::seconds(10));
  CHECK(run.log("worker", 0).find("none from worker(s) 1") != std::string::npos);
  CHECK(run.ExitCode("worker", 2, 20) == 1);
  CHECK(run.ExitCode("ps", 0, 20) == 1);
}

}  // namespace
}  // namespace dflow
