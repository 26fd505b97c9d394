// Post-training quantization of a frozen graph (models/compress): a small
// MobileNet-like network (conv + batch norm + ReLU6, depthwise, pointwise, a
// linear head) becomes int8 layers joined by codes, one QuantizeV2 at the
// front and one Dequantize at the end; its output stays near the float
// graph's, through a save and load; --skip keeps a layer float; per-tensor
// weights and the percentile and entropy calibrators work; misuse is named.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "graph/graph_io.h"
#include "models/compress/calibration.h"
#include "models/compress/quantize_graph.h"
#include "ops/array.h"
#include "ops/batch_norm.h"
#include "ops/conv.h"
#include "ops/nn.h"
#include "ops/image.h"
#include "ops/math.h"
#include "ops/pool.h"
#include "ops/state.h"

namespace dflow {
namespace {

Tensor Random(const Shape& shape, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(lo, hi);
  Tensor t(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<float>()[i] = uniform(rng);
  return t;
}

// input [1, 16, 16, 3] -> conv 3x3/2 (8) + batch norm + ReLU6 -> depthwise
// 3x3 + bias + ReLU6 -> pointwise (16) + bias + ReLU -> head 1x1 (5) + bias.
std::shared_ptr<Graph> FrozenNetwork() {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("input"), DType::kFloat32, {1, 16, 16, 3});
  Output y = ops::Conv2D(s.WithOpName("conv"), x, Random({3, 3, 3, 8}, 1, -0.5f, 0.5f), {.strides = {1, 2, 2, 1}});
  y = ops::FusedBatchNorm(s.WithOpName("bn"), y, Random({8}, 2, 0.5f, 1.5f), Random({8}, 3, -0.2f, 0.2f),
                          Random({8}, 4, -0.1f, 0.1f), Random({8}, 5, 0.5f, 1.0f), {.is_training = false})
          .y;
  y = ops::Relu6(s.WithOpName("relu1"), y);
  y = ops::Conv2D(s.WithOpName("depthwise"), y, Random({3, 3, 1, 8}, 6, -0.6f, 0.6f));
  y = ops::Relu6(s.WithOpName("relu2"), ops::BiasAdd(s.WithOpName("bias2"), y, Random({8}, 7, -0.1f, 0.3f)));
  y = ops::Conv2D(s.WithOpName("pointwise"), y, Random({1, 1, 8, 16}, 8, -0.4f, 0.4f));
  y = ops::Relu(s.WithOpName("relu3"), ops::BiasAdd(s.WithOpName("bias3"), y, Random({16}, 9, -0.1f, 0.1f)));
  y = ops::Conv2D(s.WithOpName("head"), y, Random({1, 1, 16, 5}, 10, -0.3f, 0.3f));
  ops::Identity(s.WithOpName("logits"), ops::BiasAdd(s.WithOpName("head_bias"), y, Random({5}, 11, -0.5f, 0.5f)));
  return s.graph_ptr();
}

std::vector<FeedList> Batches(int n) {
  std::vector<FeedList> batches;
  for (int i = 0; i < n; ++i) batches.push_back({{std::string("input"), Random({1, 16, 16, 3}, 100 + i, -1, 1)}});
  return batches;
}

std::map<std::string, int> OpCounts(const Graph& graph) {
  std::map<std::string, int> counts;
  for (Node* node : graph.nodes()) ++counts[node->op()];
  return counts;
}

Tensor Logits(std::shared_ptr<Graph> graph, const FeedList& batch) {
  Session session(std::move(graph), {.num_threads = 1});
  return session.Run(batch, {std::string("logits")})[0];
}

double RelativeError(const Tensor& got, const Tensor& want) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < want.NumElements(); ++i) {
    diff += std::pow(got.data<float>()[i] - want.data<float>()[i], 2);
    norm += std::pow(want.data<float>()[i], 2);
  }
  return std::sqrt(diff / norm);
}

}  // namespace

