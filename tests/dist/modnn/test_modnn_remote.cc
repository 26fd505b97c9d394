// MoDNN's strips on real worker processes: a conv layer (+ bias, ReLU, max
// pool) split by dist::ModnnSplit into strips placed on two `dflow server`
// tasks gives, through a remote session, the same bits as the unsplit layer
// run in this process — the halo rows and the strips' results really cross
// the ZeroMQ transport.
#include <catch2/catch.hpp>

#include "dist/modnn/modnn_split.h"
#include "ops/ops.h"
#include "tests/dist/mlp_fixture.h"
#include "tests/dist/server_process.h"
#include "tests/ops/op_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

const Shape kInput{2, 21, 13, 5};

// conv 3x3 SAME (8 filters) + bias + ReLU + 2x2 max pool, the last node "out".
struct ConvLayer {
  Scope s = Scope::NewRootScope();
  Output x;

  ConvLayer() {
    x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, kInput);
    auto w = ops::Const(s.WithOpName("w"), RandomTensor(DType::kFloat32, Shape{3, 3, 5, 8}, 11));
    auto b = ops::Const(s.WithOpName("b"), RandomTensor(DType::kFloat32, Shape{8}, 12));
    auto conv = ops::Conv2D(s.WithOpName("conv"), x, w, ops::Conv2DAttrs{});
    auto act = ops::Relu(s.WithOpName("act"), ops::BiasAdd(s.WithOpName("bias_add"), conv, b));
    ops::MaxPool(s.WithOpName("out"), act, {{1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"});
  }
};

Tensor RunUnsplit(const Tensor& input) {
  ConvLayer layer;
  SessionOptions options;
  options.num_threads = 1;
  Session session(layer.s, options);
  return session.Run({{layer.x, input}}, {TensorName("out")})[0];
}

// The layer split into strips on the cluster's tasks (speeds as given), the
// input sliced and the strips joined on task 0, run in a remote session.
Tensor RunSplitOnTasks(const ScratchCluster& cluster, const std::vector<double>& speeds,
                       const Tensor& input) {
  ConvLayer layer;
  dist::ModnnSplitOptions options;
  options.owner_device = cluster.device(0);
  for (size_t k = 0; k < speeds.size(); ++k)
    options.strips.push_back({cluster.device(static_cast<int>(k)), speeds[k]});
  dist::ModnnSplit(layer.s.graph(), "conv", options);
  SessionOptions remote;
  remote.target = cluster.target(0);
  Session session(layer.s, remote);
  return WithDeadline([&] { return session.Run({{layer.x, input}}, {TensorName("out")})[0]; }, 60);
}

}  // namespace

TEST_CASE("a conv layer split into strips on two worker processes computes the unsplit layer's bits",
          "[remote][modnn]") {
  ScratchCluster cluster(2);
  ServerProcess task0(cluster, 0), task1(cluster, 1);
  Tensor input = RandomTensor(DType::kFloat32, kInput, 3);
  Tensor expected = RunUnsplit(input);
  SECTION("equal speeds") { ExpectEqual(RunSplitOnTasks(cluster, {1, 1}, input), expected); }
  SECTION("task 1 three times faster: uneven strips") {
    ExpectEqual(RunSplitOnTasks(cluster, {1, 3}, input), expected);
  }
}
