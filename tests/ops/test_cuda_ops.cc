// GPU kernels against the CPU's (the array and index ops in
// test_cuda_array.cc): each case runs on every available device
// through tests/ops/device_test_util.h. Without a GPU the comparisons are
// skipped (a WARN says so); the checks that need no GPU (every op of an MLP
// training step has a GPU kernel, the error for a missing GPU) still run.
#include <catch2/catch.hpp>

#include <limits>

#include "autodiff/learning_rate.h"
#include "autodiff/optimizers.h"
#include "graph/kernel.h"
#include "ops/ops.h"
#include "tests/ops/device_test_util.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

bool BuiltWithCuda() { return KernelRegistry::Global().Has("MatMul", "GPU"); }

// A two-layer MLP with a softmax cross-entropy loss and an optimizer step.
struct Mlp {
  Scope s = Scope::NewRootScope();
  Output x, labels, loss;
  Node* train = nullptr;
  Node* init = nullptr;
  std::vector<Output> vars;

  template <typename MakeOptimizer>
  explicit Mlp(MakeOptimizer make) {
    x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, Shape{16, 8});
    labels = ops::Placeholder(s.WithOpName("labels"), DType::kInt64, Shape{16});
    Output w1 = ops::Variable(s.WithOpName("w1"), Floats({8, 32}, 1, -0.5, 0.5));
    Output b1 = ops::Variable(s.WithOpName("b1"), Floats({32}, 2, -0.1, 0.1));
    Output w2 = ops::Variable(s.WithOpName("w2"), Floats({32, 4}, 3, -0.5, 0.5));
    Output b2 = ops::Variable(s.WithOpName("b2"), Floats({4}, 4, -0.1, 0.1));
    vars = {w1, b1, w2, b2};
    Output hidden = ops::Relu(s, ops::BiasAdd(s, ops::MatMul(s, x, w1), b1));
    Output logits = ops::BiasAdd(s, ops::MatMul(s, hidden, w2), b2);
    loss = ops::Mean(s, ops::SparseSoftmaxCrossEntropyWithLogits(s, logits, labels).loss, 0);
    auto optimizer = make(s);
    train = optimizer.Minimize(s, loss);
    init = ops::GlobalVariablesInitializer(s);
  }

  FeedList Feeds() const {
    Tensor label_values = RandomTensor(DType::kInt64, Shape{16}, 6, 0, 3.49);
    return {{x, Floats({16, 8}, 5)}, {labels, label_values}};
  }
};

autodiff::GradientDescentOptimizer Sgd(const Scope& s) {
  return autodiff::GradientDescentOptimizer(autodiff::ConstantLearningRate(s, 0.1));
}

}  // namespace

TEST_CASE("cuda: asking for a GPU that is not visible is a clear error", "[cuda]") {
  if (GpuVisible()) {
    WARN("the no-GPU error case skipped: a GPU is visible");
    return;
  }
  Scope s = Scope::NewRootScope();
  ops::Const(s, 1.0f);
  SessionOptions options;
  options.devices = {"/device:GPU:0"};
  ExpectError([&] { Session session(s, options); }, Code::kUnavailable,
              "no GPU is visible for /device:GPU:0: " + DiscoverGpus().reason);
}

TEST_CASE("cuda: a device string that names no device type is rejected", "[cuda]") {
  Scope s = Scope::NewRootScope();
  SessionOptions options;
  options.devices = {"/device:TPU:0"};
  ExpectError([&] { Session session(s, options); }, Code::kInvalidArgument, "TPU");
}

TEST_CASE("cuda: every op of an MLP training step has a GPU kernel", "[cuda]") {
  if (!BuiltWithCuda()) {
    WARN("skipped: dflow was built without CUDA");
    return;
  }
  auto check = [](const Mlp& mlp) { CheckGpuKernelsFor(mlp.s.graph()); };
  check(Mlp(Sgd));
  check(Mlp([](const Scope& s) {
    return autodiff::MomentumOptimizer(autodiff::ConstantLearningRate(s, 0.1), 0.9);
  }));
  check(Mlp([](const Scope& s) {
    return autodiff::AdamOptimizer(autodiff::ConstantLearningRate(s, 0.01));
  }));
}