TEST_CASE("QuantizeGraph: a conv network runs in int8 from one QuantizeV2 to a float output", "[quantize]") {
  std::shared_ptr<Graph> frozen = FrozenNetwork();
  models::QuantizeResult result = models::QuantizeGraph(*frozen, {"logits"}, Batches(4));
  REQUIRE(result.layers.size() == 4);
  for (const models::QuantizedLayer& layer : result.layers) {
    INFO(layer.name << ": " << layer.reason);
    CHECK(layer.quantized);
    CHECK(layer.relative_error < 0.05);
    CHECK(layer.output_max > layer.output_min);
    CHECK(layer.float_output == (&layer == &result.layers.back()));  // the head: nothing int8 reads it
  }
  for (size_t i = 0; i < 3; ++i) CHECK(result.layers[i].output_min <= 0.0f);
  CHECK(result.layers[0].kind == "conv 3x3/2");
  CHECK(result.layers[1].kind == "depthwise 3x3/1");
  CHECK(result.layers[2].kind == "pointwise");
  CHECK_FALSE(result.layers[0].input_from_int8);
  CHECK(result.layers[1].input_from_int8);
  CHECK(result.layers[3].input_from_int8);
  CHECK(result.layers[1].output_max <= 6.0f);  // ReLU6
  CHECK(result.layers[2].output_min == 0.0f);  // ReLU

  std::map<std::string, int> ops = OpCounts(*result.graph);
  CHECK(ops["QuantizeV2"] == 1);
  CHECK(ops["Dequantize"] == 0);  // the head returns float itself
  CHECK(ops["QuantizedConv2DWithBiasAndRequantize"] + ops["QuantizedConv2DWithBiasAndReluAndRequantize"] == 3);
  CHECK(ops["QuantizedConv2DWithBiasAndReluAndRequantize"] == 1);
  CHECK(ops["QuantizedConv2DWithBiasAndDequantize"] == 1);
  CHECK(ops["Conv2D"] + ops["_FusedConv2D"] + ops["FusedBatchNorm"] == 0);

  // Held-out inputs: near the float graph, and the same after a save and load.
  const FeedList held_out = {{std::string("input"), Random({1, 16, 16, 3}, 999, -1, 1)}};
  const Tensor want = Logits(frozen, held_out);
  const Tensor got = Logits(result.graph, held_out);
  CHECK(RelativeError(got, want) < 0.05);
  const std::string path = (std::filesystem::temp_directory_path() / "dflow_quantized_graph.json").string();
  SaveGraph(*result.graph, path);
  CHECK(Logits(LoadGraph(path), held_out).Equals(got));
  std::filesystem::remove(path);
}

// input [1, 12, 12, 4] -> conv 3x3 (8) + ReLU -> two 3x3 heads on it (boxes
// 6, classes 10, as an SSD map's) -> outputs "boxes" and "classes".
std::shared_ptr<Graph> TwoHeads() {
  Scope s = Scope::NewRootScope();
  Output x = ops::Placeholder(s.WithOpName("input"), DType::kFloat32, {1, 12, 12, 4});
  Output y = ops::Relu(s.WithOpName("relu"), ops::BiasAdd(s.WithOpName("bias"),
                                                          ops::Conv2D(s.WithOpName("conv"), x, Random({3, 3, 4, 8}, 1, -0.5f, 0.5f)),
                                                          Random({8}, 2, -0.1f, 0.3f)));
  ops::Identity(s.WithOpName("boxes"), ops::BiasAdd(s.WithOpName("boxes_bias"),
                                                    ops::Conv2D(s.WithOpName("boxes_conv"), y, Random({3, 3, 8, 6}, 3, -0.3f, 0.3f)),
                                                    Random({6}, 4, -0.5f, 0.5f)));
  ops::Identity(s.WithOpName("classes"),
                ops::BiasAdd(s.WithOpName("classes_bias"),
                             ops::Conv2D(s.WithOpName("classes_conv"), y, Random({3, 3, 8, 10}, 5, -2.0f, 2.0f)),
                             Random({10}, 6, -0.5f, 0.5f)));
  return s.graph_ptr();
}

