// Partitioning: every node in exactly one partition, one _Send/_Recv pair per
// (tensor, destination device), control edges carried by dummy tensors, and
// partitions that are valid graphs surviving a round trip through graph JSON.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "graph/partition.h"
#include "graph/graph_io.h"
#include "ops/ops.h"
#include "tests/dist/dist_test_util.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

using Parts = std::vector<DevicePartition>;

const Node* FindIn(const Parts& parts, const std::string& device, const std::string& name) {
  for (const auto& p : parts)
    if (p.device == device) return p.graph->FindNode(name);
  return nullptr;
}

std::string KeyOf(const Node& n) {
  return n.attr<std::string>("send_device") + " -> " + n.attr<std::string>("recv_device") + " " +
         n.attr<std::string>("tensor_name");
}

// The invariants every partitioning must keep, checked against the original.
void CheckInvariants(const Graph& graph, const Placement& placement, const Parts& parts) {
  // Each original node is in exactly one partition: its placement's.
  for (const Node* node : graph.nodes()) {
    int copies = 0;
    for (const auto& p : parts) copies += p.graph->FindNode(node->name()) != nullptr;
    INFO(node->name());
    CHECK(copies == 1);
    const Node* copy = FindIn(parts, placement.DeviceOf(node->name()), node->name());
    REQUIRE(copy);
    CHECK(copy->op() == node->op());
    CHECK(copy->assigned_device() == placement.DeviceOf(node->name()));
  }
  // Sends and Recvs pair up one to one, each on its own side.
  std::map<std::string, int> sends, recvs;
  for (const auto& p : parts)
    for (const Node* n : p.graph->nodes()) {
      if (n->op() == "_Send") {
        CHECK(n->attr<std::string>("send_device") == p.device);
        CHECK(++sends[KeyOf(*n)] == 1);
      } else if (n->op() == "_Recv") {
        CHECK(n->attr<std::string>("recv_device") == p.device);
        CHECK(++recvs[KeyOf(*n)] == 1);
      }
    }
  CHECK(sends == recvs);
  // Each cut data edge reads from the Recv of exactly its tensor; the number
  // of pairs is the number of distinct (tensor, destination device) cuts.
  std::set<std::string> cuts;
  for (const Node* node : graph.nodes()) {
    const std::string& dst = placement.DeviceOf(node->name());
    const Node* copy = FindIn(parts, dst, node->name());
    for (int i = 0; i < node->num_inputs(); ++i) {
      const NodeOut& in = node->input(i);
      const std::string& src = placement.DeviceOf(in.node->name());
      if (src == dst) {
        CHECK(copy->input(i).node->name() == in.node->name());
        continue;
      }
      std::string tensor = StrCat(in.node->name(), ":", in.index);
      cuts.insert(src + " -> " + dst + " " + tensor);
      const Node* recv = copy->input(i).node;
      CHECK(recv->op() == "_Recv");
      CHECK(KeyOf(*recv) == src + " -> " + dst + " " + tensor);
      CHECK(recv->output_dtype(0) == in.node->output_dtype(in.index));
    }
    for (const Node* control : node->control_inputs())
      if (placement.DeviceOf(control->name()) != dst)
        cuts.insert(placement.DeviceOf(control->name()) + " -> " + dst + " ^" + control->name());
  }
  CHECK(cuts.size() == sends.size());
  for (const auto& [key, count] : sends) CHECK(cuts.count(key));
  // Each partition is a valid graph that survives graph JSON unchanged.
  for (const auto& p : parts) {
    p.graph->Validate();
    auto json = ToJson(*p.graph);
    CHECK(ToJson(*GraphFromJson(json, p.device)) == json);
  }
}

// a on worker 0 feeds b and c on worker 1 (one pair serves both); b comes
// back to worker 0; d on worker 0 must run before f and g on worker 1.
Scope CrossingGraph() {
  Scope s = Scope::NewRootScope();
  Scope w0 = s.WithDevice(kWorker0), w1 = s.WithDevice(kWorker1);
  Output a = ZerosConst(w0, "a", Shape({2, 3}));
  Output b = ops::Neg(w1.WithOpName("b"), a);
  ops::Exp(w1.WithOpName("c"), a);
  Output d = ops::Mul(w0.WithOpName("d"), a, a);
  ops::Add(w0.WithOpName("e"), b, d);
  ops::NoOp(w1.WithOpName("f").WithControlDependencies({d}));
  ops::NoOp(w1.WithOpName("g").WithControlDependencies({d}));
  return s;
}

int CountOp(const Graph& graph, const std::string& op) {
  int n = 0;
  for (const Node* node : graph.nodes()) n += node->op() == op;
  return n;
}

}  // namespace

