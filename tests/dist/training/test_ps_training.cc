// Parameter-server training across real processes on 127.0.0.1: ps tasks
// and workers are tests/dist/ps_trainer processes with DFLOW_CLUSTER set.
// Sync mode gives the in-process reference's parameters bit for bit (and so
// the ring's: test_data_parallel_training.cc); async mode trains and records
// staleness; a worker killed with SIGKILL is survived in async mode and
// reported by name in sync mode, where every process then exits non-zero.
// First, what that rests on: the sessions of several clients on one ps task
// share its variables, and their concurrent updates are all applied.
#include <catch2/catch.hpp>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "autodiff/optimizers.h"
#include "dist/training/ps_training.h"
#include "dist/runtime/worker_service.h"
#include "graph/npy.h"
#include "ops/ops.h"
#include "tests/dist/child_process.h"
#include "tests/dist/replicated_mlp.h"
#include "tests/dist/server_process.h"

namespace dflow {
namespace {

using testing::ChildProcess;

const char* DflowExe() {
  const char* exe = std::getenv("DFLOW_EXE");
  if (!exe) Fail(Code::kFailedPrecondition, "DFLOW_EXE is not set (tests/meson.build sets it)");
  return exe;
}

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
    // One block of distinct ports: free ports picked one at a time may repeat.
    int port = testing::FreeLoopbackPorts(workers + ps);
    for (int i = 0; i < workers; ++i) addresses_["worker"].push_back(StrCat("\"127.0.0.1:", port++, "\""));
    for (int i = 0; i < ps; ++i) addresses_["ps"].push_back(StrCat("\"127.0.0.1:", port++, "\""));
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

struct CounterGraph {
  Scope s = Scope::NewRootScope();
  Output v = ops::Variable(s.WithOpName("v"), Tensor::Scalar<float>(0));
  Output add = ops::AssignAdd(s.WithOpName("add"), v, Tensor::Scalar<float>(1));
  Node* init = ops::GlobalVariablesInitializer(s);
};

TEST_CASE("two clients' sessions on one ps task share its variables and lose no concurrent update", "[ps]") {
  std::string address = StrCat("127.0.0.1:", testing::FreeLoopbackPort());
  dist::WorkerService service(dist::ClusterSpec::Parse(StrCat(R"({"cluster": {"ps": [")", address, R"("]}})"), "test"),
                              {"ps", 0}, 2);
  dist::MessageServer server(address, [&service](dist::Message request, dist::MessageServer::Respond respond) {
    service.Handle(std::move(request), std::move(respond));
  });
  CounterGraph a, b;  // the same graph built twice, as two workers would
  Session first(a.s, {.target = "zmq://" + address}), second(b.s, {.target = "zmq://" + address});
  first.Run({}, {}, {a.init});
  CHECK(second.Run({b.v})[0].scalar<float>() == 0);  // initialised by the other client
  auto add_many = [](Session& session, const Output& add) {
    for (int i = 0; i < 200; ++i) session.Run({}, {}, {add.node()});
  };
  std::thread other([&] { add_many(second, b.add); });
  add_many(first, a.add);
  other.join();
  CHECK(first.Run({a.v})[0].scalar<float>() == 400);
  CHECK(second.Run({b.v})[0].scalar<float>() == 400);
  CHECK_THROWS_WITH(Session(a.s, {.target = "zmq://" + address, .device_filters = {"/job:worker"}}),
                    Catch::Contains("no task of the cluster at zmq://" + address +
                                    " passes the device filters [\"/job:worker\"]"));
}

TEST_CASE("PsWorker and PsTaskFromEnvironment refuse what cannot be trained, naming it", "[ps]") {
  auto worker_on = [](const std::string& cluster, dist::TaskId task) {
    CounterGraph g;
    autodiff::GradientDescentOptimizer sgd(ops::Const(g.s, Tensor::Scalar<float>(0.1f)));
    dist::PsTask ps_task{dist::ClusterSpec::Parse(cluster, "test"), task};
    dist::PsWorker worker(g.s, {{g.add, g.v}}, sgd, ps_task, {});
  };
  CHECK_THROWS_WITH(worker_on(R"({"cluster": {"worker": ["127.0.0.1:1"]}})", {"worker", 0}),
                    Catch::Contains("the cluster needs a 'ps' and a 'worker' job, it has 0 ps and 1 worker task(s)"));
  CHECK_THROWS_WITH(worker_on(R"({"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}})", {"ps", 0}),
                    Catch::Contains("task /job:ps/replica:0/task:0 is not a worker"));
  auto from_environment = [](const char* cluster) {
    setenv("DFLOW_CLUSTER", cluster, 1);
    unsetenv("DFLOW_STRATEGY");
    try {
      dist::PsTaskFromEnvironment();
    } catch (...) {
      unsetenv("DFLOW_CLUSTER");
      throw;
    }
    unsetenv("DFLOW_CLUSTER");
  };
  CHECK_THROWS_WITH(from_environment(R"({"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}})"),
                    Catch::Contains("DFLOW_CLUSTER names no task"));
  CHECK_THROWS_WITH(from_environment(R"({"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 0}})"),
                    Catch::Contains("DFLOW_CLUSTER needs a 'ps' and a 'worker' job, it has 0 ps and 1 worker"));
  CHECK_NOTHROW(from_environment(
      R"({"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}, "task": {"type": "ps", "index": 0}})"));
}