TEST_CASE("QuantizeGraph: sibling heads share one int8 convolution with a float output", "[quantize]") {
  std::shared_ptr<Graph> frozen = TwoHeads();
  std::vector<FeedList> batches;
  for (int i = 0; i < 3; ++i) batches.push_back({{std::string("input"), Random({1, 12, 12, 4}, 50 + i, -1, 1)}});
  models::QuantizeResult result = models::QuantizeGraph(*frozen, {"boxes", "classes"}, batches);
  REQUIRE(result.layers.size() == 3);
  CHECK_FALSE(result.layers[0].float_output);
  CHECK(result.layers[1].float_output);
  CHECK(result.layers[2].float_output);
  CHECK(result.layers[2].shares_with == result.layers[1].name);
  CHECK(result.layers[2].input_from_int8);
  std::map<std::string, int> ops = OpCounts(*result.graph);
  CHECK(ops["QuantizedConv2DWithBiasAndDequantize"] == 1);  // both heads
  CHECK(ops["QuantizedConv2DWithBiasAndReluAndRequantize"] == 1);
  CHECK(ops["Slice"] == 2);
  CHECK(ops["Dequantize"] == 0);
  // Each head keeps its own weight ranges: near the float graph, the
  // classes' larger weights no coarser than alone (per-tensor: not merged).
  const FeedList held_out = {{std::string("input"), Random({1, 12, 12, 4}, 99, -1, 1)}};
  Session float_session(frozen, {.num_threads = 1});
  Session int8_session(result.graph, {.num_threads = 1});
  const std::vector<TensorName> names{std::string("boxes"), std::string("classes")};
  std::vector<Tensor> want = float_session.Run(held_out, names), got = int8_session.Run(held_out, names);
  for (size_t k = 0; k < 2; ++k) {
    REQUIRE(got[k].shape() == want[k].shape());
    CHECK(RelativeError(got[k], want[k]) < 0.05);
  }
  models::QuantizeResult per_tensor = models::QuantizeGraph(*frozen, {"boxes", "classes"}, batches, {.per_channel = false});
  CHECK(OpCounts(*per_tensor.graph)["QuantizedConv2DWithBiasAndDequantize"] == 2);
  CHECK(per_tensor.layers[2].shares_with.empty());
}

namespace {

// SqueezeNet's pattern: input [1, 16, 16, 3] -> conv 3x3 (8) + ReLU ->
// MaxPool 3x3/2 -> squeeze 1x1 (4) + ReLU -> expand 1x1 (6) and expand 3x3
// (6), each + ReLU, concatenated (12) -> MaxPool 2x2/2 -> head 1x1 (5).
std::shared_ptr<Graph> FireModule() {
  Scope s = Scope::NewRootScope();
  auto conv = [&](const std::string& name, Output x, Shape filter, uint32_t seed, bool relu, float scale = 0.5f) {
    Output y = ops::BiasAdd(s.WithOpName(name + "_bias"), ops::Conv2D(s.WithOpName(name), x, Random(filter, seed, -scale, scale)),
                            Random({filter.dim(3)}, seed + 1, -0.1f, 0.2f));
    return relu ? ops::Relu(s.WithOpName(name + "_relu"), y) : y;
  };
  Output x = ops::Placeholder(s.WithOpName("input"), DType::kFloat32, {1, 16, 16, 3});
  Output y = conv("conv", x, {3, 3, 3, 8}, 1, true);
  y = ops::MaxPool(s.WithOpName("pool1"), y, {.ksize = {1, 3, 3, 1}, .strides = {1, 2, 2, 1}, .padding = "SAME"});
  y = conv("squeeze", y, {1, 1, 8, 4}, 3, true);
  // The 3x3 expand's weights are larger: its outputs span a wider range than the 1x1's.
  Output wide = conv("expand3", y, {3, 3, 4, 6}, 7, true, 2.0f);
  y = ops::Concat(s.WithOpName("fire"), {conv("expand1", y, {1, 1, 4, 6}, 5, true), wide}, int32_t{3});
  y = ops::MaxPool(s.WithOpName("pool2"), y, {.ksize = {1, 2, 2, 1}, .strides = {1, 2, 2, 1}, .padding = "VALID"});
  ops::Identity(s.WithOpName("logits"), conv("head", y, {1, 1, 12, 5}, 9, false));
  return s.graph_ptr();
}

}  // namespace

