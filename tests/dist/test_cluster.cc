// The cluster spec (file and DFLOW_CLUSTER) and device-name matching.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "dist/cluster.h"
#include "graph/device.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using dflow::dist::ClusterSpec;
using dflow::testing::ExpectError;

namespace {

constexpr const char* kTwoJobs = R"({
  "cluster": {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"], "ps": ["localhost:2224"]},
  "task": {"type": "worker", "index": 1}
})";

void ExpectBadSpec(const std::string& text, const std::string& message) {
  INFO(text);
  ExpectError([&] { ClusterSpec::Parse(text, "spec.json"); }, Code::kInvalidArgument, message);
}

}  // namespace

TEST_CASE("a cluster spec lists jobs, tasks and devices", "[dist][cluster]") {
  ClusterSpec spec = ClusterSpec::Parse(kTwoJobs, "spec.json");
  CHECK(spec.num_tasks("worker") == 2);
  CHECK(spec.num_tasks("ps") == 1);
  CHECK(spec.num_tasks("chief") == 0);
  CHECK(spec.Address({"worker", 1}) == "127.0.0.1:2223");
  REQUIRE(spec.self());
  CHECK(*spec.self() == dist::TaskId{"worker", 1});
  CHECK(spec.DeviceNames() ==
        std::vector<std::string>{"/job:ps/replica:0/task:0/device:CPU:0",
                                 "/job:worker/replica:0/task:0/device:CPU:0",
                                 "/job:worker/replica:0/task:1/device:CPU:0"});
  ExpectError([&] { spec.Address({"worker", 2}); }, Code::kNotFound, "job 'worker' has 2 task(s)");

  ClusterSpec gpus = ClusterSpec::Parse(R"({"cluster": {"w": ["h:1"]}, "gpus_per_task": 2})", "g");
  CHECK_FALSE(gpus.self());
  CHECK(gpus.DeviceNames() == std::vector<std::string>{"/job:w/replica:0/task:0/device:CPU:0",
                                                       "/job:w/replica:0/task:0/device:GPU:0",
                                                       "/job:w/replica:0/task:0/device:GPU:1"});
}

TEST_CASE("a cluster spec comes from a file or DFLOW_CLUSTER", "[dist][cluster]") {
  auto path = std::filesystem::temp_directory_path() / "dflow_test_cluster.json";
  std::ofstream(path) << kTwoJobs;
  CHECK(ClusterSpec::Load(path.string()).num_tasks("worker") == 2);
  std::filesystem::remove(path);
  ExpectError([&] { ClusterSpec::Load(path.string()); }, Code::kNotFound,
              "dflow_test_cluster.json");

  unsetenv("DFLOW_CLUSTER");
  CHECK_FALSE(ClusterSpec::FromEnvironment());
  setenv("DFLOW_CLUSTER", kTwoJobs, 1);
  auto from_env = ClusterSpec::FromEnvironment();
  REQUIRE(from_env);
  CHECK(from_env->self()->index == 1);
  setenv("DFLOW_CLUSTER", R"({"cluster": {"worker": ["nohost"]}})", 1);
  ExpectError([] { ClusterSpec::FromEnvironment(); }, Code::kInvalidArgument,
              "DFLOW_CLUSTER: cluster.worker[0]: address 'nohost' is not \"host:port\"");
  unsetenv("DFLOW_CLUSTER");
}

TEST_CASE("a bad cluster spec is an error naming the field", "[dist][cluster]") {
  ExpectBadSpec("{", "'spec.json': not valid JSON");
  ExpectBadSpec("[]", "must be a JSON object");
  ExpectBadSpec(R"({"cluster": {}})", "\"cluster\" must be an object of jobs");
  ExpectBadSpec(R"({"cluster": {"w": ["a:1"]}, "extra": 1})", "top level: unknown field \"extra\"");
  ExpectBadSpec(R"({"cluster": {"w": []}})", "cluster.w must be a non-empty list");
  ExpectBadSpec(R"({"cluster": {"w": [5]}})", "cluster.w[0] must be a \"host:port\" string");
  ExpectBadSpec(R"({"cluster": {"w": ["a:0"]}})", "cluster.w[0]: address 'a:0' has a bad port '0'");
  ExpectBadSpec(R"({"cluster": {"w": ["a:70000"]}})", "has a bad port '70000'");
  ExpectBadSpec(R"({"cluster": {"w": ["a:x1"]}})", "has a bad port 'x1'");
  ExpectBadSpec(R"({"cluster": {"w": [":22"]}})", "address ':22' has a bad host");
  ExpectBadSpec(R"({"cluster": {"w": ["a:1", "b:2"], "ps": ["b:2"]}})",
                "cluster.ps[0]: address 'b:2' is already used by w[1]");
  ExpectBadSpec(R"({"cluster": {"bad/job": ["a:1"]}})", "bad job name \"bad/job\"");
  ExpectBadSpec(R"({"cluster": {"w": ["a:1"]}, "task": {"type": "ps", "index": 0}})",
                "task.type: job 'ps' is not in the cluster");
  ExpectBadSpec(R"({"cluster": {"w": ["a:1"]}, "task": {"type": "w", "index": 1}})",
                "task.index 1 is out of range: job 'w' has 1 task(s), 0..0");
  ExpectBadSpec(R"({"cluster": {"w": ["a:1"]}, "task": {"type": "w", "index": -1}})",
                "out of range");
  ExpectBadSpec(R"({"cluster": {"w": ["a:1"]}, "task": {"type": "w"}})",
                "task.index must be an integer");
  ExpectBadSpec(R"({"cluster": {"w": ["a:1"]}, "gpus_per_task": -1})", "gpus_per_task must be");
  CHECK(dist::ParseHostPort("[::1]:2222", "x") == std::pair<std::string, int>{"::1", 2222});
}

TEST_CASE("partial device names match full ones", "[dist][cluster]") {
  DeviceName full = DeviceName::Parse("/job:worker/replica:0/task:1/device:CPU:0");
  for (const char* request : {"/job:worker", "/job:worker/task:1", "/device:CPU:0", "/cpu:0",
                              "/job:worker/replica:0/task:1/device:CPU:0", "/device:CPU", ""})
    CHECK(DeviceName::Parse(request).Matches(full));
  for (const char* request : {"/job:ps", "/task:0", "/device:GPU:0", "/device:CPU:1", "/replica:1"})
    CHECK_FALSE(DeviceName::Parse(request).Matches(full));
  ExpectError([] { DeviceName::Parse("/job:w/task:x"); }, Code::kInvalidArgument, "bad index 'x'");
  ExpectError([] { DeviceName::Parse("/shelf:3"); }, Code::kInvalidArgument,
              "unknown part 'shelf:3'");
}
