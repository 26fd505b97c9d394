// One timeline for a step that spans devices and processes: the Chrome trace
// of a two-task remote step (and of a two-device local one) has a process
// track per task, a thread track per device and executor thread, and one
// flow arrow from every _Send to its _Recv; the tasks' clocks are aligned by
// the offsets measured at session start (on one machine the true offset is
// 0, so the measured one must be within its stated error).
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "dist/runtime/zmq_cluster.h"
#include "graph/file.h"
#include "tests/dist/mlp_fixture.h"
#include "tests/dist/server_process.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

RunOptions Traced() {
  RunOptions options;
  options.trace = true;
  return options;
}

// One traced training step of the MLP with its layers on devices a and b.
RunMetadata TracedStep(TwoLayerMlp& mlp, Session& session) {
  session.Run({}, {}, {ops::GlobalVariablesInitializer(mlp.s)});
  RunMetadata metadata;
  WithDeadline([&] {
    return session.Run({{mlp.x, RandomTensor(DType::kFloat32, Shape({8, 5}), 5)},
                        {mlp.target, RandomTensor(DType::kFloat32, Shape({8, 3}), 6)}},
                       {mlp.loss}, {mlp.train}, Traced(), &metadata);
  });
  return metadata;
}

nlohmann::json TraceEvents(const RunMetadata& metadata) {
  auto path = std::filesystem::temp_directory_path() / ("dflow_timeline_" + std::to_string(::getpid()) + ".json");
  WriteChromeTrace(metadata, path.string());
  auto doc = nlohmann::json::parse(ReadFileToString(path.string()));
  std::filesystem::remove(path);
  return doc["traceEvents"];
}

// Checks the arrows: every _Recv has exactly one, starting on its _Send's
// track and ending on its own. Returns the names of the processes.
std::set<std::string> CheckArrows(const RunMetadata& metadata, const nlohmann::json& events) {
  std::map<int, std::string> process_names;
  std::map<int64_t, std::vector<nlohmann::json>> flows;  // id -> its "s" and "f"
  std::map<std::pair<int, int>, std::set<std::string>> ops_on_track;  // (pid, tid) -> ops
  for (const auto& e : events) {
    if (e["ph"] == "M" && e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "X") ops_on_track[{e["pid"], e["tid"]}].insert(e["args"]["op"].get<std::string>());
    if (e["ph"] == "s" || e["ph"] == "f") flows[e["id"].get<int64_t>()].push_back(e);
  }
  size_t recvs = 0;
  for (const NodeExecStats& s : metadata.step_stats) recvs += s.op == "_Recv";
  REQUIRE(recvs > 0);
  CHECK(flows.size() == recvs);
  for (const auto& [id, ends] : flows) {
    REQUIRE(ends.size() == 2);
    const auto& start = ends[0]["ph"] == "s" ? ends[0] : ends[1];
    const auto& finish = ends[0]["ph"] == "s" ? ends[1] : ends[0];
    CHECK(start["ph"] == "s");
    CHECK(finish["ph"] == "f");
    CHECK(ops_on_track[{start["pid"], start["tid"]}].count("_Send") == 1);
    CHECK(ops_on_track[{finish["pid"], finish["tid"]}].count("_Recv") == 1);
    CHECK(start["pid"] != finish["pid"]);  // the arrows cross between the tasks
  }
  std::set<std::string> names;
  for (const auto& [pid, name] : process_names) names.insert(name);
  return names;
}

}  // namespace

TEST_CASE("a remote step's trace is one timeline: a track per task, an arrow per transfer", "[remote][trace]") {
  ScratchCluster cluster(2);
  ServerProcess task0(cluster, 0), task1(cluster, 1);
  TwoLayerMlp mlp(cluster.device(0), cluster.device(1));
  SessionOptions options;
  options.target = cluster.target(0);
  Session session(mlp.s, options);
  RunMetadata metadata = TracedStep(mlp, session);

  // Both servers run on this machine, on the same steady clock: the true
  // offset is 0, and the measured one must say so within its error bound.
  const auto& zmq = dynamic_cast<const dist::ZmqCluster&>(session.cluster());
  REQUIRE(zmq.tasks().size() == 2);
  for (const auto& task : zmq.tasks()) {
    INFO(task.prefix << ": offset " << task.clock_offset_ns << " ns, error " << task.clock_error_ns << " ns");
    CHECK(task.clock_error_ns > 0);
    CHECK(std::abs(task.clock_offset_ns) <= task.clock_error_ns + 1000);
  }
  // Aligned, every transfer arrives after it was sent (give or take the error).
  std::map<std::string, const NodeExecStats*> sends;
  for (const NodeExecStats& s : metadata.step_stats)
    if (s.op == "_Send") sends[s.transfer] = &s;
  for (const NodeExecStats& s : metadata.step_stats) {
    if (s.op != "_Recv") continue;
    REQUIRE(sends.count(s.transfer) == 1);
    CHECK(s.end_ns + 2 * zmq.tasks()[0].clock_error_ns + 2 * zmq.tasks()[1].clock_error_ns >=
          sends[s.transfer]->start_ns);
  }
  std::set<std::string> tasks = CheckArrows(metadata, TraceEvents(metadata));
  CHECK(tasks == std::set<std::string>{"/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"});
}

TEST_CASE("a two-device step's trace has a thread track per device and an arrow per transfer", "[trace]") {
  TwoLayerMlp mlp("/device:CPU:0", "/device:CPU:1");
  SessionOptions options;
  options.num_threads = 1;
  options.devices = {"/job:localhost/replica:0/task:0/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:1"};
  Session session(mlp.s, options);
  RunMetadata metadata = TracedStep(mlp, session);
  nlohmann::json events = TraceEvents(metadata);
  std::set<std::string> threads;
  for (const auto& e : events)
    if (e["ph"] == "M" && e["name"] == "thread_name") threads.insert(e["args"]["name"].get<std::string>());
  CHECK(std::count_if(threads.begin(), threads.end(), [](const std::string& t) { return t.starts_with("/device:CPU:0"); }) >= 1);
  CHECK(std::count_if(threads.begin(), threads.end(), [](const std::string& t) { return t.starts_with("/device:CPU:1"); }) >= 1);

  std::map<int64_t, std::set<std::string>> phases;
  size_t recvs = 0;
  for (const auto& e : events)
    if (e["ph"] == "s" || e["ph"] == "f") phases[e["id"].get<int64_t>()].insert(e["ph"].get<std::string>());
  for (const NodeExecStats& s : metadata.step_stats) recvs += s.op == "_Recv";
  CHECK(recvs > 0);
  CHECK(phases.size() == recvs);
  for (const auto& [id, both] : phases) CHECK(both == std::set<std::string>{"s", "f"});
}