TEST_CASE("QuantizeGraph: max pooling and a concatenation of int8 convolutions stay in int8", "[quantize]") {
  std::shared_ptr<Graph> frozen = FireModule();
  models::QuantizeResult result = models::QuantizeGraph(*frozen, {"logits"}, Batches(16));
  REQUIRE(result.layers.size() == 5);
  for (const models::QuantizedLayer& layer : result.layers) {
    INFO(layer.name);
    CHECK(layer.quantized);
    CHECK(layer.input_from_int8 == (layer.name != result.layers[0].name));
  }
  // The concatenation's inputs write codes of one range: the union of theirs.
  const models::QuantizedLayer& expand1 = result.layers[2];
  const models::QuantizedLayer& expand3 = result.layers[3];
  CHECK(expand1.output_min == expand3.output_min);
  CHECK(expand1.output_max == expand3.output_max);
  std::map<std::string, int> ops = OpCounts(*result.graph);
  CHECK(ops["QuantizeV2"] == 1);  // the input's: no float island at the pools or the concatenation
  CHECK(ops["Dequantize"] == 0);
  CHECK(ops["MaxPool"] == 2);
  CHECK(ops["ConcatV2"] == 1);
  for (Node* node : result.graph->nodes())
    if (node->op() == "MaxPool" || node->op() == "ConcatV2") CHECK(node->output_dtype(0) == DType::kUInt8);
  const FeedList held_out = {{std::string("input"), Random({1, 16, 16, 3}, 999, -1, 1)}};
  CHECK(RelativeError(Logits(result.graph, held_out), Logits(frozen, held_out)) < 0.05);
}

// The same graph, but the 1x1 expand's output also feeds a float output of
// its own: it keeps its range, so the concatenation stays float.
TEST_CASE("QuantizeGraph: a concatenation whose input another op reads stays float", "[quantize]") {
  std::shared_ptr<Graph> frozen = FireModule();
  Scope s = Scope::ForGraph(frozen);
  ops::Identity(s.WithOpName("side"), Output(&frozen->GetNode("expand1_relu"), 0));
  models::QuantizeResult result = models::QuantizeGraph(*frozen, {"logits", "side"}, Batches(16));
  std::map<std::string, int> ops = OpCounts(*result.graph);
  CHECK(ops["QuantizeV2"] == 2);  // the input's, and the concatenation's output into pool2's int8 reader
  for (Node* node : result.graph->nodes())
    if (node->op() == "ConcatV2") CHECK(node->output_dtype(0) == DType::kFloat32);
  const FeedList held_out = {{std::string("input"), Random({1, 16, 16, 3}, 999, -1, 1)}};
  CHECK(RelativeError(Logits(result.graph, held_out), Logits(frozen, held_out)) < 0.05);
}

namespace {

// ResNet's and an FPN's patterns: input [1, 16, 16, 3] -> stem 3x3 (8) +
// ReLU -> residual block (3x3 + bias, added to the stem, ReLU) -> down 3x3/2
// (8) + ReLU -> lateral 1x1 of each level, the coarse one upsampled (nearest)
// and added to the fine one -> head 1x1 (5) "logits", and a ReLU of the sum
// -> 1x1 (3) "extra" (RetinaNet's P6 -> ReLU -> P7).
std::shared_ptr<Graph> ResidualFpn() {
  Scope s = Scope::NewRootScope();
  auto conv = [&](const std::string& name, Output x, Shape filter, uint32_t seed, bool relu, int stride = 1) {
    Output y = ops::BiasAdd(s.WithOpName(name + "_bias"),
                            ops::Conv2D(s.WithOpName(name), x, Random(filter, seed, -0.4f, 0.4f),
                                        {.strides = {1, stride, stride, 1}}),
                            Random({filter.dim(3)}, seed + 1, -0.1f, 0.2f));
    return relu ? ops::Relu(s.WithOpName(name + "_relu"), y) : y;
  };
  Output x = ops::Placeholder(s.WithOpName("input"), DType::kFloat32, {1, 16, 16, 3});
  Output stem = conv("stem", x, {3, 3, 3, 8}, 1, true);
  Output block = ops::Relu(s.WithOpName("block_relu"),
                           ops::Add(s.WithOpName("residual"), conv("block", stem, {3, 3, 8, 8}, 3, false), stem));
  Output down = conv("down", block, {3, 3, 8, 8}, 5, true, 2);
  Output up = ops::ResizeNearestNeighbor(s.WithOpName("upsample"), conv("lateral_coarse", down, {1, 1, 8, 8}, 7, false),
                                         Tensor::FromVector<int32_t>({16, 16}));
  Output p = ops::Add(s.WithOpName("top_down"), conv("lateral_fine", block, {1, 1, 8, 8}, 9, false), up);
  ops::Identity(s.WithOpName("logits"), conv("head", p, {1, 1, 8, 5}, 11, false));
  ops::Identity(s.WithOpName("extra"), conv("p7", ops::Relu(s.WithOpName("p_relu"), p), {1, 1, 8, 3}, 13, false));
  return s.graph_ptr();
}

}  // namespace

