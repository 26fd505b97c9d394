// FuseConvBiasActivation (ops/passes/inference_passes.h): Conv2D -> BiasAdd
// [-> Relu | Relu6] becomes one _FusedConv2D, whose kernel adds the bias and
// clamps each output block while it is still in cache.
#include "graph/kernel.h"
#include "ops/passes/chain.h"
#include "ops/passes/inference_passes.h"

namespace dflow {
namespace {

struct ConvChain {
  Node* conv = nullptr;
  Node* bias_add = nullptr;
  Node* activation = nullptr;  // Relu or Relu6; null when the BiasAdd ends the chain
};

// The single data consumer of `node`, when that is its only use.
Node* SoleConsumer(const Node& node, const std::vector<std::vector<Graph::Consumer>>& consumers) {
  const auto& uses = consumers[node.id()];
  return uses.size() == 1 && uses[0].input >= 0 ? uses[0].node : nullptr;
}

std::optional<ConvChain> MatchConvChain(Node* conv, const Graph& graph,
                                        const std::set<std::string>& targets) {
  if (conv->op() != "Conv2D") return std::nullopt;
  auto consumers = graph.Consumers();
  ConvChain chain{.conv = conv, .bias_add = SoleConsumer(*conv, consumers)};
  if (!chain.bias_add || chain.bias_add->op() != "BiasAdd" ||
      !passes::FeedsOnly(*conv, *chain.bias_add, consumers, targets))
    return std::nullopt;
  Node* next = SoleConsumer(*chain.bias_add, consumers);
  if (next && (next->op() == "Relu" || next->op() == "Relu6") &&
      passes::FeedsOnly(*chain.bias_add, *next, consumers, targets))
    chain.activation = next;
  return chain;
}

void Fuse(Graph& graph, const ConvChain& c) {
  Node* last = c.activation ? c.activation : c.bias_add;
  AttrMap attrs = c.conv->attrs();
  attrs["activation"] = c.activation ? c.activation->op() : std::string();
  Node* fused = graph.AddNode({.name = graph.UniqueName(last->name() + "/fused"),
                               .op = "_FusedConv2D",
                               .inputs = {c.conv->input(0), c.conv->input(1), c.bias_add->input(1)},
                               .attrs = std::move(attrs),
                               .device = c.conv->requested_device()});
  std::vector<Node*> removed = {last};
  if (c.activation) removed.push_back(c.bias_add);
  removed.push_back(c.conv);
  passes::ReplaceChain(graph, last, fused, removed);
}

}  // namespace

int FuseConvBiasActivation(Graph& graph, const Device& device,
                           const std::set<std::string>& targets) {
  if (!KernelRegistry::Global().Has("_FusedConv2D", device.type())) return 0;
  return passes::RewriteChains(
      graph, [&](Node* node) { return MatchConvChain(node, graph, targets); },
      [&](const ConvChain& chain) { Fuse(graph, chain); });
}

[[maybe_unused]] static const bool fuse_conv_registered = [] {
  RegisterRewritePass({.name = "FuseConvBiasActivation", .order = 20,
                       .enabled = &PassOptions::fuse_conv_bias_activation,
                       .run = [](Graph& graph, Device& device,
                                 const std::set<std::string>& targets) {
                         return FuseConvBiasActivation(graph, device, targets);
                       }});
  return true;
}();

}  // namespace dflow
