// Sessions on real `dflow server` processes over loopback: a 2-layer MLP with
// its layers on two worker tasks trains bit-identically to one process; a
// worker killed or stopped mid-step fails the step with an error naming it
// (heartbeat detection), a restarted worker serves a new session, shutdown
// with dead peers is quick, and a server survives garbage.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "dist/transport/zmq_channel.h"
#include "ops/ops.h"
#include "tests/dist/mlp_fixture.h"
#include "tests/dist/server_process.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;
using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

namespace {

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

SessionOptions Remote(const ScratchCluster& cluster) {
  SessionOptions options;
  options.target = cluster.target(0);
  return options;
}

// A step that keeps task 1 busy for seconds (a chain of large MatMuls of a
// fed matrix, so nothing folds away) and then sends its result to task 0.
struct SlowStep {
  Scope s = Scope::NewRootScope();
  Output m, result;

  explicit SlowStep(const ScratchCluster& cluster) {
    Scope busy = s.WithDevice(cluster.device(1));
    m = ops::Placeholder(busy.WithOpName("m"), DType::kFloat32, Shape({700, 700}));
    Output chain = m;
    for (int i = 0; i < 150; ++i) chain = ops::MatMul(busy, chain, m);
    result = ops::Sum(s.WithDevice(cluster.device(0)).WithOpName("result"), chain, {0, 1});
  }
};

// Starts a slow step, applies `signal` to task 1 after it began, and returns
// the error and how long after the signal it came.
std::pair<Error, double> FailSlowStep(const ScratchCluster& cluster, ServerProcess& task1, int signal) {
  SlowStep slow(cluster);
  Session session(slow.s, Remote(cluster));
  auto step = std::async(std::launch::async, [&]() -> std::optional<Error> {
    try {
      session.Run({{slow.m, Tensor::Zeros(DType::kFloat32, Shape({700, 700}))}}, {slow.result});
    } catch (const Error& e) {
      return e;
    }
    return std::nullopt;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  Clock::time_point signalled = Clock::now();
  task1.Signal(signal);
  if (step.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    std::fprintf(stderr, "the step did not fail within 30 s of signal %d\n", signal);
    std::_Exit(3);
  }
  std::optional<Error> error = step.get();
  double seconds = SecondsSince(signalled);
  if (!error) FAIL("the step succeeded although task 1 got signal " << signal);
  return {*error, seconds};
}

}  // namespace

TEST_CASE("an MLP with its layers on two worker processes trains bit-identically", "[remote]") {
  ScratchCluster cluster(2);
  ServerProcess task0(cluster, 0), task1(cluster, 1);
  TwoLayerMlp local("", ""), split(cluster.device(0), cluster.device(1));
  Session single(local.s, {.num_threads = 1});
  Session remote(split.s, Remote(cluster));
  std::vector<Tensor> expected = local.Train(single, 5);
  std::vector<Tensor> actual = WithDeadline([&] { return split.Train(remote, 5); }, 60);
  REQUIRE(actual.size() == expected.size());
  // The same kernels on the same inputs in the same order, only in other
  // processes: the floats must be identical, not just close.
  for (size_t i = 0; i < expected.size(); ++i) ExpectEqual(actual[i], expected[i]);
}

TEST_CASE("variables live on their task between steps and sessions", "[remote]") {
  ScratchCluster cluster(2);
  ServerProcess task0(cluster, 0), task1(cluster, 1);
  Scope s = Scope::NewRootScope();
  auto v = ops::Variable(s.WithDevice(cluster.device(1)).WithOpName("v"), Tensor::Scalar<float>(1));
  auto bump = ops::AssignAdd(s.WithOpName("bump"), v, ops::Const(s, Tensor::Scalar<float>(2)));
  {
    Session first(s, Remote(cluster));
    first.Run({}, {}, {ops::GlobalVariablesInitializer(s)});
    first.Run({}, {}, {bump.node()});
  }
  Session second(s, Remote(cluster));
  second.Run({}, {}, {bump.node()});
  CHECK(second.Run({v})[0].scalar<float>() == 5);
}

TEST_CASE("a variable without a device request stays on the task its first run placed it on", "[remote]") {
  // Each run places the variable by cost alone, next to its consumers: the
  // init step's Assign, then a read on task 0, then one on task 1. Each task
  // keeps its own variables, and placement is per run signature, so the
  // session must remember where each stateful node went, or a later run
  // reads an uninitialised copy on another task.
  ScratchCluster cluster(2);
  ServerProcess task0(cluster, 0), task1(cluster, 1);
  Scope s = Scope::NewRootScope();
  Output v = ops::Variable(s.WithOpName("v"), Shape({2}), DType::kFloat32);
  Output init = ops::Assign(s.WithOpName("init"), v, Tensor::FromVector<float>({1.5f, -2.0f}, Shape({2})));
  Session session(s, Remote(cluster));
  session.Run({}, {}, {init});
  for (int task : {0, 1}) {
    INFO("read on task " << task);
    Output doubled = ops::Mul(s.WithDevice(cluster.device(task)), v, 2.0f);
    Tensor out = WithDeadline([&] { return session.Run({doubled})[0]; }, 60);
    ExpectEqual(out, Tensor::FromVector<float>({3.0f, -4.0f}, Shape({2})));
  }
}

TEST_CASE("an error on one task aborts the step everywhere and names its origin", "[remote]") {
  ScratchCluster cluster(2);
  ServerProcess task0(cluster, 0), task1(cluster, 1);
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, Shape({-1, 4}));
  auto never = ops::Variable(s.WithDevice(cluster.device(1)).WithOpName("never_initialised"),
                             Tensor::Zeros(DType::kFloat32, Shape({4})));
  auto y = ops::Add(s.WithDevice(cluster.device(0)).WithOpName("y"), x, never);
  Session session(s, Remote(cluster));
  Tensor batch = Tensor::Zeros(DType::kFloat32, Shape({2, 4}));
  try {
    WithDeadline([&] { return session.Run({{x, batch}}, {y}); });
    FAIL("reading an uninitialised variable succeeded");
  } catch (const Error& e) {
    CHECK_THAT(e.message(), Contains("task:1") && Contains("never_initialised"));
  }
  // The session stays usable: initialise, then the same step works.
  session.Run({}, {}, {ops::GlobalVariablesInitializer(s)});
  CHECK(session.Run({{x, batch}}, {y})[0].Equals(batch));
}

TEST_CASE("a worker killed mid-step fails the step naming it; a restarted one serves a new session",
          "[remote]") {
  ScratchCluster cluster(2);
  ServerProcess task0(cluster, 0);
  auto task1 = std::make_unique<ServerProcess>(cluster, 1);
  auto [error, seconds] = FailSlowStep(cluster, *task1, SIGKILL);
  INFO(error.message());
  CHECK(error.code() == Code::kUnavailable);
  CHECK_THAT(error.message(), Contains("/job:worker/replica:0/task:1"));
  CHECK(seconds < 10);
  task1 = std::make_unique<ServerProcess>(cluster, 1);
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s.WithDevice(cluster.device(1)), Tensor::FromVector<float>({1, 2}));
  auto b = ops::Mul(s.WithDevice(cluster.device(0)).WithOpName("b"), a, a);
  Session fresh(s, Remote(cluster));
  CHECK(WithDeadline([&] { return fresh.Run({b}); })[0].Equals(Tensor::FromVector<float>({1, 4})));
}

