// The one session pipeline over a cluster of two device types: the host CPU
// and a fake accelerator ("FAKE", CPU-backed, with kernels for a few ops
// only), reached through a registered cluster factory like dist/'s ZeroMQ
// one. Placement and partitioning of a mixed graph, soft placement of an op
// without a kernel on its requested device, traces from every partition,
// host memory on a device with memory of its own (the FAKE device's
// "device memory" is an allocator of its own, and its kernels check that
// each input arrives in the memory declared for it), and the step runner's
// first-error rule.
#include <catch2/catch.hpp>
#include <set>

#include "graph/kernel.h"
#include "graph/local_cluster.h"
#include "graph/local_rendezvous.h"
#include "graph/memory_types.h"
#include "graph/partition.h"
#include "graph/session.h"
#include "graph/step_runner.h"
#include "ops/ops.h"
#include "ops/send_recv.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

const std::string kCpu = "/job:localhost/replica:0/task:0/device:CPU:0";
const std::string kFake = "/job:localhost/replica:0/task:0/device:FAKE:0";

// The FAKE device's own memory: host memory, told apart by its allocator.
class FakeDeviceMemory final : public Allocator {
 public:
  std::string name() const override { return "fake-device-memory"; }
  void* Allocate(size_t bytes) override { return CpuAllocator()->Allocate(bytes); }
  void Deallocate(void* ptr, size_t bytes) override { CpuAllocator()->Deallocate(ptr, bytes); }
};

// A device of another type whose threads are the host's; its tensors live
// in `memory_` unless declared in host memory.
class FakeDevice final : public Device {
 public:
  FakeDevice(const std::string& name, Device& host) : Device(name, "FAKE"), host_(host) {}
  Allocator* allocator() override { return &memory_; }
  Allocator* host_allocator() override { return host_.allocator(); }
  ThreadPool* compute_pool() override { return host_.compute_pool(); }

 private:
  Device& host_;
  FakeDeviceMemory memory_;
};

// `value` in the FAKE device's memory, as a real device's kernel would make it.
Tensor OnFakeDevice(const OpKernelContext& ctx, const Tensor& value) {
  if (value.allocator() == ctx.device().allocator() || !value.valid()) return value;
  return value.Clone(ctx.device().allocator());
}

// A FAKE kernel: the CPU's, checking that each input arrives in the memory
// declared for it (a _Send takes either), its device-memory outputs moved
// to the device's memory.
class CheckedKernel final : public OpKernel {
 public:
  explicit CheckedKernel(const Node& node)
      : OpKernel(node),
        cpu_(KernelRegistry::Global().Create(node, "CPU")),
        types_(MemoryTypesOf(node, "FAKE")) {}
  void Compute(OpKernelContext& ctx) const override {
    for (int i = 0; i < ctx.num_inputs() && node().op() != "_Send"; ++i) {
      if (node().IsRefInput(i)) continue;
      bool host = types_.inputs[i] == MemoryType::kHost;
      Allocator* want = host ? ctx.device().host_allocator() : ctx.device().allocator();
      if (ctx.input(i).allocator() != want)
        Fail(Code::kInternal, node().Describe(), ": input ", i, " is not in ", host ? "host" : "device",
             " memory");
    }
    cpu_->Compute(ctx);
    for (int o = 0; o < ctx.num_outputs(); ++o)
      if (types_.outputs[o] == MemoryType::kDevice && ctx.output(o).valid())
        ctx.set_output(o, OnFakeDevice(ctx, ctx.output(o)));
  }

 private:
  std::unique_ptr<OpKernel> cpu_;
  NodeMemoryTypes types_;
};

class FakeRecvKernel final : public AsyncOpKernel {
 public:
  explicit FakeRecvKernel(const Node& node)
      : AsyncOpKernel(node), host_(MemoryTypesOf(node, "FAKE").outputs[0] == MemoryType::kHost) {}
  void ComputeAsync(OpKernelContext& ctx, Done done) const override {
    // As the GPU's: the copy into the device's memory on the device's threads.
    ReceiveInto(
        ctx, node(), std::move(done),
        [this, &ctx](const Tensor& value) { return host_ ? value : OnFakeDevice(ctx, value); }, !host_);
  }

 private:
  bool host_;
};

// FAKE kernels are the CPU's, for the ops listed here only (not Neg).
const bool fake_kernels_registered = [] {
  for (const char* op : {"_Arg", "_Retval", "_Send", "Mul"})
    KernelRegistry::Global().Register(op, "FAKE", DType::kFloat32, [](const Node& node) {
      return std::unique_ptr<OpKernel>(new CheckedKernel(node));
    });
  for (const char* op :
       {"Const", "Identity", "Shape", "Reshape", "HostConst", "_HostToDevice", "_DeviceToHost"})
    KernelRegistry::Global().Register(op, "FAKE", DType::kInvalid, [](const Node& node) {
      return std::unique_ptr<OpKernel>(new CheckedKernel(node));
    });
  KernelRegistry::Global().Register("_Recv", "FAKE", DType::kInvalid, [](const Node& node) {
    return std::unique_ptr<OpKernel>(new FakeRecvKernel(node));
  });
  return true;
}();

