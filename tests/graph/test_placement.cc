// Placement: requests (full and partial), colocation of a variable with the
// ops that take its ref, kernel availability, soft placement, and the cost
// model's choices.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "graph/placement.h"
#include "ops/ops.h"
#include "tests/dist/dist_test_util.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

const std::string kGpuTask = "/job:w/replica:0/task:0/device:GPU:0";
const std::string kCpuTask = "/job:w/replica:0/task:0/device:CPU:0";

bool Contains(const std::string& text, const std::string& part) {
  INFO(text);
  return text.find(part) != std::string::npos;
}

// Two independent MatMul chains of n x n float32 matrices.
void AddMatMulChain(const Scope& s, const std::string& tag, int64_t n) {
  Output x = ZerosConst(s, "x" + tag, Shape({n, n}));
  Output w = ZerosConst(s, "w" + tag, Shape({n, n}));
  ops::Relu(s.WithOpName("relu" + tag), ops::MatMul(s.WithOpName("mm" + tag), x, w));
}

}  // namespace

TEST_CASE("full and partial device requests are honoured", "[dist][placement]") {
  Scope s = Scope::NewRootScope();
  Output a = ZerosConst(s.WithDevice("/job:worker/task:1"), "a", Shape({2}));
  Output b = ops::Neg(s.WithOpName("b").WithDevice(kWorker0), a);
  ops::Exp(s.WithOpName("c").WithDevice("/job:ps"), b);
  Placement p = Place(s.graph(), kPsAndWorkers);
  CHECK(p.DeviceOf("a") == kWorker1);
  CHECK(p.DeviceOf("b") == kWorker0);
  CHECK(p.DeviceOf("c") == kPs);
  CHECK(Contains(p.nodes.at("a").reason, "Const 'a' requests '/job:worker/task:1'"));
  CHECK(p.estimated_step_seconds > 0);

  ExpectError([&] { p.DeviceOf("nope"); }, Code::kNotFound, "node 'nope'");
  Graph& g = const_cast<Graph&>(s.graph());
  AssignDevices(g, p);
  CHECK(g.GetNode("c").assigned_device() == kPs);
}

TEST_CASE("a request no device matches is an error naming the op", "[dist][placement]") {
  Scope s = Scope::NewRootScope();
  ZerosConst(s.WithDevice("/job:ps"), "a", Shape({2}));
  ExpectError([&] { Place(s.graph(), kTwoWorkers); }, Code::kInvalidArgument,
              "Const 'a' requests device '/job:ps' but no device matches it; devices: " + kWorker0);
  Scope bad = Scope::NewRootScope();
  ZerosConst(bad.WithDevice("/job:ps/task:x"), "a", Shape({2}));
  ExpectError([&] { Place(bad.graph(), kTwoWorkers); }, Code::kInvalidArgument,
              "Const 'a': malformed device name");
}

TEST_CASE("a bad device list is an error naming the entry", "[dist][placement]") {
  Scope s = Scope::NewRootScope();
  ZerosConst(s, "a", Shape({2}));
  ExpectError([&] { Place(s.graph(), {}); }, Code::kInvalidArgument, "the device list is empty");
  ExpectError([&] { Place(s.graph(), {"/job:worker"}); }, Code::kInvalidArgument,
              "device '/job:worker' is not a full device name");
  ExpectError(
      [&] {
        Place(s.graph(), {kWorker0, "/job:worker/replica:0/task:0/cpu:0"});
      },
      Code::kInvalidArgument, "appears twice");
}

TEST_CASE("a variable and the ops that take its ref share a device", "[dist][placement]") {
  Scope s = Scope::NewRootScope();
  Output v = ops::Variable(s.WithOpName("v").WithDevice("/job:ps"), Shape({2}), DType::kFloat32);
  ops::Assign(s.WithOpName("init"), v, ZerosConst(s, "zeros", Shape({2})));
  Output grad = ZerosConst(s.WithDevice(kWorker1), "grad", Shape({2}));
  ops::ApplyGradientDescent(s.WithOpName("apply"), v, 0.1f, grad);
  ops::Neg(s.WithOpName("read"), v);
  Placement p = Place(s.graph(), kPsAndWorkers);
  for (const char* name : {"v", "init", "apply"}) CHECK(p.DeviceOf(name) == kPs);
  CHECK(p.DeviceOf("grad") == kWorker1);
  CHECK(Contains(p.nodes.at("apply").reason, "colocation group [v, init, apply] of variable 'v'"));
  CHECK(Contains(p.nodes.at("apply").reason, "VariableV2 'v' requests '/job:ps'"));
}

