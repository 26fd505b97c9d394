// Graphs that span the host CPU and a GPU in one process: a training step
// cut between the two devices (the GPU's _Send and _Recv copy what crosses),
// and a GPU session whose ops without a GPU kernel fall back to the host
// under soft placement. Each must equal the all-CPU run within the float
// tolerance of tests/ops/device_test_util.h. Without a GPU they are skipped
// (a WARN says so).
#include <catch2/catch.hpp>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "graph/kernel.h"
#include "ops/ops.h"
#include "tests/ops/device_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

const std::string kHost = "/job:localhost/replica:0/task:0/device:CPU:0";
const std::string kGpu = "/job:localhost/replica:0/task:0/device:GPU:0";

// A two-layer MLP with dense softmax cross-entropy (no GPU kernel) and an
// Adam step. `first` and `second` are the layers' device requests.
struct CutMlp {
  Scope s = Scope::NewRootScope();
  Output x, labels, loss;
  Node* train = nullptr;
  Node* init = nullptr;
  std::vector<Output> vars;

  CutMlp(const std::string& first, const std::string& second) {
    Scope a = s.WithDevice(first), b = s.WithDevice(second);
    x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, Shape{16, 8});
    labels = ops::Placeholder(s.WithOpName("labels"), DType::kFloat32, Shape{16, 4});
    Output w1 = ops::Variable(a.WithOpName("w1"), Floats({8, 32}, 1, -0.5, 0.5));
    Output b1 = ops::Variable(a.WithOpName("b1"), Floats({32}, 2, -0.1, 0.1));
    Output w2 = ops::Variable(b.WithOpName("w2"), Floats({32, 4}, 3, -0.5, 0.5));
    Output b2 = ops::Variable(b.WithOpName("b2"), Floats({4}, 4, -0.1, 0.1));
    vars = {w1, b1, w2, b2};
    Output hidden = ops::Relu(a, ops::BiasAdd(a, ops::MatMul(a, x, w1), b1));
    Output logits = ops::BiasAdd(b, ops::MatMul(b, hidden, w2), b2);
    loss = ops::Mean(b.WithOpName("loss"), ops::SoftmaxCrossEntropyWithLogits(b.WithOpName("xent"), logits, labels).loss, 0);
    train = autodiff::AdamOptimizer(autodiff::ConstantLearningRate(s, 0.01)).Minimize(s, loss);
    init = ops::GlobalVariablesInitializer(s);
  }

  FeedList Feeds() const {
    Tensor one_hot = Tensor::Zeros(DType::kFloat32, {16, 4});
    for (int i = 0; i < 16; ++i) one_hot.data<float>()[i * 4 + (i * 7) % 4] = 1;
    return {{x, Floats({16, 8}, 5)}, {labels, one_hot}};
  }

  // The loss of each of three Adam steps, then the variables.
  std::vector<Tensor> Train(Session& session, RunMetadata* last_step = nullptr) const {
    session.Run({}, {}, {init});
    std::vector<Tensor> out;
    for (int step = 0; step < 3; ++step) {
      RunOptions options;
      options.trace = last_step != nullptr && step == 2;
      out.push_back(session.Run(Feeds(), {loss}, {train}, options, options.trace ? last_step : nullptr)[0]);
    }
    std::vector<Tensor> values = session.Run(std::vector<TensorName>(vars.begin(), vars.end()));
    out.insert(out.end(), values.begin(), values.end());
    return out;
  }
};

std::vector<Tensor> TrainOnCpu() {
  CutMlp mlp("", "");
  Session session(mlp.s);
  return mlp.Train(session);
}

void ExpectClose(const std::vector<Tensor>& actual, const std::vector<Tensor>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    INFO("output " << i);
    CHECK(NormalizedError(actual[i], expected[i]) <= 10 * DeviceTolerance(DType::kFloat32));
  }
}

// The device each traced node ran on, by node name.
std::map<std::string, std::string> DevicesRun(const RunMetadata& metadata) {
  std::map<std::string, std::string> devices;
  for (const NodeExecStats& stats : metadata.step_stats) devices[stats.node] = stats.device;
  return devices;
}

}  // namespace