// As a GPU declares its shape-like inputs (ops/cuda/host_memory.cc).
REGISTER_HOST_MEMORY("Reshape", "FAKE", "shape");
REGISTER_HOST_MEMORY("Shape", "FAKE", "output");
REGISTER_HOST_MEMORY("HostConst", "FAKE", "output");
REGISTER_HOST_MEMORY("_HostToDevice", "FAKE", "input");
REGISTER_HOST_MEMORY("_DeviceToHost", "FAKE", "output");

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
  FeedList feeds = {{x, FloatTensor({1, 2, 3})}};

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
  FeedList feeds = {{x, FloatTensor({1, -2})}};

  Session strict(s, Mixed());
  ExpectError([&] { strict.Run(feeds, {negated}); }, Code::kInvalidArgument,
              "Neg 'negated' requests device '/device:FAKE:0'");
  Session soft(s, Mixed(/*soft=*/true));
  RunMetadata metadata;
  ExpectEqual(soft.Run(feeds, {negated}, {}, Traced(), &metadata)[0], FloatTensor({-1, 2}));
  CHECK(DevicesRun(metadata)["negated"] == kCpu);
}

TEST_CASE("a request for a device the session lacks names the session's devices", "[cluster]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {2});
  Output on_gpu = ops::Mul(s.WithOpName("on_gpu").WithDevice("/device:GPU:0"), x, x);
  Session strict(s, Mixed());
  ExpectError([&] { strict.Run({{x, FloatTensor({1, 2})}}, {on_gpu}); }, Code::kInvalidArgument,
              "Mul 'on_gpu' requests device '/device:GPU:0' but this session has only " + kCpu + ", " + kFake);
  Session soft(s, Mixed(/*soft=*/true));
  ExpectEqual(soft.Run({{x, FloatTensor({1, 2})}}, {on_gpu})[0], FloatTensor({1, 4}));
}

namespace {

// y = x * x on the FAKE device, reshaped there four times by shapes that
// come from a Const, from Shape on the device (host memory), from the host
// CPU, and from a device-memory copy of the Shape. x's batch is unknown, so
// only the Const is a value the graph knows.
struct ReshapeGraph {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x").WithDevice(kCpu), DType::kFloat32, {-1, 3});
  Scope fake = s.WithDevice(kFake);
  Output y = ops::Mul(fake.WithOpName("y"), x, x);
  Output by_const = ops::Reshape(fake.WithOpName("by_const"), y,
                                 ops::Const(fake.WithOpName("shape"), Tensor::FromVector<int32_t>({3, 2})));
  Output shape_y = ops::Shape(fake.WithOpName("shape_y"), y);
  Output by_shape = ops::Reshape(fake.WithOpName("by_shape"), y, shape_y);
  Output shape_x = ops::Shape(s.WithOpName("shape_x").WithDevice(kCpu), x);
  Output by_host = ops::Reshape(fake.WithOpName("by_host"), y, shape_x);
  Output copied = ops::Identity(fake.WithOpName("copied"), shape_y);
  Output by_copy = ops::Reshape(fake.WithOpName("by_copy"), y, copied);
};

// The ops of a partition, counted.
std::map<std::string, int> OpCounts(const Graph& graph) {
  std::map<std::string, int> counts;
  for (const Node* node : graph.nodes()) ++counts[node->op()];
  return counts;
}

}  // namespace

TEST_CASE("host-memory inputs on a device are fed from the host without copies where the graph allows",
          "[cluster]") {
  ReshapeGraph g;
  Placement placement = Place(g.s.graph(), {kCpu, kFake});
  std::vector<DevicePartition> parts = Partition(g.s.graph(), placement);
  REQUIRE(parts.size() == 2);
  const Graph& fake = *parts[1].graph;
  REQUIRE(parts[1].device == kFake);
  std::map<std::string, int> ops = OpCounts(fake);
  CHECK(ops["HostConst"] == 1);      // the Const's value, for by_const
  CHECK(ops["_HostToDevice"] == 1);  // Shape's host output into Identity
  CHECK(ops["_DeviceToHost"] == 1);  // Identity's device output into by_copy
  // shape_x arrives in host memory; x in device memory.
  int host_receipts = 0;
  for (const Node* node : fake.nodes())
    if (node->op() == "_Recv") {
      bool host = node->attr<bool>("host_memory");
      host_receipts += host;
      CHECK(host == (node->attr<std::string>("tensor_name") == "shape_x:0"));
    }
  CHECK(host_receipts == 1);
  // On the host CPU nothing moves.
  std::map<std::string, int> cpu_ops = OpCounts(*parts[0].graph);
  CHECK(cpu_ops.count("HostConst") + cpu_ops.count("_HostToDevice") + cpu_ops.count("_DeviceToHost") == 0);
}

