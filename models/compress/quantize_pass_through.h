// The ops between int8 convolutions that QuantizeGraph (quantize_graph.h)
// runs on codes instead of leaving float islands, and the small graph
// surgery it shares with them. Internal to models/compress.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "models/compress/calibration.h"

namespace dflow::models::int8 {

// The uint8 codes of an int8 op's output and the range they stand for.
struct Codes {
  Output codes, min, max;
};

// The ops an int8 network runs on codes: MaxPool, nearest-neighbour
// resizing and ReLU, which keep their input's range (the largest code is the
// code of the largest value; a copy is a copy; codes below 0.0's become
// it); a concatenation of int8
// convolutions that all write codes of one range (the concatenation's:
// QuantizeGraph freezes it for each of them, as TFLite does); and an
// addition of two code tensors of one shape (ResNet's residuals, an FPN's
// top-down path), requantized to its own frozen range, with the ReLU that
// follows it fused.
struct PassThrough {
  Node* node = nullptr;
  std::vector<size_t> layers;  // a concatenation's inputs, by layer index
  Node* relu = nullptr;        // an addition's ReLU, fused into it
  TensorRange frozen{};        // an addition's output range (QuantizeGraph calibrates it)
  // The node whose output the rewrite replaces: the ReLU, else the op.
  Node* last() const { return relu ? relu : node; }
};

// Which nodes of `order` (the graph's topological order) the int8 graph can
// run on codes: pass-through ops whose inputs are codes, starting from the
// quantized convolutions `layer_of` (node -> layer index).
std::map<Node*, PassThrough> FindPassThroughs(const Graph& graph, const std::vector<Node*>& order,
                                              const std::map<Node*, size_t>& layer_of);

// Replaces a pass-through op by the same op on its inputs' codes ->
// Dequantize, which takes its name; its codes go on (codes_of, keyed by
// the Dequantize that float readers see).
void RewritePassThrough(Graph& graph, const PassThrough& pass, std::map<Node*, Codes>& codes_of);

// A float32 scalar constant.
Output ScalarConst(const Scope& s, const std::string& name, float v);
// The scope of the int8 nodes that replace node `name`.
Scope Int8Scope(Graph& graph, const std::string& name);
// `node`'s uses go to `replacement`, which takes its name.
void ReplaceNode(Graph& graph, Node* node, const Output& replacement);

}  // namespace dflow::models::int8
