// A Session over two CPU devices of one process: placement, partitioning,
// Send/Recv through one LocalRendezvous per step. Checked against the
// one-device run of the same graph, for errors that must abort every
// partition (and name where they came from), for executor reuse across steps,
// and for control edges that cross devices.
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "autodiff/gradients.h"
#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "graph/device.h"
#include "graph/kernel.h"
#include "ops/ops.h"
#include "tests/dist/mlp_fixture.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

const std::string kCpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
const std::string kCpu1 = "/job:localhost/replica:0/task:0/device:CPU:1";

SessionOptions TwoDevices(int threads_per_device) {
  SessionOptions options;
  options.num_threads = threads_per_device;
  options.devices = {kCpu0, kCpu1};
  return options;
}

// The 2-layer MLP of mlp_fixture.h; with `split`, layer 1 asks for CPU:0
// and layer 2 for CPU:1.
TwoLayerMlp Mlp(bool split) {
  return TwoLayerMlp(split ? "/device:CPU:0" : "", split ? "/device:CPU:1" : "");
}

}  // namespace

TEST_CASE("an MLP trained with Adam on two devices equals the one-device run bit for bit",
          "[multi_device]") {
  for (int threads : {1, 2}) {
    INFO(threads << " threads per device");
    TwoLayerMlp one = Mlp(false), two = Mlp(true);
    Session single(one.s, {.num_threads = threads});
    Session split(two.s, TwoDevices(threads));
    std::vector<Tensor> expected = one.Train(single, 5);
    std::vector<Tensor> actual = WithDeadline([&] { return two.Train(split, 5); });
    REQUIRE(actual.size() == expected.size());
    // Same kernels on the same inputs in the same order: only where they run
    // changed, so the floats must be identical, not just close.
    for (size_t i = 0; i < expected.size(); ++i) ExpectEqual(actual[i], expected[i]);
  }
}

TEST_CASE("the MLP's gradients on two devices equal the one-device gradients bit for bit",
          "[multi_device]") {
  // The training test above compares losses and trained weights; this one
  // fetches dloss/dvariable itself, for one step, before any update.
  TwoLayerMlp one = Mlp(false), two = Mlp(true);
  std::vector<Output> grads_one = autodiff::AddGradients(one.s, {one.loss}, one.variables);
  std::vector<Output> grads_two = autodiff::AddGradients(two.s, {two.loss}, two.variables);
  Session single(one.s, {.num_threads = 1});
  Session split(two.s, TwoDevices(1));
  single.Run({}, {}, {ops::GlobalVariablesInitializer(one.s)});
  split.Run({}, {}, {ops::GlobalVariablesInitializer(two.s)});
  Tensor x = RandomTensor(DType::kFloat32, Shape({8, 5}), 7);
  Tensor target = RandomTensor(DType::kFloat32, Shape({8, 3}), 8);
  std::vector<TensorName> fetch_one(grads_one.begin(), grads_one.end());
  std::vector<TensorName> fetch_two(grads_two.begin(), grads_two.end());
  std::vector<Tensor> expected = single.Run({{one.x, x}, {one.target, target}}, fetch_one);
  std::vector<Tensor> actual =
      WithDeadline([&] { return split.Run({{two.x, x}, {two.target, target}}, fetch_two); });
  REQUIRE(actual.size() == 4);
  for (size_t i = 0; i < expected.size(); ++i) ExpectEqual(actual[i], expected[i]);
}

TEST_CASE("on_fetch_ready reports the gradients of both devices once each, as Run returns them",
          "[multi_device]") {
  // The gradients of w1, b1 come from CPU:0's partition, those of w2, b2
  // from CPU:1's: each partition's executor reports its own fetches.
  TwoLayerMlp two = Mlp(true);
  std::vector<Output> grads = autodiff::AddGradients(two.s, {two.loss}, two.variables);
  Session split(two.s, TwoDevices(2));
  split.Run({}, {}, {ops::GlobalVariablesInitializer(two.s)});
  FeedList feeds = {{two.x, RandomTensor(DType::kFloat32, Shape({8, 5}), 1)},
                    {two.target, RandomTensor(DType::kFloat32, Shape({8, 3}), 2)}};
  std::mutex mu;
  std::map<size_t, std::vector<const void*>> reported;  // fetch -> buffers reported
  RunOptions options;
  options.on_fetch_ready = [&](size_t index, const Tensor& value) {
    std::lock_guard lock(mu);
    reported[index].push_back(value.raw_data());
  };
  std::vector<TensorName> fetches(grads.begin(), grads.end());
  std::vector<Tensor> results = WithDeadline([&] { return split.Run(feeds, fetches, {}, options); });
  REQUIRE(reported.size() == fetches.size());
  for (size_t i = 0; i < fetches.size(); ++i)
    CHECK(reported[i] == std::vector<const void*>{results[i].raw_data()});
}

