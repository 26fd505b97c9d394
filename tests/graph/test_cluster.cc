// The one session pipeline over a cluster of two device types: the host CPU
// and a fake accelerator ("FAKE", CPU-backed, with kernels for a few ops
// only), reached through a registered cluster factory like dist/'s ZeroMQ
// one. Placement and partitioning of a mixed graph, soft placement of an op
// without a kernel on its requested device, traces from every partition,
// and the step runner's first-error rule.
#include <catch2/catch.hpp>
#include <set>

#include "graph/kernel.h"
#include "graph/local_cluster.h"
#include "graph/local_rendezvous.h"
#include "graph/session.h"
#include "graph/step_runner.h"
#include "ops/ops.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

const std::string kCpu = "/job:localhost/replica:0/task:0/device:CPU:0";
const std::string kFake = "/job:localhost/replica:0/task:0/device:FAKE:0";

Tensor Floats(std::vector<float> values) { return Tensor::FromVector<float>(values); }

// A device of another type whose memory and threads are the host's.
class FakeDevice final : public Device {
 public:
  FakeDevice(const std::string& name, Device& host) : Device(name, "FAKE"), host_(host) {}
  Allocator* allocator() override { return host_.allocator(); }
  ThreadPool* compute_pool() override { return host_.compute_pool(); }

 private:
  Device& host_;
};

// FAKE kernels are the CPU's, for the ops listed here only (not Neg).
const bool fake_kernels_registered = [] {
  for (const char* op : {"_Arg", "_Retval", "_Send", "_Recv", "Const", "Mul", "Identity"})
    KernelRegistry::Global().Register(op, "FAKE", DType::kFloat32, [](const Node& node) {
      return KernelRegistry::Global().Create(node, "CPU");
    });
  return true;
}();

class MixedCluster final : public Cluster {
 public:
  MixedCluster() : pool_(2, "test-mixed"), cpu_(NewCpuDevice(kCpu, &pool_)), fake_(kFake, *cpu_) {}

  const std::vector<std::string>& devices() const override { return names_; }
  int64_t Incarnation(const std::string&) const override { return 1; }
  Device& pass_device() override { return *cpu_; }
  std::unique_ptr<PartitionRunner> Load(const std::string& device, std::shared_ptr<Graph> graph) override {
    loaded.insert(device);
    Device* where = device == kFake ? static_cast<Device*>(&fake_) : cpu_.get();
    return std::make_unique<ExecutorRunner>(std::make_shared<Executor>(std::move(graph), where, &resources_));
  }
  ClusterStep NewStep(const std::vector<std::string>& partition_devices) override {
    ClusterStep step{NewStepId(), nullptr};
    if (partition_devices.size() > 1) step.rendezvous = std::make_unique<LocalRendezvous>();
    return step;
  }

  static inline std::set<std::string> loaded;  // devices a partition was loaded on, by the last session

 private:
  ThreadPool pool_;
  std::unique_ptr<Device> cpu_;
  FakeDevice fake_;
  ResourceStore resources_;
  std::vector<std::string> names_{kCpu, kFake};
};

const bool mixed_registered = [] {
  RegisterClusterFactory("mixed", [](const SessionOptions&) {
    MixedCluster::loaded.clear();
    return std::make_unique<MixedCluster>();
  });
  return true;
}();

RunOptions Traced() {
  RunOptions options;
  options.trace = true;
  return options;
}

SessionOptions Mixed(bool soft = false) {
  SessionOptions options;
  options.target = "mixed://";
  options.allow_soft_placement = soft;
  return options;
}

// The device each traced node ran on, by node name.
std::map<std::string, std::string> DevicesRun(const RunMetadata& metadata) {
  std::map<std::string, std::string> devices;
  for (const NodeExecStats& stats : metadata.step_stats) devices[stats.node] = stats.device;
  return devices;
}

}  // namespace

