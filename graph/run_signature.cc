#include "graph/run_signature.h"

namespace dflow {
namespace {

NodeOut ResolveOutput(const Graph& graph, const TensorName& name, std::string_view role) {
  try {
    NodeOut out = graph.ParseOutput(name.name);
    if (out.index < 0) Fail(Code::kInvalidArgument, "a control reference cannot be a ", role);
    return out;
  } catch (const Error& e) {
    throw Error(e.code(), StrCat(role, " '", name.name, "': ", e.message()));
  }
}

}  // namespace

RunSignature RunSignature::Resolve(const Graph& graph, const FeedList& feeds,
                                   const std::vector<TensorName>& fetches,
                                   const std::vector<TensorName>& targets) {
  RunSignature signature;
  for (const auto& [name, value] : feeds) {
    NodeOut feed = ResolveOutput(graph, name, "feed");
    signature.feeds.push_back(feed);
    signature.feed_names.push_back(feed.name());
    signature.feed_dtypes.push_back(feed.node->output_dtype(feed.index));
    signature.feed_shapes.push_back(feed.node->output_shape(feed.index));
  }
  for (const auto& fetch : fetches) signature.fetches.push_back(ResolveOutput(graph, fetch, "fetch"));
  for (const auto& target : targets) {
    std::string node_name = target.name[0] == '^' ? target.name.substr(1) : target.name;
    Node* node = graph.FindNode(node_name);
    if (!node)
      Fail(Code::kNotFound, "target '", target.name, "': no node named '", node_name, "' in the graph");
    signature.targets.push_back(node);
    signature.target_names.insert(node->name());
  }
  return signature;
}

std::string RunSignature::Key(const FeedList& feeds, const std::vector<TensorName>& fetches,
                              const std::vector<TensorName>& targets) {
  std::string key;  // appended in place: this runs on every step
  for (const auto& [name, value] : feeds) key.append(name.name).push_back(',');
  key.push_back('|');
  for (const auto& fetch : fetches) key.append(fetch.name).push_back(',');
  key.push_back('|');
  for (const auto& target : targets) key.append(target.name).push_back(',');
  return key;
}

std::vector<Tensor> RunSignature::CheckFeeds(const FeedList& feeds) const {
  std::vector<Tensor> args;
  args.reserve(feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const Tensor& value = feeds[i].second;
    const std::string& name = feed_names[i];
    if (!value.valid()) Fail(Code::kInvalidArgument, "feed '", name, "' is an empty tensor");
    if (value.dtype() != feed_dtypes[i])
      Fail(Code::kInvalidArgument, "feed '", name, "' expects ", DTypeName(feed_dtypes[i]),
           feed_shapes[i].ToString(), ", got ", value.SummaryString());
    if (!feed_shapes[i].IsCompatibleWith(value.shape()))
      Fail(Code::kInvalidArgument, "feed '", name, "' expects shape ", feed_shapes[i].ToString(),
           ", got ", value.SummaryString());
    args.push_back(value);
  }
  return args;
}

std::unique_ptr<Graph> RunSignature::PrepareGraph(const Graph& graph, Device& device,
                                                  const PassOptions& options) const {
  std::unique_ptr<Graph> part = ExtractForExecution(graph, feeds, fetches, targets);
  RunPasses(*part, device, options, target_names);
  return part;
}

}  // namespace dflow