TEST_CASE("the layers really run on their two devices", "[multi_device]") {
  TwoLayerMlp two = Mlp(true);
  Session split(two.s, TwoDevices(1));
  split.Run({}, {}, {ops::GlobalVariablesInitializer(two.s)});
  RunMetadata metadata;
  FeedList feeds = {{two.x, RandomTensor(DType::kFloat32, Shape({8, 5}), 1)},
                    {two.target, RandomTensor(DType::kFloat32, Shape({8, 3}), 2)}};
  split.Run(feeds, {two.loss}, {two.train}, {.trace = true}, &metadata);
  std::map<std::string, std::string> device_of;
  for (const NodeExecStats& stats : metadata.step_stats) device_of[stats.node] = stats.device;
  CHECK(device_of.at("w1") == kCpu0);
  CHECK(device_of.at("w2") == kCpu1);
  int sends = 0, recvs = 0;
  for (const NodeExecStats& stats : metadata.step_stats) {
    sends += stats.op == "_Send";
    recvs += stats.op == "_Recv";
  }
  CHECK(sends > 0);
  CHECK(sends == recvs);
}

TEST_CASE("many steps reuse the partitions' executors", "[multi_device]") {
  Scope s = Scope::NewRootScope();
  auto counter = ops::Variable(s.WithOpName("counter").WithDevice("/device:CPU:0"), 0.0f);
  auto add = ops::AssignAdd(s.WithDevice("/device:CPU:0"), counter, 1.0f);
  auto doubled = ops::Mul(s.WithOpName("doubled").WithDevice("/device:CPU:1"), add, 2.0f);
  Session session(s, TwoDevices(1));
  session.Run({}, {}, {ops::GlobalVariablesInitializer(s)});
  WithDeadline([&] {
    for (int step = 1; step <= 50; ++step)
      ExpectEqual(session.Run({doubled})[0], Tensor::Scalar(2.0f * step));
    return 0;
  });
  CHECK(session.num_cached_executors() == 2);  // the initializer's and the step's
}

TEST_CASE("an error in one partition aborts the step everywhere and names its origin",
          "[multi_device]") {
  // x feeds a MatMul on CPU:1 whose result CPU:0 waits for: a bad x fails
  // CPU:1, and CPU:0's waiting Recv must be woken, not left hanging.
  Scope s = Scope::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32);
  auto product = ops::MatMul(s.WithOpName("product").WithDevice("/device:CPU:1"), x,
                             Tensor::FromVector<float>({1, 2, 3, 4}).Reshaped(Shape({2, 2})));
  auto relu = ops::Relu(s.WithOpName("relu").WithDevice("/device:CPU:0"), product);
  Session session(s, TwoDevices(1));
  Tensor bad = Tensor::FromVector<float>({1, 2, 3});  // rank 1: MatMul wants a matrix
  Tensor good = Tensor::FromVector<float>({1, -1}).Reshaped(Shape({1, 2}));
  for (int attempt = 0; attempt < 3; ++attempt) {
    bool threw = WithDeadline([&] {
      try {
        session.Run({{x, bad}}, {relu});
      } catch (const Error& e) {
        std::string message = e.message();
        INFO(message);
        CHECK(e.code() == Code::kInvalidArgument);
        CHECK(message.find("node product (MatMul) on " + kCpu1) != std::string::npos);
        return true;
      }
      return false;
    });
    CHECK(threw);
    // The session stays usable: the next good step runs on the same executors.
    ExpectEqual(WithDeadline([&] { return session.Run({{x, good}}, {relu})[0]; }),
                Tensor::FromVector<float>({0, 0}).Reshaped(Shape({1, 2})));
  }
  CHECK(session.num_cached_executors() == 1);
}

namespace {

// A test op that sleeps, then appends its label to a shared log: whether a
// control edge was honoured shows in the log's order.
std::mutex log_mu;
std::vector<std::string> order_log;

REGISTER_OP("TestAppendLabel")
    .attr<std::string>("label")
    .attr<int64_t>("sleep_ms", 0)
    .stateful()
    .doc("Test only: sleeps sleep_ms, then appends `label` to a log.");

class AppendLabelKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext& ctx) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(node().attr<int64_t>("sleep_ms")));
    std::lock_guard<std::mutex> lock(log_mu);
    order_log.push_back(node().attr<std::string>("label"));
  }
};
REGISTER_KERNEL("TestAppendLabel", "CPU", AppendLabelKernel);

