// FoldBatchNormIntoConv (ops/passes/inference_passes.h): an inference-mode
// FusedBatchNorm after a Conv2D with constant weights is an affine map per
// output channel, so it folds into the filter and a bias.
#include <cmath>

#include "ops/passes/chain.h"
#include "ops/passes/inference_passes.h"

namespace dflow {
namespace {

// Conv2D [-> BiasAdd] -> FusedBatchNorm, every weight known.
struct BatchNormChain {
  Node* conv = nullptr;
  Node* bias_add = nullptr;  // null when the conv has no bias
  Node* batch_norm = nullptr;
  Tensor filter{}, bias{}, scale{}, offset{}, mean{}, variance{};  // bias invalid when absent
};

bool Known(const NodeOut& out, Tensor& value) {
  std::optional<Tensor> known = KnownValue(out);
  if (!known) return false;
  value = *known;
  return true;
}

std::optional<BatchNormChain> MatchBatchNormChain(Node* bn, const Graph& graph,
                                                  const std::set<std::string>& targets) {
  if (bn->op() != "FusedBatchNorm" || bn->attr<bool>("is_training")) return std::nullopt;
  auto consumers = graph.Consumers();
  for (const auto& use : consumers[bn->id()])  // batch_mean etc. would lose their producer
    if (use.input >= 0 && use.node->input(use.input).index != 0) return std::nullopt;
  BatchNormChain chain{.batch_norm = bn};
  Node* before = bn->input(0).node;
  if (before->op() == "BiasAdd") {
    chain.bias_add = before;
    before = before->input(0).node;
  }
  chain.conv = before;
  if (chain.conv->op() != "Conv2D") return std::nullopt;
  Node* after_conv = chain.bias_add ? chain.bias_add : bn;
  if (!passes::FeedsOnly(*chain.conv, *after_conv, consumers, targets)) return std::nullopt;
  if (chain.bias_add && !passes::FeedsOnly(*chain.bias_add, *bn, consumers, targets))
    return std::nullopt;
  bool known = Known(chain.conv->input(1), chain.filter) && Known(bn->input(1), chain.scale) &&
               Known(bn->input(2), chain.offset) && Known(bn->input(3), chain.mean) &&
               Known(bn->input(4), chain.variance);
  if (chain.bias_add) known = known && Known(chain.bias_add->input(1), chain.bias);
  if (!known) return std::nullopt;
  int64_t channels = chain.filter.dim(3);
  for (const Tensor* v : {&chain.scale, &chain.offset, &chain.mean, &chain.variance})
    if (v->NumElements() != channels) return std::nullopt;  // the kernel would reject it
  return chain;
}

// The folded filter and bias (inference_passes.h), computed in double.
template <typename T>
std::pair<Tensor, Tensor> FoldedWeights(const BatchNormChain& c, double epsilon) {
  const int64_t channels = c.filter.dim(3);
  std::vector<double> s(channels);
  Tensor bias(c.filter.dtype(), Shape{channels});
  for (int64_t o = 0; o < channels; ++o) {
    s[o] = c.scale.data<T>()[o] / std::sqrt(static_cast<double>(c.variance.data<T>()[o]) + epsilon);
    double b = c.bias.valid() ? c.bias.data<T>()[o] : 0.0;
    bias.data<T>()[o] = static_cast<T>((b - c.mean.data<T>()[o]) * s[o] + c.offset.data<T>()[o]);
  }
  Tensor filter(c.filter.dtype(), c.filter.shape());
  const T* w = c.filter.data<T>();
  T* folded = filter.data<T>();
  for (int64_t i = 0; i < c.filter.NumElements(); ++i)
    folded[i] = static_cast<T>(w[i] * s[i % channels]);
  return {filter, bias};
}

Node* AddConst(Graph& graph, const std::string& base, const Tensor& value, const Node& near) {
  return graph.AddNode({.name = graph.UniqueName(base), .op = "Const",
                        .attrs = {{"value", value}, {"dtype", value.dtype()}},
                        .device = near.requested_device()});
}

void Fold(Graph& graph, const BatchNormChain& c) {
  double epsilon = c.batch_norm->attr<double>("epsilon");
  auto [filter, bias] = c.filter.dtype() == DType::kFloat32 ? FoldedWeights<float>(c, epsilon)
                                                          : FoldedWeights<double>(c, epsilon);
  Node* filter_const = AddConst(graph, c.conv->name() + "/folded_filter", filter, *c.conv);
  graph.UpdateInput(c.conv, 1, {filter_const, 0});
  Node* bias_const = AddConst(graph, c.batch_norm->name() + "/folded_bias", bias, *c.conv);
  Node* bias_add = c.bias_add;
  if (bias_add) {
    graph.UpdateInput(bias_add, 1, {bias_const, 0});
  } else {
    bias_add = graph.AddNode({.name = graph.UniqueName(c.batch_norm->name() + "/bias_add"),
                              .op = "BiasAdd", .inputs = {{c.conv, 0}, {bias_const, 0}},
                              .device = c.conv->requested_device()});
  }
  passes::ReplaceChain(graph, c.batch_norm, bias_add, {c.batch_norm});
}

}  // namespace

int FoldBatchNormIntoConv(Graph& graph, const std::set<std::string>& targets) {
  return passes::RewriteChains(
      graph, [&](Node* node) { return MatchBatchNormChain(node, graph, targets); },
      [&](const BatchNormChain& chain) { Fold(graph, chain); });
}

[[maybe_unused]] static const bool fold_batch_norm_registered = [] {
  RegisterRewritePass({.name = "FoldBatchNormIntoConv", .order = 10,
                       .enabled = &PassOptions::fold_batch_norm,
                       .run = [](Graph& graph, Device&, const std::set<std::string>& targets) {
                         return FoldBatchNormIntoConv(graph, targets);
                       }});
  return true;
}();

}  // namespace dflow
