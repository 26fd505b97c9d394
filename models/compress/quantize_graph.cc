#include "models/compress/quantize_graph.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "graph/device.h"
#include "graph/graph_io.h"
#include "graph/passes.h"
#include "graph/thread_pool.h"
#include "models/compress/calibration.h"
#include "ops/math.h"
#include "ops/quant.h"
#include "ops/reduce.h"
#include "ops/state.h"

namespace dflow::models {
namespace {

// A convolution to quantize: a _FusedConv2D, or a Conv2D, of float32 with a
// constant filter (and bias).
struct Layer {
  Node* node = nullptr;
  Tensor filter, bias;
  std::string activation;  // "", "Relu" or "Relu6"
  QuantizedLayer report;
};

// The output node names, which the passes must keep.
std::set<std::string> OutputNodes(const Graph& graph, const std::vector<std::string>& outputs) {
  std::set<std::string> nodes;
  for (const std::string& output : outputs) nodes.insert(graph.ParseOutput(output).node->name());
  return nodes;
}

std::shared_ptr<Graph> Copy(const Graph& graph) { return GraphFromJson(ToJson(graph)); }

// A copy of the graph with the inference rewrites applied (constant
// folding, batch norms folded, conv + bias + activation fused).
std::shared_ptr<Graph> Prepared(const Graph& graph, const std::set<std::string>& targets) {
  for (Node* node : graph.nodes())
    DFLOW_REQUIRE(node->op() != "VariableV2", "quantize: the graph has the variable '", node->name(),
                  "'; freeze it first (dflow freeze)");
  std::shared_ptr<Graph> copy = Copy(graph);
  ThreadPool pool(1, "quantize");
  std::unique_ptr<Device> cpu = NewCpuDevice(0, &pool);
  RunPasses(*copy, *cpu, PassOptions{}, targets);
  return copy;
}

std::string KindOf(const Node& conv, const Shape& filter) {
  const auto strides = conv.attr<std::vector<int64_t>>("strides");
  if (filter.dim(0) == 1 && filter.dim(1) == 1 && strides[1] == 1 && strides[2] == 1) return "pointwise";
  const bool depthwise = filter.dim(2) == 1 && conv.input(0).node->output_shape(conv.input(0).index).dim(3) != 1;
  return StrCat(depthwise ? "depthwise " : "conv ", filter.dim(0), "x", filter.dim(1), "/", strides[1]);
}

// The layers of the prepared graph in topological order; those that stay
// float say why.
std::vector<Layer> FindLayers(const Graph& graph, const std::set<std::string>& skip) {
  std::vector<Layer> layers;
  for (Node* node : graph.TopologicalOrder()) {
    const bool fused = node->op() == "_FusedConv2D";
    if ((!fused && node->op() != "Conv2D") || node->attr<DType>("T") != DType::kFloat32) continue;
    std::optional<Tensor> filter = KnownValue(node->input(1));
    std::optional<Tensor> bias = fused ? KnownValue(node->input(2)) : Tensor::Zeros(DType::kFloat32, {});
    Layer layer;
    layer.node = node;
    layer.activation = fused ? node->attr<std::string>("activation") : "";
    layer.report.name = node->name();
    if (filter) {
      layer.filter = *filter;
      layer.report.kind = KindOf(*node, filter->shape());
      layer.bias = fused ? *bias : Tensor::Zeros(DType::kFloat32, {filter->dim(3)});
    }
    if (!filter || !bias) layer.report.reason = "its filter or bias is not a constant";
    else if (skip.count(node->name())) layer.report.reason = "skipped (--skip)";
    else layer.report.quantized = true;
    layers.push_back(std::move(layer));
  }
  for (const std::string& name : skip) {
    bool found = false;
    for (const Layer& layer : layers) found = found || layer.report.name == name;
    if (!found)
      Fail(Code::kNotFound, "quantize: --skip names '", name,
           "', which is not a convolution of the graph (after batch-norm folding and fusion)");
  }
  return layers;
}

struct IntFilter {
  Tensor codes, min, max;  // int8 codes; the range per output channel (or one)
};

// Symmetric int8 weights: per range, max |w| becomes 127.
IntFilter QuantizeFilter(const Tensor& filter, bool per_channel) {
  const int64_t out_c = filter.dim(3), n = filter.NumElements();
  const float* w = filter.data<float>();
  std::vector<float> max_abs(per_channel ? out_c : 1, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float& m = max_abs[per_channel ? i % out_c : 0];
    m = std::max(m, std::fabs(w[i]));
  }
  Tensor codes(DType::kInt8, filter.shape());
  for (int64_t i = 0; i < n; ++i) {
    const float m = max_abs[per_channel ? i % out_c : 0];
    codes.data<int8_t>()[i] =
        m > 0 ? static_cast<int8_t>(std::clamp(std::round(w[i] / m * 127.0f), -127.0f, 127.0f)) : 0;
  }
  std::vector<float> min(max_abs.size());
  for (size_t j = 0; j < max_abs.size(); ++j) min[j] = -max_abs[j];
  return {codes, Tensor::FromVector(min), Tensor::FromVector(max_abs)};
}

// The frozen output range: holds 0.0 (the next layer pads with its code), is
// [0, 6] at most after a ReLU6 and starts at 0 after a ReLU.
TensorRange OutputRange(TensorRange seen, const std::string& activation) {
  TensorRange r{std::min(seen.min, 0.0f), std::max(seen.max, 0.0f)};
  if (activation == "Relu" || activation == "Relu6") r.min = 0;
  if (activation == "Relu6") r.max = std::min(r.max, 6.0f);
  if (r.max - r.min < 1e-6f) r.max = r.min + 1e-6f;
  return r;
}

Output Scalar(const Scope& s, const std::string& name, float v) {
  return ops::Const(s.WithOpName(name), Tensor::Scalar(v));
}

// The codes of an int8 layer's output, for the layers it feeds.
struct Codes {
  Output codes, min, max;
};

// Replaces `layer` by QuantizeV2 (unless its input is already codes) ->
// the fused int8 conv -> Dequantize, which takes the layer's name.
void Rewrite(Graph& graph, Layer& layer, const TensorRange& in, const TensorRange& out, bool per_channel,
             std::map<Node*, Codes>& codes_of) {
  Node* node = layer.node;
  const std::string name = node->name();
  Scope s = Scope::ForGraph(std::shared_ptr<Graph>(std::shared_ptr<Graph>{}, &graph)).NewSubScope(name + "/int8");
  Codes input;
  auto found = codes_of.find(node->input(0).node);
  if (found != codes_of.end()) {
    input = found->second;
    layer.report.input_from_int8 = true;
  } else {
    ops::Quantized q = ops::QuantizeV2(s.WithOpName("quantize"), Output(node->input(0).node, node->input(0).index),
                                       Scalar(s, "input_min", in.min), Scalar(s, "input_max", in.max),
                                       DType::kUInt8);
    input = {q.output, q.output_min, q.output_max};
  }
  const IntFilter filter = QuantizeFilter(layer.filter, per_channel);
  const TensorRange range = OutputRange(out, layer.activation);
  const std::string op =
      layer.activation == "Relu" ? "QuantizedConv2DWithBiasAndReluAndRequantize" : "QuantizedConv2DWithBiasAndRequantize";
  AttrMap attrs;
  for (const char* attr : {"strides", "dilations", "padding", "explicit_paddings"}) attrs[attr] = node->attrs().at(attr);
  Node* conv = s.WithOpName("conv").AddOp(
      op, {input.codes, ops::Const(s.WithOpName("filter"), filter.codes), ops::Const(s.WithOpName("bias"), layer.bias),
           input.min, input.max, ops::Const(s.WithOpName("filter_min"), filter.min),
           ops::Const(s.WithOpName("filter_max"), filter.max), Scalar(s, "output_min", range.min),
           Scalar(s, "output_max", range.max)},
      attrs);
  Output dequantized = ops::Dequantize(s.WithOpName("dequantize"), Output(conv, 0), Output(conv, 1), Output(conv, 2));
  graph.ReplaceUses(node, dequantized.node(), graph.Consumers()[node->id()]);
  graph.RemoveNode(node);
  graph.RenameNode(dequantized.node(), name);
  codes_of[dequantized.node()] = {Output(conv, 0), Output(conv, 1), Output(conv, 2)};
  layer.report.input_min = in.min;
  layer.report.input_max = in.max;
  layer.report.output_min = range.min;
  layer.report.output_max = range.max;
}

// Dynamic quantization: replaces `layer` by its input's range at run time
// (minimum and maximum over the whole tensor) -> QuantizeV2 -> the int8
// product with a float output (bias and ReLU fused; a ReLU6 clamps after),
// which takes the layer's name.
void RewriteDynamic(Graph& graph, Layer& layer, bool per_channel) {
  Node* node = layer.node;
  const std::string name = node->name();
  Scope s = Scope::ForGraph(std::shared_ptr<Graph>(std::shared_ptr<Graph>{}, &graph)).NewSubScope(name + "/int8");
  const Output x(node->input(0).node, node->input(0).index);
  const Input all({0, 1, 2, 3});  // NHWC
  ops::Quantized q = ops::QuantizeV2(s.WithOpName("quantize"), x, ops::Min(s.WithOpName("input_min"), x, all),
                                     ops::Max(s.WithOpName("input_max"), x, all), DType::kUInt8);
  const IntFilter filter = QuantizeFilter(layer.filter, per_channel);
  const std::string op = layer.activation.empty() ? "QuantizedConv2DWithBiasAndDequantize"
                                                  : "QuantizedConv2DWithBiasAndReluAndDequantize";
  AttrMap attrs;
  for (const char* attr : {"strides", "dilations", "padding", "explicit_paddings"}) attrs[attr] = node->attrs().at(attr);
  Output y(s.WithOpName("conv").AddOp(
               op, {q.output, ops::Const(s.WithOpName("filter"), filter.codes), ops::Const(s.WithOpName("bias"), layer.bias),
                    q.output_min, q.output_max, ops::Const(s.WithOpName("filter_min"), filter.min),
                    ops::Const(s.WithOpName("filter_max"), filter.max)},
               attrs),
           0);
  if (layer.activation == "Relu6") y = ops::Minimum(s.WithOpName("relu6"), y, 6.0f);
  graph.ReplaceUses(node, y.node(), graph.Consumers()[node->id()]);
  graph.RemoveNode(node);
  graph.RenameNode(y.node(), name);
  layer.report.dynamic = true;
}

double RelativeError(const Tensor& int8, const Tensor& reference) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < reference.NumElements(); ++i) {
    const double f = reference.data<float>()[i], q = int8.data<float>()[i];
    diff += (q - f) * (q - f);
    norm += f * f;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// The result, with every layer's output, int8 against float, on the first
// calibration batch (when there is one).
QuantizeResult Report(const std::shared_ptr<Graph>& prepared, std::vector<Layer>& layers, Session& float_session,
                      const std::vector<FeedList>& calibration, const std::set<std::string>& targets) {
  std::vector<TensorName> names;
  for (const Layer& layer : layers) names.push_back(layer.report.name + ":0");
  std::vector<Tensor> reference, quantized;
  if (!calibration.empty()) {
    Session int8_session(Copy(*prepared), {.num_threads = 1});
    reference = float_session.Run(calibration[0], names);
    quantized = int8_session.Run(calibration[0], names);
  }
  QuantizeResult result{prepared, {}};
  for (size_t i = 0; i < layers.size(); ++i) {
    layers[i].report.relative_error = calibration.empty() ? std::nan("") : RelativeError(quantized[i], reference[i]);
    result.layers.push_back(layers[i].report);
  }
  PruneDeadNodes(*prepared, targets);
  return result;
}

}  // namespace

QuantizeResult QuantizeGraph(const Graph& graph, const std::vector<std::string>& outputs,
                             const std::vector<FeedList>& calibration, const QuantizeOptions& options) {
  DFLOW_REQUIRE(options.dynamic || !calibration.empty(),
                "quantize: static quantization needs at least one calibration batch");
  const std::set<std::string> targets = OutputNodes(graph, outputs);
  std::shared_ptr<Graph> prepared = Prepared(graph, targets);
  std::vector<Layer> layers = FindLayers(*prepared, options.skip);
  Session float_session(Copy(*prepared), {.num_threads = 1});
  if (options.dynamic) {
    for (Layer& layer : layers)
      if (layer.report.quantized) RewriteDynamic(*prepared, layer, options.per_channel);
    return Report(prepared, layers, float_session, calibration, targets);
  }

  // Each layer's input and output ranges, from the float graph.
  std::vector<std::string> tensors;
  for (const Layer& layer : layers) {
    tensors.push_back(layer.node->input(0).name());
    tensors.push_back(layer.node->name() + ":0");
  }
  const std::vector<TensorRange> ranges =
      CalibrateRanges(float_session, tensors, calibration, options.calibrator, options.percentile);

  std::map<Node*, Codes> codes_of;
  for (size_t i = 0; i < layers.size(); ++i)
    if (layers[i].report.quantized)
      Rewrite(*prepared, layers[i], ranges[2 * i], ranges[2 * i + 1], options.per_channel, codes_of);
  return Report(prepared, layers, float_session, calibration, targets);
}

}  // namespace dflow::models