TEST_CASE("QuantizeGraph: residual additions, nearest upsampling and ReLUs stay in int8", "[quantize]") {
  std::shared_ptr<Graph> frozen = ResidualFpn();
  models::QuantizeResult result = models::QuantizeGraph(*frozen, {"logits", "extra"}, Batches(16));
  std::map<std::string, int> ops = OpCounts(*result.graph);
  CHECK(ops["QuantizeV2"] == 1);  // the input's
  CHECK(ops["Dequantize"] == 0);
  CHECK(ops["QuantizedAddAndReluAndRequantize"] == 1);  // the residual, its ReLU fused
  CHECK(ops["QuantizedAddAndRequantize"] == 1);         // the top-down sum
  CHECK(ops["QuantizedRelu"] == 1);
  CHECK(ops["Add"] + ops["AddV2"] + ops["Relu"] == 0);
  for (Node* node : result.graph->nodes())
    if (node->op() == "ResizeNearestNeighbor") CHECK(node->output_dtype(0) == DType::kUInt8);
  for (const models::QuantizedLayer& layer : result.layers) {
    INFO(layer.name);
    CHECK(layer.input_from_int8 == (layer.name != "stem_relu"));
  }
  const FeedList held_out = {{std::string("input"), Random({1, 16, 16, 3}, 999, -1, 1)}};
  Session float_session(frozen, {.num_threads = 1});
  Session int8_session(result.graph, {.num_threads = 1});
  const std::vector<TensorName> names{std::string("logits"), std::string("extra")};
  std::vector<Tensor> want = float_session.Run(held_out, names), got = int8_session.Run(held_out, names);
  for (size_t k = 0; k < 2; ++k) CHECK(RelativeError(got[k], want[k]) < 0.05);
}

TEST_CASE("QuantizeGraph, dynamic: every conv int8 with its input's range at run time, float between", "[quantize]") {
  std::shared_ptr<Graph> frozen = FrozenNetwork();
  // Without calibration: no error measured.
  models::QuantizeResult bare = models::QuantizeGraph(*frozen, {"logits"}, {}, {.dynamic = true});
  REQUIRE(bare.layers.size() == 4);
  for (const models::QuantizedLayer& layer : bare.layers) {
    CHECK(layer.quantized);
    CHECK(layer.dynamic);
    CHECK(std::isnan(layer.relative_error));
  }
  std::map<std::string, int> ops = OpCounts(*bare.graph);
  CHECK(ops["QuantizeV2"] == 4);  // one per layer: activations are float between layers
  CHECK(ops["Dequantize"] == 0);
  CHECK(ops["QuantizedConv2DWithBiasAndDequantize"] + ops["QuantizedConv2DWithBiasAndReluAndDequantize"] == 4);
  CHECK(ops["QuantizedConv2DWithBiasAndReluAndDequantize"] == 3);  // ReLU6, ReLU6 (clamped after), ReLU
  CHECK(ops["Minimum"] == 2);  // the two ReLU6s
  CHECK(ops["Conv2D"] + ops["_FusedConv2D"] + ops["FusedBatchNorm"] == 0);

  // With calibration batches the error is measured; the graph is the same.
  models::QuantizeResult measured = models::QuantizeGraph(*frozen, {"logits"}, Batches(2), {.dynamic = true});
  for (const models::QuantizedLayer& layer : measured.layers) CHECK(layer.relative_error < 0.05);
  // Held-out inputs of another scale than any calibration would have seen:
  // the ranges follow each input.
  for (float scale : {1.0f, 20.0f}) {
    Tensor input = Random({1, 16, 16, 3}, 999, -scale, scale);
    const FeedList held_out = {{std::string("input"), input}};
    INFO("scale " << scale);
    CHECK(RelativeError(Logits(bare.graph, held_out), Logits(frozen, held_out)) < 0.05);
  }
  const std::string path = (std::filesystem::temp_directory_path() / "dflow_dynamic_graph.json").string();
  SaveGraph(*bare.graph, path);
  const FeedList held_out = {{std::string("input"), Random({1, 16, 16, 3}, 7, -1, 1)}};
  CHECK(Logits(LoadGraph(path), held_out).Equals(Logits(bare.graph, held_out)));
  std::filesystem::remove(path);
}

