// The int8 GPU kernels (ops/cuda/quant.cc) against the CPU's: QuantizeV2
// and Dequantize (both code types, both modes, per slice), the fused int8
// convolutions of every kind (dense, strided, dilated, grouped, depthwise
// with multipliers 1 and 2, pointwise; to codes or to floats, with and
// without ReLU), the dense layer, the residual addition and the ReLU, and
// small quantized networks (models/compress), static and dynamic, whose
// every node must have a GPU kernel. QuantizeV2 agrees exactly. After a
// product or a sum, a value within an ulp of a rounding tie may take the
// neighbouring code (a multiply-add fused by one compiler and not the
// other, ops/cuda/quant.cu): at most one code in a thousand, by one.
// Without a GPU the comparisons are skipped with a WARN.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>

#include "models/compress/quantize_graph.h"
#include "ops/array.h"
#include "ops/conv.h"
#include "ops/nn.h"
#include "ops/state.h"
#include "tests/ops/device_test_util.h"
#include "tests/ops/int8_conv_cases.h"

using namespace dflow;
using namespace dflow::testing;

namespace {

Tensor Codes(const Shape& shape, uint64_t seed) { return RandomTensor(DType::kUInt8, shape, seed, 0, 255); }
Tensor Weights(const Shape& shape, uint64_t seed) { return RandomTensor(DType::kInt8, shape, seed, -127, 127); }

// gpu's codes are cpu's, but for at most one in a thousand (at least one) off by one.
void ExpectSameCodes(const Tensor& gpu, const Tensor& cpu) {
  REQUIRE(gpu.dtype() == cpu.dtype());
  REQUIRE(gpu.shape() == cpu.shape());
  int64_t off_by_one = 0;
  for (int64_t i = 0; i < cpu.NumElements(); ++i) {
    const double diff = std::abs(ReadAsDouble(gpu, i) - ReadAsDouble(cpu, i));
    INFO("code " << i << ": GPU " << ReadAsDouble(gpu, i) << ", CPU " << ReadAsDouble(cpu, i));
    REQUIRE(diff <= 1);
    off_by_one += diff == 1 ? 1 : 0;
  }
  CHECK(off_by_one <= std::max<int64_t>(1, cpu.NumElements() / 1000));
}

void ExpectSameOutputs(const std::vector<Tensor>& gpu, const std::vector<Tensor>& cpu) {
  REQUIRE(gpu.size() == cpu.size());
  for (size_t o = 0; o < cpu.size(); ++o) {
    INFO("output " << o);
    if (cpu[o].dtype() == DType::kFloat32) CHECK(NormalizedError(gpu[o], cpu[o]) <= DeviceTolerance(DType::kFloat32));
    else ExpectSameCodes(gpu[o], cpu[o]);
  }
}

// Runs `run` on the CPU and the GPU and compares; the op must have a GPU kernel.
void ExpectSameOnGpu(OpRun run) {
  INFO(run.op);
  REQUIRE(KernelRegistry::Global().Has(run.op, "GPU"));
  if (SkipWithoutGpu(run.op)) return;
  const std::vector<Tensor> cpu = RunOp(run);
  run.device = "/device:GPU:0";
  ExpectSameOutputs(RunOp(run), cpu);
}

}  // namespace