TEST_CASE("cuda: an op without a GPU kernel names the op and where kernels exist", "[cuda]") {
  if (SkipWithoutGpu("the missing-kernel case")) return;
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DType::kFloat32, Shape{3});
  Output y = ops::LeakyRelu(s, x);  // no GPU kernel (yet)
  SessionOptions options;
  options.devices = {"/device:GPU:0"};
  Session session(s, options);
  ExpectError([&] { session.Run({{x, Floats({3}, 1)}}, {y}); }, Code::kUnimplemented,
              "op LeakyRelu has no GPU kernel");
}

TEST_CASE("cuda: an op whose GPU kernels lack the dtype names the dtype", "[cuda]") {
  if (SkipWithoutGpu("the missing-dtype case")) return;
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s, DType::kFloat64, Shape{3});
  Output y = ops::Exp(s.WithOpName("e"), x);  // float32 only on the GPU
  SessionOptions options;
  options.devices = {"/device:GPU:0"};
  Session session(s, options);
  ExpectError([&] { session.Run({{x, RandomTensor(DType::kFloat64, {3}, 2)}}, {y}); },
              Code::kUnimplemented, "Exp 'e': op Exp has no GPU kernel for dtype float64");
}

TEST_CASE("cuda: unary ops match the CPU", "[cuda]") {
  for (std::string op : {"Neg", "Abs", "Square", "Exp", "Tanh", "Sigmoid", "Relu"})
    ExpectSameOnAllDevices({.op = op, .inputs = {Floats({5, 7}, 11)}});
  ExpectSameOnAllDevices({.op = "Relu6", .inputs = {Floats({5, 7}, 13, -3, 9)}});
  for (std::string op : {"Sign", "Sin", "Cos", "Floor", "Ceil", "Round", "Elu", "Softplus"})
    ExpectSameOnAllDevices({.op = op, .inputs = {Floats({5, 7}, 14, -6, 6)}});
  ExpectSameOnAllDevices({.op = "Log1p", .inputs = {Floats({5, 7}, 15, -0.9, 5)}});
  for (std::string op : {"Sqrt", "Rsqrt", "Log", "Reciprocal"})
    ExpectSameOnAllDevices({.op = op, .inputs = {Floats({5, 7}, 12, 0.1, 3)}});
}

TEST_CASE("cuda: binary ops broadcast like the CPU", "[cuda]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{4, 6}, {4, 6}}, {{4, 6}, {6}}, {{4, 1}, {1, 6}}, {{}, {3, 2}}, {{2, 1, 3}, {4, 1}}};
  for (std::string op : {"Add", "Sub", "Mul", "Div", "Maximum", "Minimum", "SquaredDifference"})
    for (const auto& [a, b] : shapes)
      ExpectSameOnAllDevices({.op = op, .inputs = {Floats(a, 21), Floats(b, 22, 0.5, 2)}});
  ExpectSameOnAllDevices({.op = "Pow", .inputs = {Floats({3, 4}, 23, 0.1, 2), Floats({4}, 24)}});
  ExpectSameOnAllDevices({.op = "ReluGrad", .inputs = {Floats({3, 4}, 25), Floats({3, 4}, 26)}});
  for (std::string op : {"FloorDiv", "FloorMod"})  // signs of both operands vary
    ExpectSameOnAllDevices({.op = op, .inputs = {Floats({3, 4}, 27, -9, 9), Floats({4}, 28, -3, 3)}});
}