TEST_CASE("cut edges become one Send/Recv pair per tensor and device", "[dist][partition]") {
  Scope s = CrossingGraph();
  Placement placement = Place(s.graph(), kTwoWorkers);
  PartitionOptions options;
  options.incarnations[kWorker0] = 77;
  Parts parts = Partition(s.graph(), placement, options);
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].device == kWorker0);
  CheckInvariants(s.graph(), placement, parts);
  const Graph& g0 = *parts[0].graph;
  const Graph& g1 = *parts[1].graph;
  // a:0 to worker 1 (once for b and c), ^d to worker 1 (once for f and g), b:0 back.
  CHECK(CountOp(g0, "_Send") == 2);
  CHECK(CountOp(g1, "_Recv") == 2);
  CHECK(CountOp(g1, "_Send") == 1);
  CHECK(CountOp(g0, "_Recv") == 1);
  const Node& b = g1.GetNode("b");
  CHECK(b.input(0).node == g1.GetNode("c").input(0).node);
  CHECK(b.input(0).node->attr<int64_t>("send_device_incarnation") == 77);
  CHECK(b.input(0).node->output_shape(0) == Shape({2, 3}));
  CHECK(g0.GetNode("e").input(0).node->attr<int64_t>("send_device_incarnation") == 1);
}

TEST_CASE("a cross-device control edge travels as an empty dummy tensor", "[dist][partition]") {
  Scope s = CrossingGraph();
  Placement placement = Place(s.graph(), kTwoWorkers);
  Parts parts = Partition(s.graph(), placement);
  const Graph& g0 = *parts[0].graph;
  const Graph& g1 = *parts[1].graph;
  const Node* recv = g1.GetNode("f").control_inputs().at(0);
  CHECK(recv == g1.GetNode("g").control_inputs().at(0));
  CHECK(recv->op() == "_Recv");
  CHECK(recv->attr<std::string>("tensor_name") == "^d");
  CHECK(recv->output_shape(0) == Shape({0}));
  // On worker 0: d -> (control) dummy Const [0] -> _Send.
  const Node* dummy = nullptr;
  for (const Node* n : g0.nodes())
    if (n->op() == "_Send" && n->attr<std::string>("tensor_name") == "^d") dummy = n->input(0).node;
  REQUIRE(dummy);
  CHECK(dummy->op() == "Const");
  CHECK(dummy->output_shape(0) == Shape({0}));
  CHECK(dummy->control_inputs() == std::vector<Node*>{&g0.GetNode("d")});
}

TEST_CASE("a graph on one device gives one partition without Send/Recv", "[dist][partition]") {
  Scope s = Scope::NewRootScope();
  ops::Neg(s.WithOpName("b"), ZerosConst(s, "a", Shape({2})));
  Placement placement = Place(s.graph(), {"/device:CPU:0"});
  Parts parts = Partition(s.graph(), placement);
  REQUIRE(parts.size() == 1);
  CHECK(parts[0].device == "/device:CPU:0");
  CHECK(parts[0].graph->num_nodes() == 2);
  CheckInvariants(s.graph(), placement, parts);
}

TEST_CASE("a placed training graph partitions with its variables whole", "[dist][partition]") {
  Scope s = Scope::NewRootScope();
  Output w =
      ops::Variable(s.WithOpName("w").WithDevice("/job:ps"), Shape({64, 64}), DType::kFloat32);
  ops::Assign(s.WithOpName("w/init"), w, ZerosConst(s, "w/zeros", Shape({64, 64})));
  Output x = ZerosConst(s.WithDevice("/job:worker/task:0"), "x", Shape({64, 64}));
  Output y = ops::MatMul(s.WithOpName("y"), x, w);
  Output y2 = ops::MatMul(s.WithOpName("y2").WithDevice("/job:worker/task:1"), x, w);
  ops::ApplyGradientDescent(s.WithOpName("apply"), w, 0.5f, ops::Add(s.WithOpName("g"), y, y2));
  Placement placement = Place(s.graph(), kPsAndWorkers);
  Parts parts = Partition(s.graph(), placement);
  CheckInvariants(s.graph(), placement, parts);
  for (const char* name : {"w", "w/init", "apply"}) CHECK(placement.DeviceOf(name) == kPs);

  auto json = PartitionsToJson(parts);
  CHECK(json["partitions"].size() == parts.size());
  std::string dot = PartitionsToDot(parts);
  CHECK(dot.find("subgraph \"cluster_0\"") != std::string::npos);
  CHECK(dot.find("label=\"" + kPs + "\"") != std::string::npos);
  CHECK(dot.find("color=\"#d62728\", fontcolor=\"#d62728\", label=\"x:0\"") != std::string::npos);
}

TEST_CASE("partitioning needs every node placed", "[dist][partition]") {
  Scope s = CrossingGraph();
  Placement placement = Place(s.graph(), kTwoWorkers);
  placement.nodes.erase("e");
  ExpectError([&] { Partition(s.graph(), placement); }, Code::kNotFound,
              "node 'e' has no device in this placement");
  CHECK(DeviceFileName(kWorker1) == "worker.1.CPU.0");
  CHECK(DeviceFileName("/device:CPU:0") == "CPU.0");
}