TEST_CASE("QuantizeGraph: --skip keeps a layer float; per-tensor weights; percentiles", "[quantize]") {
  std::shared_ptr<Graph> frozen = FrozenNetwork();
  const std::string middle = models::QuantizeGraph(*frozen, {"logits"}, Batches(1)).layers[1].name;
  models::QuantizeResult skipped = models::QuantizeGraph(*frozen, {"logits"}, Batches(2), {.skip = {middle}});
  CHECK_FALSE(skipped.layers[1].quantized);
  CHECK(skipped.layers[1].reason == "skipped (--skip)");
  CHECK_FALSE(skipped.layers[2].input_from_int8);  // after a float layer, quantized again
  std::map<std::string, int> ops = OpCounts(*skipped.graph);
  CHECK(ops["QuantizeV2"] == 2);
  CHECK(ops["Dequantize"] == 0);  // the first layer feeds a float one: it returns float
  CHECK(skipped.layers[0].float_output);
  CHECK(ops["QuantizedConv2DWithBiasAndReluAndDequantize"] + ops["QuantizedConv2DWithBiasAndDequantize"] == 2);
  CHECK(ops["_FusedConv2D"] == 1);

  const FeedList held_out = {{std::string("input"), Random({1, 16, 16, 3}, 998, -1, 1)}};
  const Tensor want = Logits(frozen, held_out);
  models::QuantizeResult per_tensor = models::QuantizeGraph(*frozen, {"logits"}, Batches(2), {.per_channel = false});
  CHECK(RelativeError(Logits(per_tensor.graph, held_out), want) < 0.1);

  models::QuantizeResult percentile = models::QuantizeGraph(
      *frozen, {"logits"}, Batches(2), {.calibrator = models::Calibrator::kPercentile, .percentile = 99.0});
  models::QuantizeResult minmax = models::QuantizeGraph(*frozen, {"logits"}, Batches(2));
  CHECK(percentile.layers[0].input_max < minmax.layers[0].input_max);
  CHECK(percentile.layers[0].input_min > minmax.layers[0].input_min);
  CHECK(RelativeError(Logits(percentile.graph, held_out), want) < 0.1);
  models::QuantizeResult entropy =
      models::QuantizeGraph(*frozen, {"logits"}, Batches(2), {.calibrator = models::Calibrator::kEntropy});
  CHECK(entropy.layers[0].input_max <= minmax.layers[0].input_max);
  CHECK(RelativeError(Logits(entropy.graph, held_out), want) < 0.1);
}

