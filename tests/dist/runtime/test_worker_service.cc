// A worker service inside this process, spoken to over loopback like a
// client would: a registered graph runs a step, and malformed requests
// (unknown device, handle or op, missing or mistyped feeds, bad JSON) get
// errors naming what was wrong while the worker keeps serving; a step whose
// client vanished is aborted and forgotten after the step timeout. Tensors a
// peer pushes reach their Recvs, whether they come before the step or after;
// a Recv waiting for a peer that stops answering fails naming it.
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <optional>
#include <nlohmann/json.hpp>
#include <thread>

#include "dist/runtime/worker_service.h"
#include "graph/graph_io.h"
#include "graph/passes.h"
#include "ops/ops.h"

using namespace dflow;
using namespace dflow::dist;
using Catch::Matchers::Contains;

namespace {

const std::string kDevice = "/job:worker/replica:0/task:0/device:CPU:0";

const std::string kPeerTask = "/job:worker/replica:0/task:1";
const std::string kPeerDevice = kPeerTask + "/device:CPU:0";

struct LoopbackWorker {
  // Task 0 of `cluster_json` (its own address there is not used: it serves on a free port).
  explicit LoopbackWorker(int64_t step_timeout_ms = kDefaultStepTimeoutMs,
                          const std::string& cluster_json = R"({"cluster": {"worker": ["127.0.0.1:1"]}})")
      : service(ClusterSpec::Parse(cluster_json, "test"), {"worker", 0}, 1, step_timeout_ms) {
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

// `tensor_name` of the step received from `send_device` and fetched as ret 0.
// Sent by nobody on this task, so alone the step never ends.
std::string RecvGraph(const std::string& send_device, int64_t incarnation, const std::string& tensor_name) {
  nlohmann::json recv = {{"name", "r"}, {"op", "_Recv"}, {"inputs", nlohmann::json::array()}, {"device", kDevice},
                         {"attrs", {{"recv_device", kDevice}, {"send_device", send_device},
                                    {"send_device_incarnation", incarnation}, {"tensor_name", tensor_name},
                                    {"tensor_type", "float32"}, {"shape", {2}}}}};
  nlohmann::json ret = {{"name", "ret"}, {"op", "_Retval"}, {"inputs", {"r"}}, {"device", kDevice},
                        {"attrs", {{"T", "float32"}, {"index", 0}}}};
  nlohmann::json graph = {{"format", "dflow.graph/1"}, {"nodes", {recv, ret}}};
  return nlohmann::json{{"device", kDevice}, {"graph", graph}}.dump();
}

std::string StuckGraph() { return RecvGraph(kDevice, 1, "never:0"); }

// Waits (at most 20 s) until `done` holds; false when it never did.
bool Eventually(const std::function<bool()>& done) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// What a peer's _Send pushes: `value` for the Recv of `tensor_name` in `step_id` on kDevice.
Message PushedTensor(int64_t step_id, const std::string& tensor_name, Tensor value,
                     const std::string& recv_device = kDevice) {
  Message push;
  push.type = MessageType::kSendTensor;
  push.text = KeyToWire({kPeerDevice, 7, recv_device, tensor_name, step_id});
  push.tensors.push_back({"value", std::move(value)});
  return push;
}

std::string RunStepText(int64_t handle, int64_t step_id = 1, int num_args = 1) {
  return nlohmann::json{{"step_id", step_id}, {"graphs", {handle}}, {"num_args", num_args}, {"num_retvals", 1}}
      .dump();
}

// A RunStep of `handle` whose reply (or error) comes through the future.
std::future<Message> StartStep(Channel& channel, int64_t handle, int64_t step_id) {
  auto reply = std::make_shared<std::promise<Message>>();
  Message run;
  run.type = MessageType::kRunStep;
  run.text = RunStepText(handle, step_id, 0);
  channel.Call(std::move(run), [reply](std::optional<Error> error, Message message) {
    if (error) return reply->set_exception(std::make_exception_ptr(*error));
    reply->set_value(std::move(message));
  });
  return reply->get_future();
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
  CHECK_THROWS_WITH(worker.Call(MessageType::kSendTensor, R"({"send_device": 3})"), Contains("bad rendezvous key"));
  Message bare = PushedTensor(3, "x:0", Tensor::FromVector<float>({1, 2}));
  bare.tensors.clear();
  CHECK_THROWS_WITH(worker.channel.CallAndWait(std::move(bare)), Contains("carries 0 tensors"));
  // Still serving.
  CHECK(worker.Call(MessageType::kRunStep, RunStepText(handle), {{"arg:0", x}}).tensors.size() == 1);
}

namespace {

// Range(0, limit, 1) in int64 fetched as ret 0; `limit` a Const, or arg 0 when null.
std::string RangeGraph(std::optional<int64_t> limit) {
  auto constant = [](const char* name, int64_t value) {
    return nlohmann::json{{"name", name}, {"op", "Const"}, {"device", kDevice},
                          {"attrs", {{"dtype", "int64"},
                                     {"value", {{"dtype", "int64"}, {"shape", nlohmann::json::array()},
                                                {"values", {value}}}}}}};
  };
  nlohmann::json limit_node = limit ? constant("limit", *limit)
                                    : nlohmann::json{{"name", "limit"}, {"op", "_Arg"}, {"device", kDevice},
                                                     {"attrs", {{"T", "int64"}, {"index", 0}}}};
  nlohmann::json range = {{"name", "r"}, {"op", "Range"}, {"inputs", {"start", "limit", "delta"}},
                          {"device", kDevice}};
  nlohmann::json ret = {{"name", "ret"}, {"op", "_Retval"}, {"inputs", {"r"}}, {"device", kDevice},
                        {"attrs", {{"T", "int64"}, {"index", 0}}}};
  nlohmann::json graph = {{"format", "dflow.graph/1"},
                          {"nodes", {constant("start", 0), limit_node, constant("delta", 1), range, ret}}};
  return nlohmann::json{{"device", kDevice}, {"graph", graph}}.dump();
}

}  // namespace

// A server must survive anything a client sends: these used to kill it
// (a segfault while folding or running the Range, a stack overflow while
// printing the deep JSON in an error message).
TEST_CASE("a worker survives hostile graphs: 2^61-element Range, JSON nested 100,000 deep", "[worker][hostile]") {
  LoopbackWorker worker;
  const int64_t k2to61 = int64_t{1} << 61;
  CHECK_THROWS_WITH(worker.Call(MessageType::kRegisterGraph, RangeGraph(k2to61)),
                    Contains("Range 'r'") && Contains("[2305843009213693952] has too many elements"));

  Message registered = worker.Call(MessageType::kRegisterGraph, RangeGraph(std::nullopt));
  int64_t handle = nlohmann::json::parse(registered.text).at("handle");
  CHECK_THROWS_WITH(worker.Call(MessageType::kRunStep, RunStepText(handle), {{"arg:0", Tensor::Scalar(k2to61)}}),
                    Contains("node r (Range)") && Contains("too many elements"));

  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH(worker.Call(MessageType::kRegisterGraph,
                                R"({"device": ")" + kDevice + R"(", "graph": {"format": "dflow.graph/1", "seed": )" +
                                    deep + R"(, "nodes": []}})"),
                    Contains("bad RegisterGraph request") && Contains("nested more than 256 levels"));
  // Still serving.
  Message reply = worker.Call(MessageType::kRunStep, RunStepText(handle, 2), {{"arg:0", Tensor::Scalar<int64_t>(3)}});
  REQUIRE(reply.tensors.size() == 1);
  CHECK(reply.tensors[0].value.Equals(Tensor::FromVector<int64_t>({0, 1, 2})));
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
  // A live client's step outlives the timeout: its heartbeats keep it.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  CHECK(worker.service.num_steps() == 1);

  client.reset();  // the client vanishes: no more heartbeats
  CHECK(Eventually([&] { return worker.service.num_steps() == 0; }));
  // A peer's tensor for the forgotten step does not bring it back.
  worker.channel.Post(PushedTensor(5, "x:0", Tensor::FromVector<float>({1, 2})));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(worker.service.num_steps() == 0);
}

TEST_CASE("a step only peers sent tensors for is forgotten when its RunStep never comes", "[worker]") {
  LoopbackWorker worker(300);
  worker.channel.Post(PushedTensor(9, "x:0", Tensor::FromVector<float>({1, 2})));
  REQUIRE(Eventually([&] { return worker.service.num_steps() == 1; }));
  CHECK(Eventually([&] { return worker.service.num_steps() == 0; }));
  CHECK_THROWS_WITH(WorkerService(ClusterSpec::Parse(R"({"cluster": {"worker": ["127.0.0.1:1"]}})", "test"),
                                  {"worker", 0}, 1, -5),
                    Contains("step timeout") && Contains("-5"));
}

namespace {

// Task 1 is a bare server: it answers heartbeats, as a live worker does.
struct WorkerWithPeer {
  MessageServer peer{"127.0.0.1:0", [](Message, MessageServer::Respond) {}};
  LoopbackWorker worker{kDefaultStepTimeoutMs,
                        StrCat(R"({"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:)", peer.port(), R"("]}})")};
  int64_t Register(const std::string& tensor_name) {
    Message registered = worker.Call(MessageType::kRegisterGraph, RecvGraph(kPeerDevice, 7, tensor_name));
    return nlohmann::json::parse(registered.text).at("handle");
  }
};

}  // namespace

TEST_CASE("a tensor a peer pushes reaches its Recv, whether the step started or not", "[worker]") {
  WorkerWithPeer cluster;
  int64_t handle = cluster.Register("x:0");
  Tensor x = Tensor::FromVector<float>({1.5f, -2});
  // The Recv waits first.
  std::future<Message> first = StartStep(cluster.worker.channel, handle, 11);
  REQUIRE(Eventually([&] { return cluster.worker.service.num_steps() == 1; }));
  cluster.worker.channel.Post(PushedTensor(11, "x:0", x));
  REQUIRE(first.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  Message reply = first.get();
  REQUIRE(reply.tensors.size() == 1);
  CHECK(reply.tensors[0].value.Equals(x));
  // The tensor comes first.
  cluster.worker.channel.Post(PushedTensor(12, "x:0", x));
  REQUIRE(Eventually([&] { return cluster.worker.service.num_steps() == 2; }));
  std::future<Message> second = StartStep(cluster.worker.channel, handle, 12);
  REQUIRE(second.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK(second.get().tensors.at(0).value.Equals(x));
}

TEST_CASE("a tensor pushed to the wrong task, or twice, fails the step naming it", "[worker]") {
  WorkerWithPeer cluster;
  int64_t handle = cluster.Register("x:0");
  Tensor x = Tensor::FromVector<float>({1, 2});
  std::future<Message> misrouted = StartStep(cluster.worker.channel, handle, 21);
  cluster.worker.channel.Post(PushedTensor(21, "x:0", x, "/job:worker/replica:0/task:3/device:CPU:0"));
  REQUIRE(misrouted.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK_THROWS_WITH(misrouted.get(), Contains("task /job:worker/replica:0/task:0") &&
                                         Contains("which is for another task") && Contains("x:0"));

  cluster.worker.channel.Post(PushedTensor(22, "y:0", x));
  cluster.worker.channel.Post(PushedTensor(22, "y:0", x));
  std::future<Message> twice = StartStep(cluster.worker.channel, handle, 22);
  REQUIRE(twice.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK_THROWS_WITH(twice.get(), Contains("sent twice") && Contains("y:0"));
}

TEST_CASE("a Recv waiting for a peer that stops answering fails within the heartbeat timeout", "[worker]") {
  WorkerWithPeer cluster;
  int64_t handle = cluster.Register("x:0");
  std::future<Message> step = StartStep(cluster.worker.channel, handle, 31);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the peer answers: the Recv waits
  REQUIRE(step.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  auto stopped = std::chrono::steady_clock::now();
  cluster.peer.Stop();  // as if the peer were stopped (SIGSTOP): its socket stays, silent
  REQUIRE(step.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - stopped < std::chrono::milliseconds(kHeartbeatTimeoutMs + 1500));
  CHECK_THROWS_WITH(step.get(), Contains("no heartbeat") && Contains("SendTensor") && Contains(kPeerTask));
}