// The chief's OUT/var-I.npy against the one-process sync reference.
void CheckVariablesEqualReference(const std::string& dir, int workers, int steps) {
  auto data = models::MakeSpirals({.points_per_class = 200, .seed = 5});
  std::vector<Tensor> reference = testing::TrainSyncInOneProcess(data, workers, steps, 16);
  for (size_t v = 0; v < reference.size(); ++v) {
    INFO("variable " << v);
    CHECK(ReadNpy(StrCat(dir, "/var-", v, ".npy")).Equals(reference[v]));
  }
}

void CheckSyncEqualsReference(int workers, int ps, int steps) {
  PsRun run(workers, ps);
  run.Start({"--mode", "sync", "--steps", std::to_string(steps)});
  for (int i = 0; i < workers; ++i) CHECK(run.ExitCode("worker", i, 60) == 0);
  for (int i = 0; i < ps; ++i) CHECK(run.ExitCode("ps", i, 10) == 0);
  CheckVariablesEqualReference(run.dir(), workers, steps);
  for (int i = 0; i < workers; ++i) CHECK(run.Summary(i).at("steps") == steps);
}

TEST_CASE("sync parameter servers across processes give the one-process parameters bit for bit", "[ps][process]") {
  SECTION("3 workers, 1 ps") { CheckSyncEqualsReference(3, 1, 12); }
  SECTION("2 workers, 2 ps (variables spread round-robin)") { CheckSyncEqualsReference(2, 2, 8); }
}

TEST_CASE("sync: a run stopped with a checkpoint and resumed gives the bits of an unbroken run", "[ps][process]") {
  PsRun scratch(0, 0);  // holds the checkpoint between the two runs
  std::string checkpoints = scratch.dir() + "/ckpt";
  {
    PsRun first(2, 1);
    first.Start({"--mode", "sync", "--steps", "6", "--checkpoint", checkpoints});
    for (int i = 0; i < 2; ++i) CHECK(first.ExitCode("worker", i, 60) == 0);
  }
  PsRun resumed(2, 1);
  resumed.Start({"--mode", "sync", "--steps", "10", "--restore-from", checkpoints});
  for (int i = 0; i < 2; ++i) CHECK(resumed.ExitCode("worker", i, 60) == 0);
  CHECK(resumed.ExitCode("ps", 0, 10) == 0);
  for (int i = 0; i < 2; ++i) CHECK(resumed.Summary(i).at("steps") == 4);  // steps 6..9
  CheckVariablesEqualReference(resumed.dir(), 2, 10);
}

TEST_CASE("dflow launch --ps 1 --strategy ps runs the same training; another strategy is refused", "[ps][process]") {
  PsRun run(0, 0);  // for its scratch directory
  std::string base_port = std::to_string(testing::FreeLoopbackPorts(3));  // 2 workers and a ps
  ChildProcess launch({DflowExe(), "launch", "-n", "2", "--ps", "1", "--strategy", "ps", "--base-port", base_port,
                       "--", TrainerExe(), "--mode", "sync", "--steps", "6", "--out", run.dir()},
                      {}, run.dir() + "/launch.log");
  std::optional<int> code = launch.WaitForExit(60);
  INFO(ReadFile(run.dir() + "/launch.log"));
  REQUIRE(code == 0);
  CheckVariablesEqualReference(run.dir(), 2, 6);

  ChildProcess ring({TrainerExe(), "--steps", "1"},
                    {R"(DFLOW_CLUSTER={"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}})",
                     "DFLOW_STRATEGY=ring"},
                    run.dir() + "/ring.log");
  CHECK(ring.WaitForExit(20) == 1);
  CHECK(ReadFile(run.dir() + "/ring.log").find("DFLOW_STRATEGY is 'ring'; parameter-server training needs 'ps'") !=
        std::string::npos);
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
  CHECK(run.log("worker", 2).find("the chief (worker 0) stopped training after an error") != std::string::npos);
  CHECK(run.ExitCode("ps", 0, 20) == 1);
}

TEST_CASE("sync: when the chief is killed the workers fail, naming it", "[ps][process]") {
  PsRun run(2, 1);
  run.Start({"--mode", "sync", "--steps", "1000", "--sleep-ms", "20", "--step-timeout-ms", "2000"});
  run.WaitForLog(1, "own_step 5 ");
  run.process("worker", 0).Signal(SIGKILL);
  CHECK(run.ExitCode("worker", 0, 5) == 128 + SIGKILL);
  CHECK(run.ExitCode("worker", 1, 10) == 1);
  CHECK(run.log("worker", 1).find("(the chief /job:worker/replica:0/task:0 finishes each step)") != std::string::npos);
  run.process("ps", 0).Signal(SIGTERM);  // nobody is left to stop it: the launcher's job
  CHECK(run.ExitCode("ps", 0, 10) == 0);
}

}  // namespace
}  // namespace dflow
