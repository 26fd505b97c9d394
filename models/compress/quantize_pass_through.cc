// The pass-through ops of an int8 graph (quantize_pass_through.h).
#include "models/compress/quantize_pass_through.h"

#include <algorithm>

#include "ops/array.h"
#include "ops/quant.h"
#include "ops/state.h"

namespace dflow::models::int8 {

Output ScalarConst(const Scope& s, const std::string& name, float v) {
  return ops::Const(s.WithOpName(name), Tensor::Scalar(v));
}

Scope Int8Scope(Graph& graph, const std::string& name) {
  return Scope::ForGraph(std::shared_ptr<Graph>(std::shared_ptr<Graph>{}, &graph)).NewSubScope(name + "/int8");
}

void ReplaceNode(Graph& graph, Node* node, const Output& replacement) {
  const std::string name = node->name();
  graph.ReplaceUses(node, replacement.node(), graph.Consumers()[node->id()]);
  graph.RemoveNode(node);
  graph.RenameNode(replacement.node(), name);
}

void RewritePassThrough(Graph& graph, const PassThrough& pass, std::map<Node*, Codes>& codes_of) {
  Node* node = pass.node;
  Scope s = Int8Scope(graph, node->name());
  Codes out;
  auto attrs_of = [&](std::initializer_list<const char*> names) {
    AttrMap attrs;
    for (const char* attr : names) attrs[attr] = node->attrs().at(attr);
    return attrs;
  };
  if (node->op() == "MaxPool") {
    const Codes in = codes_of.at(node->input(0).node);
    AttrMap attrs = attrs_of({"ksize", "strides", "padding", "explicit_paddings"});
    out = {Output(s.WithOpName("pool").AddOp("MaxPool", {in.codes}, attrs), 0), in.min, in.max};
  } else if (node->op() == "ResizeNearestNeighbor") {
    const Codes in = codes_of.at(node->input(0).node);
    const Output size(node->input(1).node, node->input(1).index);
    AttrMap attrs = attrs_of({"align_corners", "half_pixel_centers"});
    out = {Output(s.WithOpName("resize").AddOp("ResizeNearestNeighbor", {in.codes, size}, attrs), 0), in.min, in.max};
  } else if (node->op() == "Relu") {
    const Codes in = codes_of.at(node->input(0).node);
    Node* relu = s.WithOpName("relu").AddOp("QuantizedRelu", {in.codes, in.min, in.max});
    out = {Output(relu, 0), Output(relu, 1), Output(relu, 2)};
  } else if (node->op() == "Add" || node->op() == "AddV2") {
    const Codes x = codes_of.at(node->input(0).node), y = codes_of.at(node->input(1).node);
    Node* add = s.WithOpName("add").AddOp(
        pass.relu ? "QuantizedAddAndReluAndRequantize" : "QuantizedAddAndRequantize",
        {x.codes, y.codes, x.min, x.max, y.min, y.max, ScalarConst(s, "output_min", pass.frozen.min),
         ScalarConst(s, "output_max", pass.frozen.max)});
    out = {Output(add, 0), Output(add, 1), Output(add, 2)};
  } else {  // ConcatV2: values..., axis
    std::vector<Input> values;
    const int n = static_cast<int>(node->num_inputs()) - 1;
    for (int k = 0; k < n; ++k) values.push_back(codes_of.at(node->input(k).node).codes);
    const Codes first = codes_of.at(node->input(0).node);
    const Output axis(node->input(n).node, node->input(n).index);
    out = {ops::Concat(s.WithOpName("concat"), values, axis), first.min, first.max};
  }
  Output dequantized = ops::Dequantize(s.WithOpName("dequantize"), out.codes, out.min, out.max);
  ReplaceNode(graph, pass.last(), dequantized);
  if (pass.relu) graph.RemoveNode(node);  // its ReLU was its only reader
  codes_of[dequantized.node()] = out;
}

std::map<Node*, PassThrough> FindPassThroughs(const Graph& graph, const std::vector<Node*>& order,
                                              const std::map<Node*, size_t>& layer_of) {
  const auto consumers = graph.Consumers();
  std::map<Node*, PassThrough> found;
  std::set<Node*> carriers;  // nodes whose output the int8 graph has as codes
  for (const auto& [node, i] : layer_of) carriers.insert(node);
  auto codes = [&](const NodeOut& in) { return in.index == 0 && carriers.count(in.node) > 0; };
  auto add = [&](PassThrough pass) {
    carriers.insert(pass.last());
    found[pass.node] = pass;
  };
  for (Node* node : order) {
    if (node->num_outputs() == 0 || node->output_dtype(0) != DType::kFloat32) continue;
    if (node->op() == "MaxPool" && codes(node->input(0))) add({node, {}});
    if (node->op() == "ResizeNearestNeighbor" && codes(node->input(0))) add({node, {}});
    if (node->op() == "Relu" && codes(node->input(0))) add({node, {}});
    if ((node->op() == "Add" || node->op() == "AddV2") && codes(node->input(0)) && codes(node->input(1))) {
      const Shape& x = node->input(0).node->output_shape(0);
      const Shape& y = node->input(1).node->output_shape(0);
      // One shape (a batch dim may be unknown on both): no broadcasting, which stays float.
      if (x.unknown_rank() || x != y) continue;
      const auto& readers = consumers[node->id()];
      Node* relu = readers.size() == 1 && readers[0].node->op() == "Relu" ? readers[0].node : nullptr;
      add({node, {}, relu});
    }
    if (node->op() != "ConcatV2" || !KnownValue(node->input(node->num_inputs() - 1))) continue;
    PassThrough concat{node, {}};
    for (int k = 0; k + 1 < static_cast<int>(node->num_inputs()); ++k) {
      const NodeOut in = node->input(k);
      auto layer = layer_of.find(in.node);
      // A convolution whose codes another reader needs in its own range cannot take the concatenation's.
      const bool only_here = layer != layer_of.end() && in.index == 0 &&
                             std::all_of(consumers[in.node->id()].begin(), consumers[in.node->id()].end(),
                                         [&](const Graph::Consumer& c) { return c.node == node; });
      if (!only_here) break;
      concat.layers.push_back(layer->second);
    }
    if (static_cast<int>(concat.layers.size()) + 1 == static_cast<int>(node->num_inputs())) add(concat);
  }
  return found;
}

}  // namespace dflow::models::int8