TEST_CASE("cuda: integer binary ops wrap and divide like the CPU", "[cuda]") {
  constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min(), kMax32 = std::numeric_limits<int32_t>::max();
  constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
  // Mixed signs, -1 divisors (INT_MIN / -1 wraps), overflowing sums and products, a broadcast.
  Tensor x32 = Tensor::FromVector<int32_t>({7, -7, 7, -7, kMin32, kMax32, 0, 5}, {2, 4});
  Tensor y32 = Tensor::FromVector<int32_t>({2, 2, -2, -1}, {4});
  Tensor x64 = Tensor::FromVector<int64_t>({9, -9, kMin64, 3, 100, -100}, {3, 2});
  Tensor y64 = Tensor::FromVector<int64_t>({-4, -1, 4, 7, 3, 1}, {3, 2});
  for (std::string op : {"Add", "Sub", "Mul", "Div", "Maximum", "Minimum", "SquaredDifference",
                         "FloorDiv", "FloorMod"}) {
    INFO(op);
    ExpectSameOnAllDevices({.op = op, .inputs = {x32, y32}});
    ExpectSameOnAllDevices({.op = op, .inputs = {x64, y64}});
    ExpectSameOnAllDevices({.op = op, .inputs = {Tensor::Scalar<int64_t>(-13), y64}});
  }
}

TEST_CASE("cuda: an integer division by zero is named on the GPU too", "[cuda]") {
  if (SkipWithoutGpu("the zero-divisor case")) return;
  for (std::string op : {"Div", "FloorDiv", "FloorMod"})
    ExpectError(
        [&] {
          RunOp({.op = op,
                 .inputs = {Tensor::FromVector<int32_t>({4, 5, 6}), Tensor::FromVector<int32_t>({1, 0, 0})},
                 .device = "/device:GPU:0"});
        },
        Code::kInvalidArgument, "integer division by zero (element 1 of y, shape [3], is 0)");
}

TEST_CASE("cuda: AddN, BiasAdd and BiasAddGrad match the CPU", "[cuda]") {
  ExpectSameOnAllDevices({.op = "AddN",
                          .inputs = {Floats({3, 5}, 31), Floats({3, 5}, 32), Floats({3, 5}, 33)}});
  ExpectSameOnAllDevices({.op = "BiasAdd", .inputs = {Floats({2, 3, 5}, 34), Floats({5}, 35)}});
  ExpectSameOnAllDevices({.op = "BiasAddGrad", .inputs = {Floats({2, 3, 5}, 36)}});
}

TEST_CASE("cuda: softmax, log-softmax and sparse cross entropy match the CPU", "[cuda]") {
  for (std::string op : {"Softmax", "LogSoftmax"})
    ExpectSameOnAllDevices({.op = op, .inputs = {Floats({6, 300}, 51, -5, 5)}});
  for (DType label_type : {DType::kInt32, DType::kInt64})
    ExpectSameOnAllDevices({.op = "SparseSoftmaxCrossEntropyWithLogits",
                            .inputs = {Floats({8, 10}, 52, -5, 5),
                                       RandomTensor(label_type, Shape{8}, 53, 0, 9.49)}});
}

TEST_CASE("cuda: a label out of range names the label on the GPU too", "[cuda]") {
  if (SkipWithoutGpu("the bad-label case")) return;
  ExpectError(
      [] {
        RunOp({.op = "SparseSoftmaxCrossEntropyWithLogits",
               .inputs = {Floats({2, 3}, 54), Tensor::FromVector<int64_t>({1, 7})},
               .device = "/device:GPU:0"});
      },
      Code::kInvalidArgument, "label 7");
}

TEST_CASE("cuda: MatMul and BatchMatMul on cuBLAS match the CPU", "[cuda]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Shape a = ta ? Shape{33, 17} : Shape{17, 33};
      Shape b = tb ? Shape{9, 33} : Shape{33, 9};
      ExpectSameOnAllDevices({.op = "MatMul", .inputs = {Floats(a, 61), Floats(b, 62)},
                              .attrs = {{"transpose_a", ta}, {"transpose_b", tb}}});
    }
  ExpectSameOnAllDevices({.op = "MatMul",
                          .inputs = {RandomTensor(DType::kFloat64, {5, 6}, 63),
                                     RandomTensor(DType::kFloat64, {6, 7}, 64)}});
  ExpectSameOnAllDevices({.op = "BatchMatMul", .inputs = {Floats({3, 4, 5}, 65), Floats({3, 5, 2}, 66)}});
  ExpectSameOnAllDevices({.op = "BatchMatMul", .inputs = {Floats({3, 5, 4}, 67), Floats({5, 2}, 68)},
                          .attrs = {{"adj_x", true}}});
  ExpectSameOnAllDevices({.op = "BatchMatMul", .inputs = {Floats({4, 5}, 69), Floats({2, 3, 6, 5}, 70)},
                          .attrs = {{"adj_y", true}}});
}