TEST_CASE("cuda: QuantizeV2 and Dequantize match the CPU exactly, per tensor and per slice", "[cuda]") {
  Tensor x = Floats({2, 5, 6, 3}, 301, -3, 3);
  // NaN, huge values and exact half steps of [-1.5, 2] (step 3.5 / 255).
  x.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  x.data<float>()[1] = 1e30f, x.data<float>()[2] = -1e30f;
  for (int i = 3; i < 40; ++i) x.data<float>()[i] = (i - 20 + 0.5f) * 3.5f / 255;
  for (const char* round_mode : {"HALF_AWAY_FROM_ZERO", "HALF_TO_EVEN"}) {
    INFO(round_mode);
    const OpRun min_first = {.op = "QuantizeV2",
                             .inputs = {x, Tensor::Scalar(-1.5f), Tensor::Scalar(2.0f)},
                             .attrs = {{"T", DType::kUInt8}, {"round_mode", std::string(round_mode)}},
                             .const_inputs = {1, 2}};
    ExpectSameOnGpu(min_first);
    const OpRun scaled = {.op = "QuantizeV2",
                          .inputs = {x, Tensor::FromVector<float>({-1, -2.5f, 0}),
                                     Tensor::FromVector<float>({1, 0.5f, 3})},
                          .attrs = {{"T", DType::kInt8}, {"mode", std::string("SCALED")}, {"axis", int64_t{3}},
                                    {"narrow_range", true}, {"round_mode", std::string(round_mode)}}};
    ExpectSameOnGpu(scaled);
  }
  ExpectSameOnGpu({.op = "Dequantize",
                   .inputs = {Codes({4, 7}, 302), Tensor::Scalar(-1.5f), Tensor::Scalar(2.0f)},
                   .attrs = {{"T", DType::kUInt8}},
                   .const_inputs = {1, 2}});
  ExpectSameOnGpu({.op = "Dequantize",
                   .inputs = {Weights({4, 7}, 303), Tensor::FromVector<float>({-1, -2, -3, -4, -5, -6, -7}),
                              Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7})},
                   .attrs = {{"T", DType::kInt8}, {"mode", std::string("SCALED")}, {"axis", int64_t{1}}}});
}

TEST_CASE("cuda: the fused int8 convolutions match the CPU, every kind and stage", "[cuda]") {
  const Tensor x = Codes({2, 7, 6, 4}, 311);
  for (const Int8ConvCase& c : Int8ConvCases()) {
    const int64_t out_c = c.out_channels();
    std::vector<float> filter_min, filter_max;
    for (int64_t o = 0; o < out_c; ++o) filter_min.push_back(-0.1f * (o + 1)), filter_max.push_back(0.1f * (o + 1));
    for (const char* stage : {"AndRequantize", "AndReluAndRequantize", "AndDequantize", "AndReluAndDequantize"}) {
      INFO("filter " << c.filter.ToString() << " padding " << c.padding << " " << stage);
      OpRun run = {.op = c.op(stage),
                   .inputs = {x, Weights(c.filter, 312), Floats({out_c}, 313), Tensor::Scalar(-1.5f),
                              Tensor::Scalar(2.5f), Tensor::FromVector(filter_min), Tensor::FromVector(filter_max)},
                   .attrs = {{"strides", c.strides}, {"dilations", c.dilations}, {"padding", c.padding}},
                   .const_inputs = {3, 4, 5, 6}};
      if (std::string(stage).ends_with("Requantize")) {
        run.inputs.insert(run.inputs.end(), {Tensor::Scalar(-20.0f), Tensor::Scalar(30.0f)});
        run.const_inputs.insert({7, 8});
      }
      ExpectSameOnGpu(run);
    }
  }
}

TEST_CASE("cuda: the int8 dense layer, residual addition and ReLU match the CPU", "[cuda]") {
  for (bool transpose_b : {false, true}) {
    INFO("transpose_b " << transpose_b);
    ExpectSameOnGpu({.op = "QuantizedMatMulWithBiasAndRequantize",
                     .inputs = {Codes({5, 12}, 321), Weights(transpose_b ? Shape{7, 12} : Shape{12, 7}, 322),
                                Floats({7}, 323), Tensor::Scalar(-1.0f), Tensor::Scalar(3.0f), Tensor::Scalar(-0.5f),
                                Tensor::Scalar(0.5f), Tensor::Scalar(-8.0f), Tensor::Scalar(8.0f)},
                     .attrs = {{"transpose_b", transpose_b}},
                     .const_inputs = {3, 4, 5, 6, 7, 8}});
  }
  for (const char* op : {"QuantizedAddAndRequantize", "QuantizedAddAndReluAndRequantize"}) {
    ExpectSameOnGpu({.op = op,
                     .inputs = {Codes({2, 9, 8, 3}, 331), Codes({2, 9, 8, 3}, 332), Tensor::Scalar(-1.0f),
                                Tensor::Scalar(3.0f), Tensor::Scalar(-0.2f), Tensor::Scalar(6.0f),
                                Tensor::Scalar(-1.5f), Tensor::Scalar(8.0f)},
                     .const_inputs = {2, 3, 4, 5, 6, 7}});
  }
  ExpectSameOnGpu({.op = "QuantizedRelu",
                   .inputs = {Codes({3, 50}, 341), Tensor::Scalar(-2.0f), Tensor::Scalar(5.0f)},
                   .const_inputs = {1, 2}});
}

