// Measured profiles (graph/profile.h) in the placer's cost model: a traced
// step read back from RunMetadata and from its Chrome trace file, bad trace
// files named, and a measured time that moves a node to another device.
#include <catch2/catch.hpp>
#include <filesystem>
#include <unistd.h>

#include "graph/placement.h"
#include "graph/profile.h"
#include "graph/file.h"
#include "graph/session.h"
#include "ops/ops.h"
#include "tests/dist/dist_test_util.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

std::filesystem::path TempDir() {
  auto dir = std::filesystem::temp_directory_path() /
             ("dflow_profile_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// Two element-wise ops reading one 1 MB tensor: cheap by the FLOP estimate.
void AddTwoReaders(const Scope& s) {
  Output x = ZerosConst(s, "x", Shape({512, 512}));
  ops::Exp(s.WithOpName("a"), x);
  ops::Log(s.WithOpName("b"), x);
}

}  // namespace

TEST_CASE("a measured profile moves slow independent work to the other device",
          "[dist][profile]") {
  Scope s = Scope::NewRootScope();
  AddTwoReaders(s);
  // Estimated, each op takes ~26 us and shipping x to the other worker
  // ~1 ms: b waits for a on the same device.
  Placement estimated = Place(s.graph(), kTwoWorkers);
  CHECK(estimated.DeviceOf("a") == estimated.DeviceOf("b"));

  // Measured, each takes 10 ms: shipping x (1 ms) beats waiting for a (10 ms).
  PlacementOptions options;
  options.cost.measured = {{"a", {0.010, "CPU"}}, {"b", {0.010, "CPU"}}};
  Placement measured = Place(s.graph(), kTwoWorkers, options);
  CHECK(measured.DeviceOf("a") != measured.DeviceOf("b"));
  CHECK(measured.estimated_step_seconds > 0.010);
  CHECK(measured.estimated_step_seconds < 0.012);
  INFO(measured.nodes.at("b").reason);
  CHECK(measured.nodes.at("b").reason.find("cost model (measured 10000 us)") != std::string::npos);

  // Times measured on another device type say nothing about these CPUs.
  options.cost.measured = {{"a", {0.010, "GPU"}}, {"b", {0.010, "GPU"}}};
  Placement other_type = Place(s.graph(), kTwoWorkers, options);
  CHECK(other_type.DeviceOf("a") == other_type.DeviceOf("b"));
}

TEST_CASE("a traced step gives the same profile from RunMetadata and from its trace file",
          "[dist][profile]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, Shape({64, 64}));
  ops::Relu(s.WithOpName("y"), ops::MatMul(s.WithOpName("mm"), x, x));
  Session session(s);
  RunMetadata metadata;
  session.Run({{x, RandomTensor(DType::kFloat32, Shape({64, 64}), 1)}}, {TensorName("y")}, {},
              {.trace = true}, &metadata);
  MeasuredProfile direct = ProfileFromRunMetadata(metadata);
  REQUIRE(direct.count("mm") == 1);
  CHECK(direct.at("mm").device_type == "CPU");
  CHECK(direct.at("mm").seconds > 0);

  std::string path = (TempDir() / "step.json").string();
  WriteChromeTrace(metadata, path);
  MeasuredProfile loaded = LoadProfile(path);
  REQUIRE(loaded.size() == direct.size());
  for (const auto& [node, time] : direct) {
    INFO(node);
    REQUIRE(loaded.count(node) == 1);
    CHECK(loaded.at(node).device_type == time.device_type);
    CHECK(loaded.at(node).seconds == Approx(time.seconds).margin(1e-9));  // written in us
  }
}

TEST_CASE("bad profile files are errors naming the file and the problem", "[dist][profile]") {
  auto dir = TempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    std::string path = (dir / name).string();
    WriteFileAtomic(path, text);
    return path;
  };
  ExpectError([&] { LoadProfile((dir / "missing.json").string()); }, Code::kNotFound,
              "missing.json");
  std::string not_json = write("not_json.json", "{ nope");
  ExpectError([&] { LoadProfile(not_json); }, Code::kInvalidArgument,
              "not_json.json' is not a Chrome trace");
  std::string no_events = write("no_events.json", R"({"nodes": []})");
  ExpectError([&] { LoadProfile(no_events); }, Code::kInvalidArgument,
              "no_events.json' has no traceEvents list");
  std::string no_dur = write("no_dur.json", R"({"traceEvents": [
      {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "/device:CPU:0"}},
      {"name": "mm", "ph": "X", "pid": 0, "ts": 0}]})");
  ExpectError([&] { LoadProfile(no_dur); }, Code::kInvalidArgument,
              "a node event needs a name, a non-negative dur and a pid");
  std::string empty = write("empty.json", R"({"traceEvents": []})");
  ExpectError([&] { LoadProfile(empty); }, Code::kInvalidArgument,
              "empty.json' has no node timings on a device");
  std::filesystem::remove_all(dir);
}