TEST_CASE("cuda: Fill, ZerosLike, Reshape, Identity and Cast match the CPU", "[cuda]") {
  ExpectSameOnAllDevices({.op = "Fill",
                          .inputs = {Tensor::FromVector<int64_t>({3, 4}), Tensor::Scalar(2.5f)},
                          .const_inputs = {0}});
  ExpectSameOnAllDevices({.op = "ZerosLike", .inputs = {Floats({3, 4}, 71)}});
  ExpectSameOnAllDevices({.op = "Identity", .inputs = {Floats({3, 4}, 72)}});
  ExpectSameOnAllDevices({.op = "Reshape",
                          .inputs = {Floats({3, 4}, 73), Tensor::FromVector<int64_t>({2, -1})},
                          .const_inputs = {1}});
  for (DType to : {DType::kFloat64, DType::kInt32, DType::kInt64})
    ExpectSameOnAllDevices({.op = "Cast", .inputs = {Floats({3, 4}, 74, -100, 100)},
                            .attrs = {{"DstT", to}}});
  ExpectSameOnAllDevices({.op = "Cast", .inputs = {RandomTensor(DType::kInt32, {5}, 75, -9, 9)},
                          .attrs = {{"DstT", DType::kFloat32}}});
}

TEST_CASE("cuda: bool and byte tensors cast, fill, select and broadcast like the CPU", "[cuda]") {
  // Anything to bool is x != 0 (negatives and NaN too); floats to bytes
  // truncate and saturate.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor specials = Tensor::FromVector<float>({-2.5f, -0.0f, 0.0f, 0.5f, 1.0f, 300.0f, -300.0f, nan});
  for (DType to : {DType::kBool, DType::kUInt8, DType::kInt8})
    ExpectSameOnAllDevices({.op = "Cast", .inputs = {specials}, .attrs = {{"DstT", to}}});
  Tensor flags = Tensor::FromVector<bool>({true, false, true}, Shape{3});
  for (DType to : {DType::kFloat32, DType::kInt32, DType::kInt64})
    ExpectSameOnAllDevices({.op = "Cast", .inputs = {flags}, .attrs = {{"DstT", to}}});
  ExpectSameOnAllDevices({.op = "Cast", .inputs = {Tensor::FromVector<uint8_t>({0, 7, 200, 255})},
                          .attrs = {{"DstT", DType::kInt8}}});
  ExpectSameOnAllDevices({.op = "Fill", .inputs = {Tensor::FromVector<int64_t>({2, 3}), Tensor::Scalar(true)},
                          .const_inputs = {0}});
  ExpectSameOnAllDevices({.op = "Select",
                          .inputs = {flags, Tensor::FromVector<uint8_t>({1, 2, 3}),
                                     Tensor::FromVector<uint8_t>({9, 8, 7})}});
  ExpectSameOnAllDevices({.op = "BroadcastTo",
                          .inputs = {Tensor::FromVector<bool>({true, false}, Shape{2, 1}),
                                     Tensor::FromVector<int64_t>({2, 3})},
                          .const_inputs = {1}});
}