TEST_CASE("a session over a device with host-memory inputs computes the host's results", "[cluster]") {
  ReshapeGraph g;
  Tensor x = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}).Reshaped(Shape{2, 3});
  Tensor squares = Tensor::FromVector<float>({1, 4, 9, 16, 25, 36});
  Session mixed(g.s, Mixed());
  RunMetadata metadata;
  // Each FAKE kernel fails when an input is in the wrong memory.
  std::vector<Tensor> out =
      mixed.Run({{g.x, x}}, {g.by_const, g.by_shape, g.by_host, g.by_copy}, {}, Traced(), &metadata);
  ExpectEqual(out[0], squares.Reshaped(Shape{3, 2}));
  for (int i = 1; i < 4; ++i) ExpectEqual(out[i], squares.Reshaped(Shape{2, 3}));
  std::map<std::string, int> ran;
  for (const NodeExecStats& stats : metadata.step_stats)
    if (stats.device == kFake) ++ran[stats.op];
  CHECK(ran["HostConst"] == 1);
  CHECK(ran["_DeviceToHost"] == 1);
}

TEST_CASE("a graph wholly on a device with host-memory inputs gets its moves too", "[cluster]") {
  Scope s = Scope::NewRootScope().WithDevice(kFake);
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {4});
  Output shape = ops::Const(s.WithOpName("shape"), Tensor::FromVector<int32_t>({2, 2}));
  Output reshaped = ops::Reshape(s.WithOpName("reshaped"), x, shape);
  Session mixed(s, Mixed());
  RunMetadata metadata;
  Tensor fed = Tensor::FromVector<float>({1, 2, 3, 4});
  ExpectEqual(mixed.Run({{x, fed}}, {reshaped}, {}, Traced(), &metadata)[0],
              Tensor::FromVector<float>({1, 2, 3, 4}).Reshaped(Shape{2, 2}));
  std::map<std::string, std::string> ran = DevicesRun(metadata);
  CHECK(ran["reshaped"] == kFake);
  CHECK(MixedCluster::loaded == std::set<std::string>{kFake});  // one partition, not cut
  bool host_const = false;
  for (const NodeExecStats& stats : metadata.step_stats) host_const |= stats.op == "HostConst";
  CHECK(host_const);
}

TEST_CASE("a partition that hands a device kernel a value in the wrong memory is refused when loaded",
          "[cluster]") {
  // As a process without the device's host-memory declarations would cut it:
  // Shape's output, made in host memory, straight into Identity, which reads
  // device memory (a real GPU kernel would be handed a host pointer).
  auto graph = std::make_shared<Graph>();
  Node* x = graph->AddNode({.name = "x", .op = "_Arg", .attrs = {{"T", DType::kFloat32}, {"index", int64_t{0}}}});
  Node* shape = graph->AddNode({.name = "shape_x", .op = "Shape", .inputs = {{x, 0}},
                                .attrs = {{"T", DType::kFloat32}, {"out_type", DType::kInt32}}});
  graph->AddNode({.name = "copied", .op = "Identity", .inputs = {{shape, 0}}, .attrs = {{"T", DType::kInt32}}});
  ThreadPool pool(1, "test-wrong-memory");
  std::unique_ptr<Device> cpu = NewCpuDevice(kCpu, &pool);
  FakeDevice fake(kFake, *cpu);
  ResourceStore resources;
  ExpectError([&] { Executor executor(graph, &fake, &resources); }, Code::kInternal,
              "Identity 'copied' on " + kFake + ": input 0 comes from Shape 'shape_x' in host memory but its "
              "kernel reads it from device memory");
  CHECK_NOTHROW(Executor(graph, cpu.get(), &resources));  // on the host, every value is in host memory
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

TEST_CASE("a step too short for its partition's feeds or fetches ends with an error, not a throw", "[cluster]") {
  auto graph = std::make_shared<Graph>();
  Node* arg = graph->AddNode({.name = "x", .op = "_Arg", .attrs = {{"T", DType::kFloat32}, {"index", int64_t{1}}}});
  graph->AddNode({.name = "y", .op = "_Retval", .inputs = {{arg, 0}},
                  .attrs = {{"T", DType::kFloat32}, {"index", int64_t{0}}}});
  ThreadPool pool(1, "test-short-step");
  std::unique_ptr<Device> cpu = NewCpuDevice("/job:localhost/replica:0/task:0/device:CPU:0", &pool);
  ResourceStore resources;
  ExecutorRunner runner(std::make_shared<Executor>(graph, cpu.get(), &resources));

  std::vector<Tensor> one_arg{Tensor::Scalar(1.0f)}, retvals(1);
  ExpectError([&] { RunStep({&runner}, {9, &one_arg, &retvals, nullptr}, {}, nullptr); }, Code::kInvalidArgument,
              "needs 2 fed values and room for 1 fetches, got 1 and 1");
  std::vector<Tensor> two_args{Tensor::Scalar(1.0f), Tensor::Scalar(2.0f)}, no_room;
  ExpectError([&] { RunStep({&runner}, {10, &two_args, &no_room, nullptr}, {}, nullptr); },
              Code::kInvalidArgument, "got 2 and 0");
  RunStep({&runner}, {11, &two_args, &retvals, nullptr}, {}, nullptr);
  CHECK(retvals[0].scalar<float>() == 2.0f);
}