TEST_CASE("CalibrateRanges: min and max, percentiles, or the entropy threshold", "[quantize]") {
  Scope s = Scope::NewRootScope();
  ops::Identity(s.WithOpName("y"), ops::Placeholder(s.WithOpName("x"), DType::kFloat32));
  Session session(s, {.num_threads = 1});
  std::vector<float> values(1001);
  for (int i = 0; i <= 1000; ++i) values[i] = static_cast<float>(i) / 10;  // 0 .. 100
  std::vector<FeedList> batches = {{{std::string("x"), Tensor::FromVector(values)}}};
  auto minmax = models::CalibrateRanges(session, {"y:0"}, batches, models::Calibrator::kMinMax, 99);
  CHECK(minmax[0].min == 0.0f);
  CHECK(minmax[0].max == 100.0f);
  auto cut = models::CalibrateRanges(session, {"y:0"}, batches, models::Calibrator::kPercentile, 99);
  CHECK(cut[0].min == Approx(1.0).margin(0.1));
  CHECK(cut[0].max == Approx(99.0).margin(0.1));
  // Entropy: a uniform spread keeps (nearly) its whole range ...
  auto uniform = models::CalibrateRanges(session, {"y:0"}, batches, models::Calibrator::kEntropy, 99);
  CHECK(uniform[0].min == 0.0f);
  CHECK(uniform[0].max > 90.0f);
  // ... while a bell with a few far outliers is clipped well inside them,
  // but not inside the bell.
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> bell(20000);
  for (float& v : bell) v = normal(rng);
  bell[0] = 100.0f;
  bell[1] = -80.0f;
  std::vector<FeedList> bell_batch = {{{std::string("x"), Tensor::FromVector(bell)}}};
  auto clipped = models::CalibrateRanges(session, {"y:0"}, bell_batch, models::Calibrator::kEntropy, 99);
  CHECK(clipped[0].max < 20.0f);
  CHECK(clipped[0].max > 2.5f);
  CHECK(clipped[0].min == -clipped[0].max);
  values[7] = NAN;
  batches = {{{std::string("x"), Tensor::FromVector(values)}}};
  CHECK_THROWS_WITH(models::CalibrateRanges(session, {"y:0"}, batches, models::Calibrator::kMinMax, 99),
                    Catch::Contains("y:0 has the value nan"));
}

TEST_CASE("QuantizeGraph names what it cannot take", "[quantize]") {
  std::shared_ptr<Graph> frozen = FrozenNetwork();
  CHECK_THROWS_WITH(models::QuantizeGraph(*frozen, {"logits"}, {}), Catch::Contains("at least one calibration batch"));
  CHECK_THROWS_WITH(models::QuantizeGraph(*frozen, {"logits"}, Batches(1), {.skip = {"nope"}}),
                    Catch::Contains("--skip names 'nope'"));
  CHECK_THROWS_WITH(models::QuantizeGraph(*frozen, {"missing"}, Batches(1)), Catch::Contains("missing"));
  std::vector<FeedList> wrong = {{{std::string("input"), Random({1, 8, 8, 3}, 1, -1, 1)}}};
  CHECK_THROWS(models::QuantizeGraph(*frozen, {"logits"}, wrong));
  Scope s = Scope::NewRootScope();
  Output v = ops::Variable(s.WithOpName("w"), Shape{3, 3, 3, 4}, DType::kFloat32);
  ops::Conv2D(s.WithOpName("y"), ops::Placeholder(s.WithOpName("x"), DType::kFloat32, {1, 8, 8, 3}), v);
  CHECK_THROWS_WITH(models::QuantizeGraph(s.graph(), {"y"}, Batches(1)), Catch::Contains("freeze it first"));
}

}  // namespace dflow

namespace dflow {

// RetinaNet's heads: one filter read by the convolution of every pyramid
// level. The int8 graph keeps one int8 copy of it, not one per level.
TEST_CASE("QuantizeGraph: convolutions that share a float filter share its int8 codes", "[quantize]") {
  Scope s = Scope::NewRootScope();
  Output shared = ops::Const(s.WithOpName("head_filter"), Random({3, 3, 4, 6}, 1, -0.5f, 0.5f));
  for (int level : {0, 1}) {
    const int64_t size = 8 >> level;
    Output x = ops::Placeholder(s.WithOpName(StrCat("level", level)), DType::kFloat32, {1, size, size, 4});
    ops::Identity(s.WithOpName(StrCat("out", level)), ops::Conv2D(s.WithOpName(StrCat("head", level)), x, shared));
  }
  std::vector<FeedList> batches;
  for (int i = 0; i < 3; ++i)
    batches.push_back({{std::string("level0"), Random({1, 8, 8, 4}, 10 + i, -1, 1)},
                       {std::string("level1"), Random({1, 4, 4, 4}, 20 + i, -1, 1)}});
  models::QuantizeResult result = models::QuantizeGraph(*s.graph_ptr(), {"out0", "out1"}, batches);
  int int8_filters = 0;
  for (Node* node : result.graph->nodes())
    if (node->op() == "Const" && node->output_dtype(0) == DType::kInt8) ++int8_filters;
  CHECK(int8_filters == 1);
  CHECK(OpCounts(*result.graph)["QuantizedConv2DWithBiasAndDequantize"] == 2);
}

}  // namespace dflow