TEST_CASE("cuda: float16 casts, and Truncate, like the CPU", "[cuda]") {
  // To float16: nearest even, 70000 beyond its range to inf, 1e-8 below its
  // smallest subnormal to 0; from it: through float, saturating integers.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor floats = Tensor::FromVector<float>({-2.5f, -0.0f, 0.1f, 0.3f, 300.0f, -300.0f, 65519.0f, 70000.0f,
                                             1e-8f, 6e-8f, nan});
  ExpectSameOnAllDevices({.op = "Cast", .inputs = {floats}, .attrs = {{"DstT", DType::kFloat16}}});
  const Tensor halves = floats.CastTo(DType::kFloat16);
  for (DType to : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kBool, DType::kUInt8,
                   DType::kInt8})
    ExpectSameOnAllDevices({.op = "Cast", .inputs = {halves}, .attrs = {{"DstT", to}}});
  for (const Tensor& from : {floats.CastTo(DType::kFloat64), RandomTensor(DType::kInt64, {6}, 92, -70000, 70000),
                             Tensor::FromVector<bool>({true, false}, Shape{2})})
    ExpectSameOnAllDevices({.op = "Cast", .inputs = {from}, .attrs = {{"DstT", DType::kFloat16}}});
  // Truncate narrows toward zero: 0.1 to float and 0.3 to float16 land one
  // step below the nearest value.
  for (DType to : {DType::kFloat16, DType::kFloat32})
    ExpectSameOnAllDevices({.op = "Cast", .inputs = {floats.CastTo(DType::kFloat64)},
                            .attrs = {{"DstT", to}, {"Truncate", true}}});
  ExpectSameOnAllDevices({.op = "Cast", .inputs = {floats}, .attrs = {{"DstT", DType::kFloat16}, {"Truncate", true}}});
}

TEST_CASE("cuda: a Max reduction's gradient (its mask cast from bool) trains like the CPU", "[cuda]") {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("x"), DType::kFloat32, Shape{4, 3});
  Output w = ops::Variable(s.WithOpName("w"), Floats({3, 5}, 91, -0.5, 0.5));
  Output loss = ops::Mean(s, ops::Max(s, ops::MatMul(s, x, w), 1), 0);
  Node* train = Sgd(s).Minimize(s, loss);
  Node* init = ops::GlobalVariablesInitializer(s);
  if (BuiltWithCuda()) CheckGpuKernelsFor(s.graph());  // every op placed on the GPU runs there
  ExpectGraphSameOnAllDevices(s, {{x, Floats({4, 3}, 92)}}, {loss, w}, {{init}, {train}, {train}}, 10);
}

TEST_CASE("cuda: an MLP trains the same on the GPU as on the CPU", "[cuda]") {
  auto compare = [](Mlp mlp) {
    std::vector<std::vector<TensorName>> before = {{mlp.init}};
    for (int step = 0; step < 5; ++step) before.push_back({mlp.train});
    std::vector<TensorName> fetches = {mlp.loss};
    for (const Output& var : mlp.vars) fetches.push_back(var);
    // Five steps compound float32 rounding differences: allow 10x.
    ExpectGraphSameOnAllDevices(mlp.s, mlp.Feeds(), fetches, before, 10);
  };
  compare(Mlp(Sgd));
  compare(Mlp([](const Scope& s) {
    return autodiff::MomentumOptimizer(autodiff::ConstantLearningRate(s, 0.1), 0.9, true);
  }));
  compare(Mlp([](const Scope& s) {
    return autodiff::AdamOptimizer(autodiff::ConstantLearningRate(s, 0.01));
  }));
  compare(Mlp([](const Scope& s) {
    return autodiff::RMSPropOptimizer(autodiff::ConstantLearningRate(s, 0.01), {.momentum = 0.5});
  }));
}