TEST_CASE("conflicting requests in a colocation group name the group", "[dist][placement]") {
  Scope s = Scope::NewRootScope();
  Output v = ops::Variable(s.WithOpName("v").WithDevice("/job:ps"), Shape({2}), DType::kFloat32);
  ops::ApplyGradientDescent(s.WithOpName("apply").WithDevice("/job:worker/task:1"), v, 0.1f,
                            ZerosConst(s, "grad", Shape({2})));
  for (bool soft : {false, true}) {
    PlacementOptions options;
    options.allow_soft_placement = soft;
    ExpectError(
        [&] { Place(s.graph(), kPsAndWorkers, options); }, Code::kInvalidArgument,
        "ApplyGradientDescent 'apply' requests device '/job:worker/task:1' but it is in the "
        "colocation group [v, apply] of variable 'v', which must share one device, and "
        "VariableV2 'v' requests '/job:ps' rule that out");
  }
}

TEST_CASE("a request for a device without a kernel is an error unless soft", "[dist][placement]") {
  Scope s = Scope::NewRootScope();
  Output x = ZerosConst(s, "x", Shape({2, 2}));
  // LeakyRelu has no GPU kernel (a CUDA build has GPU kernels for MatMul and Const).
  ops::LeakyRelu(s.WithOpName("mm").WithDevice("/device:GPU:0"), x);
  const std::vector<std::string> devices = {kCpuTask, kGpuTask};
  ExpectError(
      [&] { Place(s.graph(), devices); }, Code::kInvalidArgument,
      "LeakyRelu 'mm' requests device '/device:GPU:0' but LeakyRelu has no kernel for float32 "
      "there; devices with a kernel: " +
          kCpuTask);
  PlacementOptions soft;
  soft.allow_soft_placement = true;
  Placement p = Place(s.graph(), devices, soft);
  CHECK(p.DeviceOf("mm") == kCpuTask);
  CHECK(Contains(p.nodes.at("mm").reason,
                 "soft placement: no device with a kernel matches '/device:GPU:0'"));

  // Only the GPU offered: LeakyRelu has no kernel there in a CUDA build, and
  // nothing has one without CUDA (the message then names Const 'x').
  ExpectError([&] { Place(s.graph(), {kGpuTask}); }, Code::kUnimplemented,
              "(float32); devices offered: " + kGpuTask);
}

TEST_CASE("soft placement keeps the requested task when it can", "[dist][placement]") {
  Scope s = Scope::NewRootScope();
  // A bool variable: the GPU kernels of VariableV2 and Assign are numeric only.
  Output v = ops::Variable(s.WithOpName("v").WithDevice("/job:w/task:1/device:GPU:0"), Shape({2}),
                           DType::kBool);
  ops::Assign(s.WithOpName("init"), v, ops::Const(s.WithOpName("zeros"), Tensor::Zeros(DType::kBool, {2})));
  const std::vector<std::string> devices = {
      "/job:w/replica:0/task:0/device:CPU:0", "/job:w/replica:0/task:0/device:GPU:0",
      "/job:w/replica:0/task:1/device:CPU:0", "/job:w/replica:0/task:1/device:GPU:0"};
  ExpectError([&] { Place(s.graph(), devices); }, Code::kInvalidArgument,
              "it is in the colocation group [v, init]");
  PlacementOptions soft;
  soft.allow_soft_placement = true;
  Placement p = Place(s.graph(), devices, soft);
  CHECK(p.DeviceOf("v") == devices[2]);
  CHECK(p.DeviceOf("init") == devices[2]);
  CHECK(Contains(p.nodes.at("v").reason, "relaxed to '/job:w/task:1'"));
}

