// What one Session::Run call asks for: feeds, fetches and targets by name,
// resolved against a graph, and the check every fed tensor must pass.
// Session builds and caches one executable per signature from it.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/passes.h"
#include "graph/scope.h"
#include "graph/tensor.h"

namespace dflow {

// Names a tensor for feeds and fetches: "node", "node:1", or an Output.
struct TensorName {
  std::string name;
  TensorName(const char* n) : name(n) {}            // NOLINT
  TensorName(std::string n) : name(std::move(n)) {}  // NOLINT
  TensorName(const Output& out) : name(out.name()) {}  // NOLINT
  TensorName(const Node* node) : name(node->name()) {}  // NOLINT
};

using FeedList = std::vector<std::pair<TensorName, Tensor>>;

struct RunSignature {
  std::vector<NodeOut> feeds, fetches;
  std::vector<Node*> targets;
  std::set<std::string> target_names;
  // Per feed: its output's name, dtype and (maybe partial) shape.
  std::vector<std::string> feed_names;
  std::vector<DType> feed_dtypes;
  std::vector<Shape> feed_shapes;

  // Throws naming a feed, fetch or target the graph lacks.
  static RunSignature Resolve(const Graph& graph, const FeedList& feeds,
                              const std::vector<TensorName>& fetches,
                              const std::vector<TensorName>& targets);
  // "feeds|fetches|targets" by name: the same for calls that can share an executable.
  static std::string Key(const FeedList& feeds, const std::vector<TensorName>& fetches,
                         const std::vector<TensorName>& targets);
  // The fed tensors in order, each checked against its output's dtype and
  // shape; throws kInvalidArgument naming the feed.
  std::vector<Tensor> CheckFeeds(const FeedList& feeds) const;
  // The part of `graph` this call needs (graph/passes.h ExtractForExecution),
  // rewritten by the passes `options` turn on, which evaluate on `device`.
  std::unique_ptr<Graph> PrepareGraph(const Graph& graph, Device& device,
                                      const PassOptions& options) const;
};

}  // namespace dflow