TEST_CASE("cuda: Select, BroadcastTo, OnesLike, Shape and Size match the CPU", "[cuda]") {
  Tensor condition = Tensor::FromVector<bool>({true, false, true}, Shape{3});
  ExpectSameOnAllDevices({.op = "Select", .inputs = {condition, Floats({2, 3}, 81), Floats({3}, 82)}});
  ExpectSameOnAllDevices({.op = "Select",
                          .inputs = {Tensor::Scalar(false), Floats({2, 3}, 83), Floats({2, 3}, 84)}});
  ExpectSameOnAllDevices({.op = "BroadcastTo",
                          .inputs = {Floats({3, 1}, 85), Tensor::FromVector<int64_t>({2, 3, 4})},
                          .const_inputs = {1}});
  ExpectSameOnAllDevices({.op = "OnesLike", .inputs = {Floats({2, 5}, 86)}});
  ExpectSameOnAllDevices({.op = "Shape", .inputs = {Floats({2, 5, 1}, 87)}});
  ExpectSameOnAllDevices({.op = "Size", .inputs = {Floats({2, 5, 1}, 88)}});
}

TEST_CASE("cuda: AssignAdd and AssignSub update variables like the CPU", "[cuda]") {
  Scope s = Scope::NewRootScope();
  Output f = ops::Variable(s.WithOpName("f"), Floats({4}, 91));
  Output i = ops::Variable(s.WithOpName("i"), Tensor::FromVector<int64_t>({5, -3}));
  Output add = ops::AssignAdd(s, f, Floats({4}, 92));
  Output sub = ops::AssignSub(s, i, Tensor::FromVector<int64_t>({7, 1}));
  Node* init = ops::GlobalVariablesInitializer(s);
  ExpectGraphSameOnAllDevices(s, {}, {f, i}, {{init}, {add, sub}, {add, sub}});
}