TEST_CASE("a graph cut between two device types equals the one-device run", "[cluster]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {3});
  Output scaled = ops::Mul(s.WithOpName("scaled").WithDevice("/device:FAKE:0"), x, x);
  Output negated = ops::Neg(s.WithOpName("negated").WithDevice("/device:CPU:0"), scaled);
  Output out = ops::Mul(s.WithOpName("out").WithDevice("/device:FAKE:0"), negated, x);
  FeedList feeds = {{x, Floats({1, 2, 3})}};

  SessionOptions one_device;
  one_device.allow_soft_placement = true;  // everything on the host CPU
  Session local(s, one_device);
  Tensor expected = local.Run(feeds, {out})[0];
  Session mixed(s, Mixed());
  RunMetadata metadata;
  Tensor actual = mixed.Run(feeds, {out}, {}, Traced(), &metadata)[0];
  ExpectEqual(actual, expected);
  CHECK(MixedCluster::loaded == std::set<std::string>{kCpu, kFake});
  std::map<std::string, std::string> ran = DevicesRun(metadata);
  CHECK(ran["scaled"] == kFake);
  CHECK(ran["negated"] == kCpu);
  CHECK(ran["out"] == kFake);
  CHECK(mixed.num_cached_executors() == 1);
  ExpectEqual(mixed.Run(feeds, {out})[0], expected);  // the cached executable again
}

TEST_CASE("soft placement moves an op without a kernel on its requested device", "[cluster]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  Output negated = ops::Neg(s.WithOpName("negated").WithDevice("/device:FAKE:0"), x);
  FeedList feeds = {{x, Floats({1, -2})}};

  Session strict(s, Mixed());
  ExpectError([&] { strict.Run(feeds, {negated}); }, Code::kInvalidArgument,
              "Neg 'negated' requests device '/device:FAKE:0'");
  Session soft(s, Mixed(/*soft=*/true));
  RunMetadata metadata;
  ExpectEqual(soft.Run(feeds, {negated}, {}, Traced(), &metadata)[0], Floats({-1, 2}));
  CHECK(DevicesRun(metadata)["negated"] == kCpu);
}

TEST_CASE("a request for a device the session lacks names the session's devices", "[cluster]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  Output on_gpu = ops::Mul(s.WithOpName("on_gpu").WithDevice("/device:GPU:0"), x, x);
  Session strict(s, Mixed());
  ExpectError([&] { strict.Run({{x, Floats({1, 2})}}, {on_gpu}); }, Code::kInvalidArgument,
              "Mul 'on_gpu' requests device '/device:GPU:0' but this session has only " + kCpu + ", " + kFake);
  Session soft(s, Mixed(/*soft=*/true));
  ExpectEqual(soft.Run({{x, Floats({1, 2})}}, {on_gpu})[0], Floats({1, 4}));
}

TEST_CASE("a target of no registered scheme is refused by name", "[cluster]") {
  Scope s = Scope::NewRootScope();
  ops::Const(s, 1.0f);
  SessionOptions options;
  options.target = "grpc://localhost:2222";
  ExpectError([&] { Session session(s, options); }, Code::kInvalidArgument,
              "session target 'grpc://localhost:2222' is not of the form zmq://host:port");
}

namespace {

// A partition that ends as told: at once (with an error, or not), or when the
// step's rendezvous is aborted (like a Recv waiting for a tensor).
class ScriptedPartition final : public PartitionRunner {
 public:
  explicit ScriptedPartition(std::optional<Error> error, bool waits = false) : error_(error), waits_(waits) {}
  void RunAsync(const ExecutorStep& step, const RunOptions&, RunMetadata* metadata, Done done, bool) override {
    if (metadata) {
      NodeExecStats stats;
      stats.node = error_ ? "failing" : "fine";
      metadata->step_stats.push_back(stats);
    }
    if (!waits_) return done(error_);
    step.rendezvous->RecvAsync({"a", 1, "b", "never:0", step.step_id},
                               [done](std::optional<Error> error, Tensor) { done(error); });
  }

 private:
  std::optional<Error> error_;
  bool waits_;
};

}  // namespace

TEST_CASE("the step runner reports the first error and wakes partitions waiting in a Recv", "[cluster]") {
  ScriptedPartition waiting(std::nullopt, /*waits=*/true), failing(Error(Code::kInternal, "kernel broke")),
      fine(std::nullopt);
  LocalRendezvous rendezvous;
  std::vector<Tensor> args, retvals;
  RunMetadata metadata;
  ExpectError([&] { RunStep({&waiting, &failing, &fine}, {7, &args, &retvals, &rendezvous}, {}, &metadata); },
              Code::kInternal, "kernel broke");
  CHECK(metadata.step_stats.size() == 3);  // every partition's stats, merged
  CHECK(rendezvous.abort_error().has_value());

  LocalRendezvous clean;
  RunStep({&fine, &fine}, {8, &args, &retvals, &clean}, {}, nullptr);
  CHECK_FALSE(clean.abort_error().has_value());
}
