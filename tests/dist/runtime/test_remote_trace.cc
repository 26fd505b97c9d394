// Traces of remote steps (RunOptions.trace through a zmq:// session): every
// task's node stats come back with the step, each on its own task's device;
// and the trace codec refuses a malformed document, naming the task.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>

#include "dist/runtime/step_stats_json.h"
#include "tests/dist/mlp_fixture.h"
#include "tests/dist/server_process.h"

using namespace dflow;
using namespace dflow::testing;
using Catch::Matchers::Contains;

TEST_CASE("a traced remote step returns the node stats of every task", "[remote][trace]") {
  ScratchCluster cluster(2);
  ServerProcess task0(cluster, 0), task1(cluster, 1);
  TwoLayerMlp mlp(cluster.device(0), cluster.device(1));
  SessionOptions options;
  options.target = cluster.target(0);
  Session session(mlp.s, options);
  session.Run({}, {}, {ops::GlobalVariablesInitializer(mlp.s)});
  Tensor x = RandomTensor(DType::kFloat32, Shape({8, 5}), 5);
  Tensor target = RandomTensor(DType::kFloat32, Shape({8, 3}), 6);
  RunMetadata metadata;
  WithDeadline([&] {
    return session.Run({{mlp.x, x}, {mlp.target, target}}, {mlp.loss}, {mlp.train}, {.trace = true},
                       &metadata);
  });
  std::set<std::string> devices;
  std::set<std::string> ops;
  for (const NodeExecStats& stats : metadata.step_stats) {
    devices.insert(stats.device);
    ops.insert(stats.op);
    CHECK(stats.end_ns >= stats.start_ns);
  }
  CHECK(devices == std::set<std::string>{cluster.device(0), cluster.device(1)});
  CHECK(ops.count("MatMul") == 1);
  CHECK(ops.count("_Send") == 1);
  CHECK(ops.count("_Recv") == 1);
  CHECK(metadata.step_ns > 0);

  SECTION("an untraced step carries no stats") {
    RunMetadata untraced;
    session.Run({{mlp.x, x}, {mlp.target, target}}, {mlp.loss}, {}, {}, &untraced);
    CHECK(untraced.step_stats.empty());
  }
}

TEST_CASE("a malformed trace is an error naming the task and leaves the metadata alone", "[trace]") {
  RunMetadata metadata;
  metadata.peak_bytes = 7;
  RunMetadata one;
  one.peak_bytes = 100;
  NodeExecStats stats;
  stats.node = "n";
  stats.op = "Add";
  stats.device = "d";
  stats.start_ns = 1;
  stats.end_ns = 2;
  one.step_stats.push_back(stats);
  std::string good = dist::StepStatsToJson(one).dump();
  dist::AppendStepStats(good, "/job:worker/replica:0/task:1", metadata);
  REQUIRE(metadata.step_stats.size() == 1);
  CHECK(metadata.step_stats[0].node == "n");
  CHECK(metadata.peak_bytes == 100);
  for (const std::string& bad : {std::string("not json"), std::string("{}"),
                                 std::string(R"({"peak_bytes": 1, "step_stats": [{"node": 3}]})"),
                                 std::string(R"({"peak_bytes": 1, "step_stats": [{"node": "n", "op": "Add",
                                    "device": "d", "start_ns": 5, "end_ns": 2, "thread": 0,
                                    "outputs": [], "output_bytes": 0}]})")}) {
    CAPTURE(bad);
    CHECK_THROWS_WITH(dist::AppendStepStats(bad, "/job:worker/replica:0/task:1", metadata),
                      Contains("the trace of task /job:worker/replica:0/task:1 is malformed"));
    CHECK(metadata.step_stats.size() == 1);
  }
}