TEST_CASE("a fallback device takes only what no other device can run", "[placement]") {
  Scope s = Scope::NewRootScope();
  Output x = ZerosConst(s, "x", Shape({2, 2}));
  ops::Neg(s.WithOpName("anywhere"), x);
  ops::Neg(s.WithOpName("asks"), ops::Neg(s.WithOpName("on_fallback").WithDevice(kCpuTask), x));
  // Two CPUs, the second a fallback: what may go anywhere stays on the first.
  const std::string other_cpu = "/job:w/replica:0/task:0/device:CPU:1";
  PlacementOptions options;
  options.fallback_devices = {kCpuTask};
  Placement p = Place(s.graph(), {other_cpu, kCpuTask}, options);
  CHECK(p.DeviceOf("anywhere") == other_cpu);
  CHECK(p.DeviceOf("asks") == other_cpu);
  CHECK(p.DeviceOf("on_fallback") == kCpuTask);  // requested there

  // A GPU and the host CPU as its fallback: LeakyRelu has no GPU kernel (and
  // without CUDA nothing has), so it runs on the fallback, and says why.
  Scope g = Scope::NewRootScope();
  ops::LeakyRelu(g.WithOpName("leaky"), ZerosConst(g, "y", Shape({2})));
  p = Place(g.graph(), {kGpuTask, kCpuTask}, options);
  CHECK(p.DeviceOf("leaky") == kCpuTask);
  CHECK(Contains(p.nodes.at("leaky").reason,
                 "soft placement: no kernel on " + kGpuTask + ", so the fallback device"));

  options.fallback_devices = {"/device:CPU:7"};
  ExpectError([&] { Place(g.graph(), {kGpuTask, kCpuTask}, options); }, Code::kInvalidArgument,
              "fallback device '/device:CPU:7' is not in the device list");
}

TEST_CASE("the cost model spreads independent heavy chains over devices",
          "[dist][placement][cost]") {
  Scope s = Scope::NewRootScope();
  AddMatMulChain(s, "a", 256);
  AddMatMulChain(s, "b", 256);
  Placement one = Place(s.graph(), {kWorker0});
  Placement two = Place(s.graph(), kTwoWorkers);
  CHECK(two.DeviceOf("mma") != two.DeviceOf("mmb"));
  // Each chain stays whole: its inputs are made where it runs.
  for (const char* chain : {"a", "b"})
    for (const char* node : {"x", "w", "relu"})
      CHECK(two.DeviceOf(node + std::string(chain)) == two.DeviceOf("mm" + std::string(chain)));
  CHECK(Contains(two.nodes.at("mmb").reason, "cost model: finishes at"));
  CHECK(Contains(two.nodes.at("xb").reason, "placed with its first consumer MatMul 'mmb'"));
  // Two MatMuls of 2·256³ flops at 2e10 flop/s: ~1.7 ms each; in parallel the step takes half as
  // long.
  CHECK(two.estimated_step_seconds < 0.6 * one.estimated_step_seconds);
}

TEST_CASE("the cost model keeps cheap work together when transfers cost more",
          "[dist][placement][cost]") {
  Scope s = Scope::NewRootScope();
  Output x = ZerosConst(s, "x", Shape({512, 512}));  // 1 MB: ~1 ms over the cross-task link
  Output a = ops::Neg(s.WithOpName("a"), x);
  Output b = ops::Exp(s.WithOpName("b"), x);
  ops::Add(s.WithOpName("sum"), a, b);
  Placement p = Place(s.graph(), kTwoWorkers);
  for (const char* name : {"x", "a", "b", "sum"}) CHECK(p.DeviceOf(name) == kWorker0);

  // The same shape of graph with MatMuls is worth splitting: 1 ms of transfer
  // against ~13 ms of compute.
  Scope heavy = Scope::NewRootScope();
  Output hx = ZerosConst(heavy, "x", Shape({512, 512}));
  Output ha = ops::MatMul(heavy.WithOpName("a"), hx, hx);
  Output hb = ops::MatMul(heavy.WithOpName("b"), hx, hx);
  ops::Add(heavy.WithOpName("sum"), ha, hb);
  Placement q = Place(heavy.graph(), kTwoWorkers);
  CHECK(q.DeviceOf("a") != q.DeviceOf("b"));
}

TEST_CASE("placement shows as text and JSON", "[dist][placement]") {
  Scope s = Scope::NewRootScope();
  ops::Neg(s.WithOpName("b"), ZerosConst(s.WithDevice("/job:ps"), "a", Shape({2})));
  Placement p = Place(s.graph(), kPsAndWorkers);
  std::string text = PlacementToText(s.graph(), p);
  CHECK(Contains(text, "a (Const) -> " + kPs + ": Const 'a' requests '/job:ps'"));
  auto json = PlacementToJson(s.graph(), p);
  CHECK(json["nodes"][0]["name"] == "a");
  CHECK(json["nodes"][0]["device"] == kPs);
  CHECK(json["devices"].size() == 3);
}
