// A worker service inside this process, spoken to over loopback like a
// client would: a registered graph runs a step, and malformed requests
// (unknown device, handle or op, missing or mistyped feeds, bad JSON) get
// errors naming what was wrong while the worker keeps serving.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "dist/worker_service.h"
#include "graph/graph_io.h"
#include "graph/passes.h"
#include "ops/ops.h"

using namespace dflow;
using namespace dflow::dist;
using Catch::Matchers::Contains;

namespace {

const std::string kDevice = "/job:worker/replica:0/task:0/device:CPU:0";

struct LoopbackWorker {
  WorkerService service{ClusterSpec::Parse(R"({"cluster": {"worker": ["127.0.0.1:1"]}})", "test"),
                        {"worker", 0}, 1};
  MessageServer server{"127.0.0.1:0", [this](Message request, MessageServer::Respond respond) {
                         service.Handle(std::move(request), std::move(respond));
                       }};
  Channel channel{"/job:worker/replica:0/task:0", StrCat("127.0.0.1:", server.port())};

  Message Call(MessageType type, const std::string& text, std::vector<WireTensor> tensors = {}) {
    Message request;
    request.type = type;
    request.text = text;
    request.tensors = std::move(tensors);
    return channel.CallAndWait(std::move(request));
  }
};

// y = x * 2 with x fed as arg 0 and y fetched as ret 0, as graph JSON.
std::string DoublerGraph(const std::string& device) {
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, Shape({2}));
  auto y = ops::Mul(s.WithOpName("y"), x, ops::Const(s, Tensor::FromVector<float>({2, 2})));
  auto graph = ExtractForExecution(s.graph(), {{x.node(), 0}}, {{y.node(), 0}}, {});
  return nlohmann::ordered_json{{"device", device}, {"graph", ToJson(*graph)}}.dump();
}

std::string RunStepText(int64_t handle) {
  return nlohmann::json{{"step_id", 1}, {"graphs", {handle}}, {"num_args", 1}, {"num_retvals", 1}}.dump();
}

}  // namespace

TEST_CASE("a worker runs a registered graph and refuses malformed requests", "[worker]") {
  LoopbackWorker worker;
  Message registered = worker.Call(MessageType::kRegisterGraph, DoublerGraph(kDevice));
  int64_t handle = nlohmann::json::parse(registered.text).at("handle");
  Tensor x = Tensor::FromVector<float>({1.5f, -2});
  Message reply = worker.Call(MessageType::kRunStep, RunStepText(handle), {{"arg:0", x}});
  REQUIRE(reply.tensors.size() == 1);
  CHECK(reply.tensors[0].name == "ret:0");
  CHECK(reply.tensors[0].value.Equals(Tensor::FromVector<float>({3, -4})));

  CHECK_THROWS_WITH(worker.Call(MessageType::kRegisterGraph, DoublerGraph("/job:worker/replica:0/task:0/device:CPU:7")),
                    Contains("has no device") && Contains("CPU:7"));
  CHECK_THROWS_WITH(worker.Call(MessageType::kRunStep, RunStepText(999), {{"arg:0", x}}),
                    Contains("has no graph 999"));
  CHECK_THROWS_WITH(worker.Call(MessageType::kRunStep, RunStepText(handle)), Contains("needs feed arg:0"));
  CHECK_THROWS_WITH(worker.Call(MessageType::kRunStep, RunStepText(handle), {{"arg:x", x}}),
                    Contains("feed 'arg:x'"));
  CHECK_THROWS_WITH(worker.Call(MessageType::kRunStep, RunStepText(handle), {{"arg:0", Tensor::Scalar<int32_t>(1)}}),
                    Contains("needs float32"));
  CHECK_THROWS_WITH(worker.Call(MessageType::kRunStep, "{not json"), Contains("bad RunStep request"));
  CHECK_THROWS_WITH(worker.Call(MessageType::kRunStep, R"({"step_id": 1})"), Contains("field 'num_args'"));
  CHECK_THROWS_WITH(worker.Call(MessageType::kRegisterGraph,
                                R"({"device": ")" + kDevice + R"(", "graph": {"format": "dflow.graph/1",
                                    "nodes": [{"name": "x", "op": "Shell", "inputs": [], "attrs": {}}]}})"),
                    Contains("Shell"));
  CHECK_THROWS_WITH(worker.Call(MessageType::kRecvTensor, R"({"send_device": 3})"), Contains("bad RecvTensor key"));
  // Still serving.
  CHECK(worker.Call(MessageType::kRunStep, RunStepText(handle), {{"arg:0", x}}).tensors.size() == 1);
}