TEST_CASE("cuda: MaxPool, AvgPool and their gradients match the CPU", "[cuda]") {
  struct Window {
    std::vector<int64_t> ksize, strides;
    std::string padding;
    std::vector<int64_t> explicit_paddings = {};
  };
  // Overlapping windows (stride < size), SAME padding with an odd total,
  // VALID, EXPLICIT asymmetric pads (the GPU kernels clip each window to the
  // image as the CPU's do, so padding is never counted).
  const std::vector<Window> windows = {
      {{1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"},
      {{1, 2, 3, 1}, {1, 1, 2, 1}, "VALID"},
      {{1, 2, 2, 1}, {1, 2, 2, 1}, "SAME"},
      {{1, 3, 3, 1}, {1, 2, 2, 1}, "EXPLICIT", {0, 0, 2, 0, 1, 2, 0, 0}},
      {{1, 2, 3, 1}, {1, 1, 2, 1}, "EXPLICIT", {0, 0, 0, 1, 2, 1, 0, 0}}};
  for (const Window& w : windows) {
    AttrMap attrs = {{"ksize", w.ksize},
                     {"strides", w.strides},
                     {"padding", w.padding},
                     {"explicit_paddings", w.explicit_paddings}};
    Tensor x = Floats({2, 7, 6, 3}, 101);
    for (std::string op : {"MaxPool", "AvgPool"})
      ExpectSameOnAllDevices({.op = op, .inputs = {x}, .attrs = attrs});
    Tensor pooled = RunOp1({.op = "MaxPool", .inputs = {x}, .attrs = attrs});
    ExpectSameOnAllDevices({.op = "MaxPoolGrad",
                            .inputs = {x, pooled, Floats(pooled.shape(), 102)},
                            .attrs = attrs});
    ExpectSameOnAllDevices({.op = "MaxPoolGradGrad",
                            .inputs = {x, pooled, Floats(x.shape(), 103)},
                            .attrs = attrs});
    ExpectSameOnAllDevices({.op = "AvgPoolGrad",
                            .inputs = {Tensor::FromVector<int32_t>({2, 7, 6, 3}),
                                       Floats(pooled.shape(), 104)},
                            .attrs = attrs,
                            .const_inputs = {0}});
  }
}

TEST_CASE("cuda: FusedBatchNorm and its gradient match the CPU", "[cuda]") {
  Tensor x = Floats({2, 5, 4, 3}, 121, -3, 5);
  Tensor scale = Floats({3}, 122, 0.5, 2), offset = Floats({3}, 123);
  Tensor mean = Floats({3}, 124), variance = Floats({3}, 125, 0.5, 2);
  Tensor empty(DType::kFloat32, Shape{0});
  for (bool training : {true, false}) {
    INFO("is_training " << training);
    AttrMap attrs = {{"epsilon", 0.001}, {"is_training", training}};
    ExpectSameOnAllDevices({.op = "FusedBatchNorm",
                            .inputs = {x, scale, offset, training ? empty : mean,
                                       training ? empty : variance},
                            .attrs = attrs});
    ExpectSameOnAllDevices({.op = "FusedBatchNormGrad",
                            .inputs = {Floats(x.shape(), 126), x, scale, mean, variance},
                            .attrs = attrs});
  }
}

TEST_CASE("cuda: the resize ops and their gradients match the CPU", "[cuda]") {
  Tensor images = Floats({2, 5, 7, 3}, 131);
  struct Mode {
    bool align_corners, half_pixel_centers;
  };
  for (Mode mode : {Mode{false, true}, Mode{true, false}, Mode{false, false}})
    for (std::vector<int32_t> size : {std::vector<int32_t>{9, 4}, std::vector<int32_t>{3, 11}}) {
      INFO("align_corners " << mode.align_corners << ", half_pixel_centers "
                            << mode.half_pixel_centers << ", size " << size[0] << "x" << size[1]);
      AttrMap attrs = {{"align_corners", mode.align_corners},
                       {"half_pixel_centers", mode.half_pixel_centers}};
      Tensor grads = Floats({2, size[0], size[1], 3}, 132);
      for (std::string op : {"ResizeNearestNeighbor", "ResizeBilinear"})
        ExpectSameOnAllDevices({.op = op, .inputs = {images, Tensor::FromVector<int32_t>(size)},
                                .attrs = attrs, .const_inputs = {1}});
      ExpectSameOnAllDevices({.op = "ResizeNearestNeighborGrad",
                              .inputs = {grads, Tensor::FromVector<int32_t>({5, 7})},
                              .attrs = attrs, .const_inputs = {1}});
      ExpectSameOnAllDevices({.op = "ResizeBilinearGrad", .inputs = {grads, images}, .attrs = attrs});
    }
}

TEST_CASE("cuda: comparisons and logical ops broadcast like the CPU", "[cuda]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Rounded values so that equal elements occur; a NaN in each operand.
  Tensor x = Tensor::FromVector<float>({1, 2, nan, 3, 2, 1}).Reshaped(Shape{2, 3});
  Tensor y = Tensor::FromVector<float>({2, 2, 1}).Reshaped(Shape{3});
  Tensor z = Tensor::FromVector<float>({nan, 1}).Reshaped(Shape{2, 1});
  for (std::string op : {"Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"}) {
    ExpectSameOnAllDevices({.op = op, .inputs = {x, y}});
    ExpectSameOnAllDevices({.op = op, .inputs = {z, x}});
    ExpectSameOnAllDevices({.op = op, .inputs = {x, x}});
  }
  Tensor a = Tensor::FromVector<bool>({true, false, true, true, false, false}, Shape{2, 3});
  Tensor b = Tensor::FromVector<bool>({true, false, false}, Shape{3});
  for (std::string op : {"LogicalAnd", "LogicalOr"}) {
    ExpectSameOnAllDevices({.op = op, .inputs = {a, b}});
    ExpectSameOnAllDevices({.op = op, .inputs = {a, a}});
  }
  ExpectSameOnAllDevices({.op = "LogicalNot", .inputs = {a}});
}

TEST_CASE("cuda: seeded random ops draw the CPU's numbers", "[cuda]") {
  for (std::string op : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"})
    for (DType dtype : {DType::kFloat32, DType::kFloat64})
      ExpectSameOnAllDevices({.op = op,
                              .inputs = {Tensor::FromVector<int32_t>({60, 70})},
                              .attrs = {{"dtype", dtype}, {"seed", int64_t{7}}, {"seed2", int64_t{3}}},
                              .const_inputs = {0}});
}
