// A worker service inside this process, spoken to over loopback like a
// client would: a registered graph runs a step, and malformed requests
// (unknown device, handle or op, missing or mistyped feeds, bad JSON) get
// errors naming what was wrong while the worker keeps serving; a step whose
// client vanished is aborted and forgotten after the step timeout.
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

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
  explicit LoopbackWorker(int64_t step_timeout_ms = kDefaultStepTimeoutMs)
      : service(ClusterSpec::Parse(R"({"cluster": {"worker": ["127.0.0.1:1"]}})", "test"), {"worker", 0}, 1,
                step_timeout_ms) {
    service.WatchClients(server.liveness());
  }
  WorkerService service;
  MessageServer server{"127.0.0.1:0", [this](Message request, MessageServer::Respond respond,
                                             const std::string& client) {
                         service.Handle(std::move(request), std::move(respond), client);
                       }};
  Channel channel{"/job:worker/replica:0/task:0", address()};

  std::string address() const { return StrCat("127.0.0.1:", server.port()); }

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

// A graph whose step never ends by itself: a _Recv of a tensor nobody sends.
std::string StuckGraph() {
  nlohmann::json recv = {{"name", "r"}, {"op", "_Recv"}, {"inputs", nlohmann::json::array()}, {"device", kDevice},
                         {"attrs", {{"recv_device", kDevice}, {"send_device", kDevice},
                                    {"send_device_incarnation", 1}, {"tensor_name", "never:0"},
                                    {"tensor_type", "float32"}, {"shape", {2}}}}};
  nlohmann::json graph = {{"format", "dflow.graph/1"}, {"nodes", {recv}}};
  return nlohmann::json{{"device", kDevice}, {"graph", graph}}.dump();
}

// Waits (at most 20 s) until `done` holds; false when it never did.
bool Eventually(const std::function<bool()>& done) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// A peer's RecvTensor for a tensor of `step_id` that this task sends (never, here).
Message RecvTensorRequest(const WorkerService& service, int64_t step_id) {
  Message request;
  request.type = MessageType::kRecvTensor;
  request.text = KeyToWire({kDevice, service.incarnation(), "/job:worker/replica:0/task:1/device:CPU:0",
                            "t:0", step_id});
  return request;
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

TEST_CASE("a step whose client vanished is aborted and forgotten after the step timeout", "[worker]") {
  LoopbackWorker worker(1000);
  Message registered = worker.Call(MessageType::kRegisterGraph, StuckGraph());
  int64_t handle = nlohmann::json::parse(registered.text).at("handle");
  ChannelOptions fast_heartbeats;
  fast_heartbeats.heartbeat_interval_ms = 50;
  auto client = std::make_unique<Channel>("/job:worker/replica:0/task:0", worker.address(), fast_heartbeats);
  Message run;
  run.type = MessageType::kRunStep;
  run.text = nlohmann::json{{"step_id", 5}, {"graphs", {handle}}, {"num_args", 0}, {"num_retvals", 0}}.dump();
  client->Call(std::move(run), [](std::optional<Error>, Message) {});
  REQUIRE(Eventually([&] { return worker.service.num_steps() == 1; }));
  // A peer waits for one of the step's tensors.
  std::promise<Error> peer_failed;
  worker.channel.Call(RecvTensorRequest(worker.service, 5), [&](std::optional<Error> error, Message) {
    peer_failed.set_value(error.value_or(Error(Code::kInternal, "the RecvTensor succeeded")));
  });
  // A live client's step outlives the timeout: its heartbeats keep it.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  CHECK(worker.service.num_steps() == 1);

  client.reset();  // the client vanishes: no more heartbeats
  auto failed = peer_failed.get_future();
  REQUIRE(failed.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK_THAT(failed.get().message(), Contains("step 5 was aborted") && Contains("client was not heard from"));
  CHECK(Eventually([&] { return worker.service.num_steps() == 0; }));
}

TEST_CASE("a step only peers asked for is aborted when its RunStep never comes", "[worker]") {
  LoopbackWorker worker(300);
  Message request = RecvTensorRequest(worker.service, 9);
  request.deadline_ms = DeadlineIn(20000);  // so that a worker that never reaps fails, not hangs
  CHECK_THROWS_WITH(worker.channel.CallAndWait(std::move(request)),
                    Contains("step 9 was aborted") && Contains("RunStep did not come within 300 ms"));
  CHECK(worker.service.num_steps() == 0);
  CHECK_THROWS_WITH(WorkerService(ClusterSpec::Parse(R"({"cluster": {"worker": ["127.0.0.1:1"]}})", "test"),
                                  {"worker", 0}, 1, -5),
                    Contains("step timeout") && Contains("-5"));
}