TEST_CASE("cuda: a training step cut between the host CPU and the GPU equals the all-CPU one", "[cuda]") {
  if (SkipWithoutGpu("the CPU/GPU cut")) return;
  CutMlp mlp("/device:CPU:0", "/device:GPU:0");
  SessionOptions options;
  options.devices = {kHost, kGpu};
  options.allow_soft_placement = true;  // the cross-entropy has no GPU kernel
  Session session(mlp.s, options);
  RunMetadata metadata;
  ExpectClose(mlp.Train(session, &metadata), TrainOnCpu());
  std::map<std::string, std::string> ran = DevicesRun(metadata);
  CHECK(ran["w1"] == kHost);
  CHECK(ran["w2"] == kGpu);
  CHECK(ran["xent"] == kHost);
  int sends_from_gpu = 0, recvs_on_gpu = 0;
  for (const NodeExecStats& stats : metadata.step_stats) {
    sends_from_gpu += stats.op == "_Send" && stats.device == kGpu;
    recvs_on_gpu += stats.op == "_Recv" && stats.device == kGpu;
  }
  CHECK(sends_from_gpu > 0);
  CHECK(recvs_on_gpu > 0);
}

TEST_CASE("cuda: a GPU session runs an op without a GPU kernel on the host under soft placement", "[cuda]") {
  if (SkipWithoutGpu("the soft-placement fallback")) return;
  CutMlp mlp("", "");
  SessionOptions options;
  options.devices = {"/device:GPU:0"};
  options.allow_soft_placement = true;
  Session session(mlp.s, options);
  RunMetadata metadata;
  ExpectClose(mlp.Train(session, &metadata), TrainOnCpu());
  std::map<std::string, std::string> ran = DevicesRun(metadata);
  CHECK(ran["xent"] == "/device:CPU:0");
  CHECK(ran["w1"] == "/device:GPU:0");
  CHECK(ran["w2"] == "/device:GPU:0");

  SessionOptions strict;
  strict.devices = {"/device:GPU:0"};
  Session without_fallback(mlp.s, strict);
  ExpectError([&] { without_fallback.Run(mlp.Feeds(), {mlp.loss}); }, Code::kUnimplemented,
              "op SoftmaxCrossEntropyWithLogits has no GPU kernel");
}

// Every fed value reaches the GPU through the device's ring of pinned upload
// buffers (graph/cuda/cuda_device.h), and the upload returns before its copy
// is done. Nine feeds a step, more than the ring's buffers, growing past the
// first buffer size (1 MiB) so that buffers are reallocated, over three steps
// with new values: a buffer reused or freed before its copy finished would
// show as a wrong value.
TEST_CASE("cuda: uploads through the staging ring keep every fed value", "[cuda]") {
  if (SkipWithoutGpu("the upload ring")) return;
  Scope s = Scope::NewRootScope().WithDevice("/device:GPU:0");
  std::vector<Output> feeds, doubled;
  for (int i = 0; i < 9; ++i) {
    feeds.push_back(ops::Placeholder(s.WithOpName(StrCat("x", i)), DType::kFloat32));
    doubled.push_back(ops::Mul(s, feeds.back(), ops::Const(s, 2.0f)));
  }
  SessionOptions options;
  options.devices = {"/device:GPU:0"};
  Session session(s, options);
  for (uint64_t step = 0; step < 3; ++step) {
    FeedList values;
    for (int i = 0; i < 9; ++i)  // 256 to 1M floats (4 MiB)
      values.push_back({feeds[i], Floats({int64_t{1} << (8 + 3 * (i % 5))}, step * 9 + i)});
    std::vector<Tensor> out = session.Run(values, std::vector<TensorName>(doubled.begin(), doubled.end()));
    for (int i = 0; i < 9; ++i) {
      INFO("step " << step << ", feed " << i);
      Tensor twice = values[i].second.Clone();
      for (float& v : twice.flat<float>()) v *= 2;
      ExpectEqual(out[i], twice);
    }
  }
}
