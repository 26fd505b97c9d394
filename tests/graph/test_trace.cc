// Step traces: the Chrome trace-event file of a real step, and the text
// summary of a hand-made one (ordering, top-N, per-op totals, alignment).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "graph/file.h"
#include "graph/run_metadata.h"
#include "ops/state.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;

TEST_CASE("Chrome trace of a real step", "[io]") {
  Scope s = Scope::NewRootScope();
  auto v = ops::Variable(s.WithOpName("v"), {2, 3}, DType::kFloat32);
  auto init = ops::Assign(s.WithOpName("init"), v, Tensor::Zeros(DType::kFloat32, {2, 3}));
  auto inc = ops::AssignAdd(s.WithOpName("inc").WithControlDependencies({init}), v,
                            Tensor::Zeros(DType::kFloat32, {2, 3}));
  Session session(s);
  RunMetadata metadata;
  session.Run({}, {inc}, {}, RunOptions{.trace = true}, &metadata);
  REQUIRE(!metadata.step_stats.empty());

  auto dir = std::filesystem::temp_directory_path() / ("dflow_trace_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "trace.json").string();
  WriteChromeTrace(metadata, path);
  auto doc = nlohmann::json::parse(ReadFileToString(path));
  std::set<std::string> names;
  std::set<int> pids_named;
  size_t complete = 0;
  for (const auto& event : doc["traceEvents"]) {
    if (event["ph"] == "M") {
      if (event["name"] == "process_name") pids_named.insert(event["pid"].get<int>());
      continue;
    }
    REQUIRE(event["ph"] == "X");
    ++complete;
    names.insert(event["name"].get<std::string>());
    CHECK(event["ts"].get<double>() >= 0);
    CHECK(event["dur"].get<double>() >= 0);
    CHECK(pids_named.count(event["pid"].get<int>()) == 1);  // named before first use
    CHECK(event["tid"].is_number_integer());
    CHECK(event["args"]["op"] == event["cat"]);
    if (event["name"] == "inc") {
      CHECK(event["args"]["op"] == "AssignAdd");
      CHECK(event["args"]["outputs"] == nlohmann::json::array({"float32[2,3]"}));
    }
  }
  CHECK(complete == metadata.step_stats.size());
  CHECK(names.count("inc") == 1);
  CHECK(names.count("init") == 1);
  CHECK(doc["otherData"]["peak_bytes"] == metadata.peak_bytes);
  testing::ExpectError([&] { WriteChromeTrace(metadata, (dir / "no/such/dir/t.json").string()); },
                       Code::kNotFound, "t.json");
  std::filesystem::remove_all(dir);
}

namespace {

NodeExecStats Stat(std::string node, std::string op, int64_t start, int64_t end) {
  NodeExecStats s;
  s.node = std::move(node);
  s.op = std::move(op);
  s.device = "/device:CPU:0";
  s.start_ns = start;
  s.end_ns = end;
  s.outputs = {"float32[2]"};
  return s;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
    lines.push_back(text.substr(start, end - start));
  return lines;
}

}  // namespace

TEST_CASE("trace summary lists the slowest nodes and time per op", "[io]") {
  RunMetadata m;
  m.step_ns = 2500000;
  m.peak_bytes = 3 << 19;  // 1.5 MiB
  m.step_stats = {Stat("small", "Add", 0, 1000), Stat("dense/matmul", "MatMul", 1000, 7000),
                  Stat("b", "Add", 7000, 9000), Stat("c", "Add", 9000, 10000)};
  std::string summary = TraceSummary(m, 2);
  INFO(summary);
  auto lines = Lines(summary);
  REQUIRE(lines.size() == 11);
  CHECK(lines[0] == "step 2.50 ms, 4 nodes, 10.0 us in kernels, peak memory 1.5 MiB");
  CHECK(lines[2] == "top 2 nodes by time:");
  CHECK(lines[3] == "   node          op        time  share  outputs");
  CHECK(lines[4] == "   dense/matmul  MatMul  6.0 us  60.0%  float32[2]");
  CHECK(lines[5] == "   b             Add     2.0 us  20.0%  float32[2]");
  CHECK(lines[7] == "time per op:");
  CHECK(lines[8] == "   op      count    time  share");
  CHECK(lines[9] == "   MatMul      1  6.0 us  60.0%");
  CHECK(lines[10] == "   Add         3  4.0 us  40.0%");
  CHECK(TraceSummary(RunMetadata{}) == "step 0 ns, 0 nodes, 0 ns in kernels, peak memory 0 B\n");
}