TEST_CASE("a stopped worker (SIGSTOP) is found by heartbeat within 4 s", "[remote]") {
  ScratchCluster cluster(2);
  ServerProcess task0(cluster, 0), task1(cluster, 1);
  auto [error, seconds] = FailSlowStep(cluster, task1, SIGSTOP);
  INFO(error.message());
  CHECK_THAT(error.message(), Contains("no heartbeat") && Contains("task:1"));
  CHECK(seconds < 4);
  task1.Signal(SIGCONT);
}

TEST_CASE("shutting down with a dead peer finishes within 5 s", "[remote]") {
  ScratchCluster cluster(2);
  ServerProcess task0(cluster, 0), task1(cluster, 1);
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s.WithDevice(cluster.device(1)), Tensor::FromVector<float>({3}));
  auto b = ops::Neg(s.WithDevice(cluster.device(0)).WithOpName("b"), a);
  auto session = std::make_unique<Session>(s, Remote(cluster));
  session->Run({b});  // task 0 now has a channel to task 1
  task1.Signal(SIGKILL);
  task1.WaitForExit(5);
  Clock::time_point start = Clock::now();
  session.reset();
  CHECK(SecondsSince(start) < 5);
  start = Clock::now();
  task0.Signal(SIGTERM);
  CHECK(task0.WaitForExit(5));
  CHECK(SecondsSince(start) < 5);
}

TEST_CASE("a dflow server answers garbage with an error and keeps serving", "[remote]") {
  ScratchCluster cluster(1);
  ServerProcess task0(cluster, 0);
  zmq::socket_t raw(dist::ZmqContext(), zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect("tcp://" + cluster.address(0));
  raw.send(zmq::str_buffer("GET / HTTP/1.0\r\n\r\n"), zmq::send_flags::none);
  zmq::pollitem_t item{raw.handle(), 0, ZMQ_POLLIN, 0};
  REQUIRE(zmq::poll(&item, 1, std::chrono::milliseconds(10000)) == 1);
  std::vector<zmq::message_t> frames = dist::ReceiveFrames(raw);
  dist::Message reply = dist::DecodeFrames(frames, 0);
  CHECK(reply.type == dist::MessageType::kError);
  CHECK_THAT(reply.text, Contains("bad message"));
  // A graph with an op nobody registered is refused too: no code travels.
  dist::Channel channel("/job:worker/replica:0/task:0", cluster.address(0));
  dist::Message evil;
  evil.type = dist::MessageType::kRegisterGraph;
  evil.text = R"({"device": "/job:worker/replica:0/task:0/device:CPU:0", "graph": {"format": "dflow.graph/1",
      "nodes": [{"name": "x", "op": "System", "inputs": [], "attrs": {}}]}})";
  CHECK_THROWS_WITH(channel.CallAndWait(evil), Contains("System"));
  Scope s = Scope::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::FromVector<float>({2}));
  Session session(s, Remote(cluster));
  CHECK(session.Run({a})[0].Equals(Tensor::FromVector<float>({2})));
}
