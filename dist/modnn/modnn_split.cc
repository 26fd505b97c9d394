// ModnnSplit (dist/modnn/modnn_split.h): builds the strips that PlanModnnSplit
// worked out, each a copy of the layer's chain on its own rows and device,
// and puts their join in place of the chain.
#include <set>

#include "dist/modnn/modnn_split.h"
#include "ops/passes/chain.h"

namespace dflow::dist {
namespace {

// Adds nodes for one strip under a common name prefix, all asking for one device.
class StripBuilder {
 public:
  StripBuilder(Graph& graph, std::string prefix, std::string device)
      : graph_(graph), prefix_(std::move(prefix)), device_(std::move(device)) {}

  Node* Add(const std::string& name, const std::string& op, std::vector<NodeOut> inputs,
            AttrMap attrs = {}) {
    return graph_.AddNode({.name = graph_.UniqueName(prefix_ + "/" + name),
                           .op = op,
                           .inputs = std::move(inputs),
                           .attrs = std::move(attrs),
                           .device = device_});
  }

  Node* Const(const std::string& name, Tensor value) {
    DType dtype = value.dtype();
    return Add(name, "Const", {}, {{"value", std::move(value)}, {"dtype", dtype}});
  }

  // NHWC int32 [4] vector with `along` at the split axis and `other` elsewhere.
  Node* AxisVector(const std::string& name, int axis, int32_t along, int32_t other, int32_t batch) {
    std::vector<int32_t> v = {batch, other, other, other};
    v[axis] = along;
    return Const(name, Tensor::FromVector<int32_t>(v));
  }

 private:
  Graph& graph_;
  std::string prefix_;
  std::string device_;
};

// input[:, in_begin:in_end] along the axis: the strip's rows with halos.
NodeOut SliceInput(StripBuilder& owner, const NodeOut& input, int axis, const StripPlan& s) {
  int64_t full = input.node->output_shape(input.index).dim(axis);
  if (s.in_begin == 0 && s.in_end == full) return input;
  Node* begin = owner.AxisVector("begin", axis, static_cast<int32_t>(s.in_begin), 0, 0);
  Node* size = owner.AxisVector("size", axis, static_cast<int32_t>(s.in_end - s.in_begin), -1, -1);
  return {owner.Add("input", "Slice", {input, {begin, 0}, {size, 0}}), 0};
}

// (before, after) pads per NHWC dim: the strip's on the split axis, the layer's on the other.
std::vector<int64_t> NhwcPads(int axis, int64_t before, int64_t after, const int64_t cross[2]) {
  std::vector<int64_t> pads(8, 0);
  pads[2 * axis] = before, pads[2 * axis + 1] = after;
  pads[2 * (3 - axis)] = cross[0], pads[2 * (3 - axis) + 1] = cross[1];
  return pads;
}

// A constant weight gets its own copy on the strip's device, as MoDNN keeps
// the model on every worker: cheaper to hold there than to ship every step.
// (A variable's value is sent; the partitioner sends it once per device.)
NodeOut LocalWeights(StripBuilder& b, const std::string& name, const NodeOut& weights) {
  if (weights.node->op() != "Const") return weights;
  return {b.Add(name, "Const", {}, weights.node->attrs()), 0};
}

NodeOut StripConv(StripBuilder& b, const Node& conv, NodeOut x, const ModnnSplitPlan& plan,
                  const StripPlan& s) {
  AttrMap attrs = conv.attrs();
  attrs["padding"] = std::string("EXPLICIT");
  attrs["explicit_paddings"] = NhwcPads(plan.axis, s.pad_before, s.pad_after, plan.conv_cross_pad);
  NodeOut filter = LocalWeights(b, "filter", conv.input(1));
  return {b.Add("conv", "Conv2D", {x, filter}, std::move(attrs)), 0};
}

// The layer's pool over the strip, with padding EXPLICIT: the strip's own
// pads on the split axis (the rows its windows reach outside the image;
// across a cut they read the halo's real rows) and the layer's on the other.
// Each window then sits on the same real elements as in the whole layer,
// read in the same order, and an AvgPool divides by the same count: padding
// only places the windows, it is never read (ops/pool.h). A MaxPool and an
// AvgPool are built alike.
NodeOut StripPool(StripBuilder& b, const Node& pool, NodeOut x, const ModnnSplitPlan& plan,
                  const StripPlan& s) {
  AttrMap attrs = pool.attrs();
  attrs["padding"] = std::string("EXPLICIT");
  attrs["explicit_paddings"] =
      NhwcPads(plan.axis, s.pool_pad_before, s.pool_pad_after, plan.pool_cross_pad);
  return {b.Add("pool", pool.op(), {x}, std::move(attrs)), 0};
}

// The layer's chain, rebuilt on one strip.
NodeOut BuildStrip(Graph& graph, const std::vector<Node*>& chain, const ModnnSplitPlan& plan,
                   const ModnnSplitOptions& options, size_t index) {
  const StripPlan& s = plan.strips[index];
  std::string prefix = StrCat(plan.output, "/modnn/strip", index);
  StripBuilder owner(graph, prefix, options.owner_device), strip(graph, prefix, s.device);
  NodeOut y = StripConv(strip, *chain[0], SliceInput(owner, chain[0]->input(0), plan.axis, s),
                        plan, s);
  for (size_t i = 1; i < chain.size(); ++i) {
    const Node& n = *chain[i];
    if (n.op() == "BiasAdd")
      y = {strip.Add("bias_add", "BiasAdd", {y, LocalWeights(strip, "bias", n.input(1))},
                     n.attrs()),
           0};
    else if (n.op() == "MaxPool" || n.op() == "AvgPool")
      y = StripPool(strip, n, y, plan, s);
    else
      y = {strip.Add(n.op() == "Relu" ? "relu" : "relu6", n.op(), {y}, n.attrs()), 0};
  }
  return y;
}

}  // namespace

ModnnSplitPlan ModnnSplit(Graph& graph, const std::string& conv, const ModnnSplitOptions& options) {
  ModnnSplitPlan plan = PlanModnnSplit(graph, conv, options);
  std::vector<Node*> chain = {&graph.GetNode(plan.conv)};
  for (const std::string& name : plan.absorbed) chain.push_back(&graph.GetNode(name));

  std::vector<NodeOut> strips;
  for (size_t i = 0; i < plan.strips.size(); ++i)
    strips.push_back(BuildStrip(graph, chain, plan, options, i));
  Node* joined = strips.front().node;
  if (strips.size() > 1) {
    StripBuilder owner(graph, plan.output + "/modnn", options.owner_device);
    strips.push_back({owner.Const("axis", Tensor::Scalar<int32_t>(plan.axis)), 0});
    joined = owner.Add("join", "ConcatV2", strips);
  }
  std::set<Node*> weights;  // constants each strip copied
  for (Node* n : chain)
    if (n->op() == "Conv2D" || n->op() == "BiasAdd")
      if (n->input(1).node->op() == "Const") weights.insert(n->input(1).node);
  std::vector<Node*> removed(chain.rbegin(), chain.rend());  // consumers before producers
  passes::ReplaceChain(graph, removed.front(), joined, removed);
  auto consumers = graph.Consumers();
  for (Node* w : weights)
    if (consumers[w->id()].empty() && w->control_inputs().empty()) graph.RemoveNode(w);
  return plan;
}

}  // namespace dflow::dist