Node* AppendLabel(const Scope& scope, const std::string& label, int64_t sleep_ms) {
  return scope.WithOpName(label).AddOp("TestAppendLabel", {}, {{"label", label}, {"sleep_ms", sleep_ms}});
}

}  // namespace

TEST_CASE("a control edge across devices orders its nodes", "[multi_device]") {
  Scope s = Scope::NewRootScope();
  Node* first = AppendLabel(s.WithDevice("/device:CPU:0"), "first", 50);
  Node* second = AppendLabel(s.WithDevice("/device:CPU:1").WithControlDependencies({first}), "second", 0);
  Session session(s, TwoDevices(1));
  for (int step = 0; step < 3; ++step) {
    {
      std::lock_guard<std::mutex> lock(log_mu);
      order_log.clear();
    }
    WithDeadline([&] { return session.Run({}, {}, {second}); });
    std::lock_guard<std::mutex> lock(log_mu);
    CHECK(order_log == std::vector<std::string>{"first", "second"});
  }
}

TEST_CASE("a multi-device session rejects bad device lists", "[multi_device]") {
  Scope s = Scope::NewRootScope();
  ops::Const(s, 1.0f);
  SessionOptions twice = TwoDevices(1);
  twice.devices[1] = kCpu0;
  ExpectError([&] { Session session(s, twice); }, Code::kInvalidArgument, "listed twice");
  SessionOptions partial = TwoDevices(1);
  partial.devices[1] = "/job:localhost/device:CPU";
  ExpectError([&] { Session session(s, partial); }, Code::kInvalidArgument, "not a full CPU or GPU device name");
  SessionOptions other_type = TwoDevices(1);
  other_type.devices[1] = "/job:localhost/replica:0/task:0/device:TPU:0";
  ExpectError([&] { Session session(s, other_type); }, Code::kInvalidArgument, "not a full CPU or GPU device name");
}

TEST_CASE("a multi-device session with a GPU that is not visible says why", "[multi_device]") {
  if (DiscoverGpus().count > 0) {
    WARN("skipped: a GPU is visible (tests/ops/test_cuda_session.cc runs sessions on it)");
    return;
  }
  Scope s = Scope::NewRootScope();
  ops::Const(s, 1.0f);
  SessionOptions with_gpu = TwoDevices(1);
  with_gpu.devices[1] = "/job:localhost/replica:0/task:0/device:GPU:0";
  ExpectError([&] { Session session(s, with_gpu); }, Code::kUnavailable,
              "no GPU is visible for /job:localhost/replica:0/task:0/device:GPU:0: " + DiscoverGpus().reason);
}

TEST_CASE("a lone _Recv outside a multi-device step fails clearly", "[multi_device]") {
  Scope s = Scope::NewRootScope();
  Output recv = s.WithOpName("lonely").AddOp(
      "_Recv", {}, {{"tensor_type", DType::kFloat32}, {"tensor_name", std::string("a:0")},
                    {"send_device", kCpu0}, {"recv_device", kCpu1}});
  Session session(s);
  ExpectError([&] { WithDeadline([&] { return session.Run({recv}); }); }, Code::kFailedPrecondition,
              "needs the step's rendezvous");
}

TEST_CASE("a variable without a device request stays on the device its first run placed it on",
          "[multi_device]") {
  // Each run places the variable by cost alone, next to its consumers: the
  // init step's Assign, then a read on CPU:0, then one on CPU:1. Placement
  // is per run signature, so the session must remember where each stateful
  // node went, or a later run reads an uninitialised copy on another device.
  Scope s = Scope::NewRootScope();
  Output v = ops::Variable(s.WithOpName("v"), Shape({2}), DType::kFloat32);
  Output init = ops::Assign(s.WithOpName("init"), v, Tensor::FromVector<float>({1.5f, -2.0f}, Shape({2})));
  Session session(s, TwoDevices(1));
  session.Run({}, {}, {init});
  for (const char* device : {"/device:CPU:0", "/device:CPU:1"}) {
    INFO("read on " << device);
    Output doubled = ops::Mul(s.WithDevice(device), v, 2.0f);
    Tensor out = WithDeadline([&] { return session.Run({doubled})[0]; });
    ExpectEqual(out, Tensor::FromVector<float>({3.0f, -4.0f}, Shape({2})));
  }
}
