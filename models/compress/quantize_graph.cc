#include "models/compress/quantize_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "graph/device.h"
#include "graph/graph_io.h"
#include "graph/passes.h"
#include "graph/thread_pool.h"
#include "models/compress/calibration.h"
#include "models/compress/quantize_pass_through.h"
#include "ops/math.h"
#include "ops/array.h"
#include "ops/quant.h"
#include "ops/reduce.h"
#include "ops/state.h"

namespace dflow::models {
namespace {

using int8::Codes;
using int8::Int8Scope;
using int8::PassThrough;
using int8::ReplaceNode;
using int8::ScalarConst;

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

// An int8 filter's constants. Layers that read one float filter (RetinaNet's
// heads, shared by every pyramid level) share one int8 copy of it.
struct FilterConsts {
  Output codes, min, max;
};
using FilterCache = std::map<std::pair<const Node*, int>, FilterConsts>;

FilterConsts IntFilterOf(const Scope& s, const Layer& layer, bool per_channel, FilterCache& cache) {
  const NodeOut source = layer.node->input(1);
  const auto key = std::make_pair(static_cast<const Node*>(source.node), source.index);
  if (auto found = cache.find(key); found != cache.end()) return found->second;
  const IntFilter filter = QuantizeFilter(layer.filter, per_channel);
  return cache[key] = {ops::Const(s.WithOpName("filter"), filter.codes),
                       ops::Const(s.WithOpName("filter_min"), filter.min),
                       ops::Const(s.WithOpName("filter_max"), filter.max)};
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

AttrMap ConvAttrs(const Node& node) {
  AttrMap attrs;
  for (const char* attr : {"strides", "dilations", "padding", "explicit_paddings"}) attrs[attr] = node.attrs().at(attr);
  return attrs;
}

// The codes `layer` reads: those of the int8 layer before it, or its float
// input through a QuantizeV2 of the calibrated range.
Codes InputCodes(const Scope& s, Layer& layer, const TensorRange& in, const std::map<Node*, Codes>& codes_of) {
  const Node* node = layer.node;
  layer.report.input_min = in.min;
  layer.report.input_max = in.max;
  auto found = codes_of.find(node->input(0).node);
  if (found != codes_of.end()) {
    layer.report.input_from_int8 = true;
    return found->second;
  }
  ops::Quantized q = ops::QuantizeV2(s.WithOpName("quantize"), Output(node->input(0).node, node->input(0).index),
                                     ScalarConst(s, "input_min", in.min), ScalarConst(s, "input_max", in.max), DType::kUInt8);
  return {q.output, q.output_min, q.output_max};
}

// Replaces `layer`, whose output an int8 layer reads, by QuantizeV2 (unless
// its input is already codes) -> the fused int8 conv -> Dequantize, which
// takes the layer's name; the conv's codes go on to the layers it feeds.
// `range` is the output range to freeze (OutputRange of what calibration saw).
void Rewrite(Graph& graph, Layer& layer, const TensorRange& in, const TensorRange& range, bool per_channel,
             std::map<Node*, Codes>& codes_of, FilterCache& filters) {
  Node* node = layer.node;
  Scope s = Int8Scope(graph, node->name());
  const Codes input = InputCodes(s, layer, in, codes_of);
  const FilterConsts filter = IntFilterOf(s, layer, per_channel, filters);
  const std::string op =
      layer.activation == "Relu" ? "QuantizedConv2DWithBiasAndReluAndRequantize" : "QuantizedConv2DWithBiasAndRequantize";
  Node* conv = s.WithOpName("conv").AddOp(
      op, {input.codes, filter.codes, ops::Const(s.WithOpName("bias"), layer.bias), input.min, input.max, filter.min,
           filter.max, ScalarConst(s, "output_min", range.min),
           ScalarConst(s, "output_max", range.max)},
      ConvAttrs(*node));
  Output dequantized = ops::Dequantize(s.WithOpName("dequantize"), Output(conv, 0), Output(conv, 1), Output(conv, 2));
  ReplaceNode(graph, node, dequantized);
  codes_of[dequantized.node()] = {Output(conv, 0), Output(conv, 1), Output(conv, 2)};
  layer.report.output_min = range.min;
  layer.report.output_max = range.max;
}

// Tensors side by side along their last axis.
Tensor ConcatLastAxis(const std::vector<const Tensor*>& parts) {
  const Shape& first = parts[0]->shape();
  const int64_t rows = first.NumElements() / first.dim(first.rank() - 1);
  Shape shape = first;
  int64_t width = 0;
  for (const Tensor* t : parts) width += t->shape().dim(first.rank() - 1);
  shape.set_dim(first.rank() - 1, width);
  Tensor out(DType::kFloat32, shape);
  float* dst = out.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (const Tensor* t : parts) {
      const int64_t n = t->shape().dim(first.rank() - 1);
      dst = std::copy_n(t->data<float>() + r * n, n, dst);
    }
  return out;
}

// Replaces `group` (layers whose outputs only float ops read, on one input
// with one geometry and activation: SSD's box and class heads of a map) by
// one fused int8 conv over their filters side by side, with a float output
// (...AndDequantize: no output range to freeze, no requantization); each
// layer's channels are a Slice of it that takes the layer's name.
void RewriteFloatOutput(Graph& graph, std::vector<Layer*> group, const TensorRange& in, bool per_channel,
                        const std::map<Node*, Codes>& codes_of, FilterCache& filters) {
  Layer& first = *group[0];
  Scope s = Int8Scope(graph, first.node->name());
  const Codes input = InputCodes(s, first, in, codes_of);
  std::vector<const Tensor*> weights, biases;
  for (Layer* layer : group) {
    weights.push_back(&layer->filter);
    biases.push_back(&layer->bias);
  }
  FilterConsts filter;
  if (group.size() == 1) {
    filter = IntFilterOf(s, first, per_channel, filters);
  } else {
    const IntFilter joined = QuantizeFilter(ConcatLastAxis(weights), per_channel);
    filter = {ops::Const(s.WithOpName("filter"), joined.codes), ops::Const(s.WithOpName("filter_min"), joined.min),
              ops::Const(s.WithOpName("filter_max"), joined.max)};
  }
  const std::string op = first.activation.empty() ? "QuantizedConv2DWithBiasAndDequantize"
                                                  : "QuantizedConv2DWithBiasAndReluAndDequantize";
  Output y(s.WithOpName("conv").AddOp(
               op, {input.codes, filter.codes, ops::Const(s.WithOpName("bias"), ConcatLastAxis(biases)), input.min,
                    input.max, filter.min, filter.max},
               ConvAttrs(*first.node)),
           0);
  int64_t channel = 0;
  for (Layer* layer : group) {
    const int64_t width = layer->filter.dim(3);
    Scope part = Int8Scope(graph, layer->node->name());
    Output out = group.size() == 1 ? y
                                   : ops::Slice(part.WithOpName("channels"), y, {int64_t{0}, int64_t{0}, int64_t{0}, channel},
                                                {int64_t{-1}, int64_t{-1}, int64_t{-1}, width});
    if (layer->activation == "Relu6") out = ops::Minimum(part.WithOpName("relu6"), out, 6.0f);
    channel += width;
    layer->report.input_min = first.report.input_min;
    layer->report.input_max = first.report.input_max;
    layer->report.input_from_int8 = first.report.input_from_int8;
    layer->report.float_output = true;
    if (layer != &first) layer->report.shares_with = first.report.name;
    ReplaceNode(graph, layer->node, out);
  }
}

// Dynamic quantization: replaces `layer` by its input's range at run time
// (minimum and maximum over the whole tensor) -> QuantizeV2 -> the int8
// product with a float output (bias and ReLU fused; a ReLU6 clamps after),
// which takes the layer's name.
void RewriteDynamic(Graph& graph, Layer& layer, bool per_channel, FilterCache& filters) {
  Node* node = layer.node;
  Scope s = Int8Scope(graph, node->name());
  const Output x(node->input(0).node, node->input(0).index);
  const Input all({0, 1, 2, 3});  // NHWC
  ops::Quantized q = ops::QuantizeV2(s.WithOpName("quantize"), x, ops::Min(s.WithOpName("input_min"), x, all),
                                     ops::Max(s.WithOpName("input_max"), x, all), DType::kUInt8);
  const FilterConsts filter = IntFilterOf(s, layer, per_channel, filters);
  const std::string op = layer.activation.empty() ? "QuantizedConv2DWithBiasAndDequantize"
                                                  : "QuantizedConv2DWithBiasAndReluAndDequantize";
  Output y(s.WithOpName("conv").AddOp(
               op, {q.output, filter.codes, ops::Const(s.WithOpName("bias"), layer.bias), q.output_min, q.output_max,
                    filter.min, filter.max},
               ConvAttrs(*node)),
           0);
  if (layer.activation == "Relu6") y = ops::Minimum(s.WithOpName("relu6"), y, 6.0f);
  ReplaceNode(graph, node, y);
  layer.report.dynamic = true;
  layer.report.float_output = true;
}

// Whether an int8 layer or pass-through op reads `layer`'s output (it then
// passes codes on).
bool FeedsInt8(const Layer& layer, const std::vector<Layer>& layers, const std::map<Node*, PassThrough>& passes,
               const std::vector<std::vector<Graph::Consumer>>& consumers) {
  for (const Graph::Consumer& c : consumers[layer.node->id()])
    if (passes.count(c.node)) return true;
  return std::any_of(layers.begin(), layers.end(), [&](const Layer& other) {
    return other.report.quantized && other.node->input(0).node == layer.node;
  });
}

// Two layers one int8 convolution can compute: the same input, window,
// strides, dilations, padding and activation.
bool SameConvolution(const Layer& a, const Layer& b) {
  if (a.node->input(0).node != b.node->input(0).node || a.node->input(0).index != b.node->input(0).index ||
      a.activation != b.activation)
    return false;
  for (int i = 0; i < 3; ++i)
    if (a.filter.dim(i) != b.filter.dim(i)) return false;
  for (const char* attr : {"strides", "dilations", "explicit_paddings"})
    if (a.node->attr<std::vector<int64_t>>(attr) != b.node->attr<std::vector<int64_t>>(attr)) return false;
  return a.node->attr<std::string>("padding") == b.node->attr<std::string>("padding");
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
  FilterCache filters;
  if (options.dynamic) {
    for (Layer& layer : layers)
      if (layer.report.quantized) RewriteDynamic(*prepared, layer, options.per_channel, filters);
    return Report(prepared, layers, float_session, calibration, targets);
  }

  // Each layer's input and output ranges, and each concatenation's output
  // range, from the float graph.
  const std::vector<Node*> order = prepared->TopologicalOrder();
  std::map<Node*, size_t> quantized;
  for (size_t i = 0; i < layers.size(); ++i)
    if (layers[i].report.quantized) quantized[layers[i].node] = i;
  std::map<Node*, PassThrough> passes = int8::FindPassThroughs(*prepared, order, quantized);
  std::vector<std::string> tensors;
  for (const Layer& layer : layers) {
    tensors.push_back(layer.node->input(0).name());
    tensors.push_back(layer.node->name() + ":0");
  }
  std::vector<PassThrough*> additions;
  for (auto& [node, pass] : passes)
    if (node->op() == "Add" || node->op() == "AddV2") {
      additions.push_back(&pass);
      tensors.push_back(pass.last()->name() + ":0");
    }
  const std::vector<TensorRange> ranges =
      CalibrateRanges(float_session, tensors, calibration, options.calibrator, options.percentile);
  for (size_t k = 0; k < additions.size(); ++k)
    additions[k]->frozen = OutputRange(ranges[2 * layers.size() + k], additions[k]->relu ? "Relu" : "");
  // The output range each int8 layer freezes; the layers a concatenation
  // joins share theirs, the union of their own.
  std::vector<TensorRange> frozen;
  for (size_t i = 0; i < layers.size(); ++i) frozen.push_back(OutputRange(ranges[2 * i + 1], layers[i].activation));
  for (const auto& [node, pass] : passes) {
    if (pass.layers.empty()) continue;
    TensorRange shared = frozen[pass.layers[0]];
    for (size_t i : pass.layers) shared = {std::min(shared.min, frozen[i].min), std::max(shared.max, frozen[i].max)};
    for (size_t i : pass.layers) frozen[i] = shared;
  }

  // A layer an int8 layer (or pass-through op) reads passes its codes on;
  // the others return float, those on one input with one geometry sharing
  // one convolution (per-channel weight ranges: each keeps its own).
  std::map<Node*, size_t> layer_at;
  for (size_t i = 0; i < layers.size(); ++i) layer_at[layers[i].node] = i;
  const auto consumers = prepared->Consumers();
  std::map<Node*, Codes> codes_of;
  std::vector<bool> done(layers.size(), false), feeds_int8;
  for (const Layer& layer : layers) feeds_int8.push_back(FeedsInt8(layer, layers, passes, consumers));
  // In graph order, so every op finds its inputs' codes (`order` keeps the
  // nodes as they were: a replaced layer is only looked up, never read).
  for (Node* node : order) {
    if (auto pass = passes.find(node); pass != passes.end()) {
      int8::RewritePassThrough(*prepared, pass->second, codes_of);
      continue;
    }
    auto at = layer_at.find(node);
    if (at == layer_at.end()) continue;
    const size_t i = at->second;
    if (!layers[i].report.quantized || done[i]) continue;
    if (feeds_int8[i]) {
      Rewrite(*prepared, layers[i], ranges[2 * i], frozen[i], options.per_channel, codes_of, filters);
      continue;
    }
    std::vector<size_t> members{i};
    for (size_t j = i + 1; j < layers.size() && options.per_channel; ++j)
      if (!done[j] && layers[j].report.quantized && !feeds_int8[j] && SameConvolution(layers[i], layers[j])) {
        members.push_back(j);
        done[j] = true;
      }
    std::vector<Layer*> group;
    for (size_t j : members) {
      group.push_back(&layers[j]);
      layers[j].report.output_min = ranges[2 * j + 1].min;  // as calibration saw it: nothing is frozen
      layers[j].report.output_max = ranges[2 * j + 1].max;
    }
    RewriteFloatOutput(*prepared, group, ranges[2 * i], options.per_channel, codes_of, filters);
  }
  return Report(prepared, layers, float_session, calibration, targets);
}

}  // namespace dflow::models