namespace {

// input [1, 16, 16, 3] -> conv 3x3/2 (8) + bias + ReLU -> depthwise 3x3 +
// bias + ReLU6 -> pointwise (16) + bias + ReLU -> head 1x1 (5) + bias.
std::shared_ptr<Graph> FloatNetwork() {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("input"), DType::kFloat32, {1, 16, 16, 3});
  Output y = ops::Conv2D(s.WithOpName("conv"), x, Floats({3, 3, 3, 8}, 351, -0.5, 0.5), {.strides = {1, 2, 2, 1}});
  y = ops::Relu(s.WithOpName("relu1"), ops::BiasAdd(s.WithOpName("bias1"), y, Floats({8}, 352, -0.1, 0.3)));
  y = ops::Conv2D(s.WithOpName("depthwise"), y, Floats({3, 3, 1, 8}, 353, -0.6, 0.6));
  y = ops::Relu6(s.WithOpName("relu2"), ops::BiasAdd(s.WithOpName("bias2"), y, Floats({8}, 354, -0.1, 0.3)));
  y = ops::Conv2D(s.WithOpName("pointwise"), y, Floats({1, 1, 8, 16}, 355, -0.4, 0.4));
  y = ops::Relu(s.WithOpName("relu3"), ops::BiasAdd(s.WithOpName("bias3"), y, Floats({16}, 356, -0.1, 0.1)));
  y = ops::Conv2D(s.WithOpName("head"), y, Floats({1, 1, 16, 5}, 357, -0.3, 0.3));
  ops::Identity(s.WithOpName("logits"), ops::BiasAdd(s.WithOpName("head_bias"), y, Floats({5}, 358, -0.5, 0.5)));
  return s.graph_ptr();
}

Tensor LogitsOn(std::shared_ptr<Graph> graph, const std::string& device, const Tensor& input) {
  SessionOptions options;
  options.devices = {device};
  Session session(std::move(graph), options);
  return session.Run({{std::string("input"), input}}, {std::string("logits")})[0];
}

}  // namespace

TEST_CASE("cuda: quantized networks, static and dynamic, run on the GPU as on the CPU", "[cuda]") {
  std::shared_ptr<Graph> frozen = FloatNetwork();
  std::vector<FeedList> batches;
  for (int i = 0; i < 4; ++i) batches.push_back({{std::string("input"), Floats({1, 16, 16, 3}, 360 + i, -1, 1)}});
  for (bool dynamic : {false, true}) {
    INFO((dynamic ? "dynamic" : "static"));
    const models::QuantizeResult q = models::QuantizeGraph(*frozen, {"logits"}, batches, {.dynamic = dynamic});
    int int8_layers = 0;
    for (const models::QuantizedLayer& layer : q.layers) int8_layers += layer.quantized ? 1 : 0;
    CHECK(int8_layers == 4);
    CheckGpuKernelsFor(*q.graph);
    if (SkipWithoutGpu("the quantized network")) continue;
    const Tensor input = Floats({1, 16, 16, 3}, 369, -1, 1);
    const Tensor cpu = LogitsOn(q.graph, "/device:CPU:0", input);
    // A code that went the other way at a tie moves what follows by about a
    // step of its layer: within 1% of the logits' scale.
    CHECK(NormalizedError(LogitsOn(q.graph, "/device:GPU:0", input), cpu) <= 0.01);
  }
}
