#include "graph/session.h"

namespace dflow {

struct Session::Executable {
  std::unique_ptr<Executor> executor;
  std::vector<std::string> feed_names;
  std::vector<DType> feed_dtypes;
  std::vector<Shape> feed_shapes;
};

Session::Session(std::shared_ptr<Graph> graph, SessionOptions options)
    : graph_(std::move(graph)), options_(options) {
  if (!graph_) Fail(Code::kInvalidArgument, "Session needs a graph");
  int threads = options_.num_threads > 0 ? options_.num_threads : ThreadPool::DefaultNumThreads();
  pool_ = std::make_unique<ThreadPool>(threads, "dflow-cpu");
  DeviceName wanted = DeviceName::Parse(options_.device.empty() ? "/device:CPU:0" : options_.device);
  if (wanted.type == "GPU")
    device_ = NewGpuDevice(wanted.index.value_or(0), pool_.get());
  else if (wanted.type.empty() || wanted.type == "CPU")
    device_ = NewCpuDevice(wanted.index.value_or(0), pool_.get());
  else
    Fail(Code::kInvalidArgument, "SessionOptions.device '", options_.device,
         "' names no device type this build has (CPU, GPU)");
}

Session::Session(const Scope& scope, SessionOptions options) : Session(scope.graph_ptr(), options) {}

Session::~Session() = default;

size_t Session::num_cached_executors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

namespace {

NodeOut Resolve(const Graph& graph, const TensorName& name, std::string_view role) {
  try {
    NodeOut out = graph.ParseOutput(name.name);
    if (out.index < 0) Fail(Code::kInvalidArgument, "a control reference cannot be a ", role);
    return out;
  } catch (const Error& e) {
    throw Error(e.code(), StrCat(role, " '", name.name, "': ", e.message()));
  }
}

std::string SignatureKey(const FeedList& feeds, const std::vector<TensorName>& fetches,
                         const std::vector<TensorName>& targets) {
  std::string key;
  for (const auto& [name, value] : feeds) key += name.name + ",";
  key += "|";
  for (const auto& fetch : fetches) key += fetch.name + ",";
  key += "|";
  for (const auto& target : targets) key += target.name + ",";
  return key;
}

}  // namespace

// Every node goes on this session's one device. A request for another
// device is an error unless soft placement is allowed.
void Session::Place(Graph& graph) const {
  DeviceName here = DeviceName::Parse(device_->name());
  for (Node* node : graph.nodes()) {
    const std::string& requested = node->requested_device();
    if (!requested.empty() && !DeviceName::Parse(requested).Matches(here) &&
        !options_.allow_soft_placement)
      Fail(Code::kInvalidArgument, node->Describe(), " requests device '", requested,
           "' but this session has only ", device_->name(),
           " (set allow_soft_placement to run it there instead)");
    node->set_assigned_device(device_->name());
  }
}

// Fails before building an executor when an op has no kernel on this
// session's device, naming the op and the device types that have one.
void Session::RequireKernels(const Graph& graph) const {
  const KernelRegistry& registry = KernelRegistry::Global();
  for (const Node* node : graph.nodes()) {
    if (registry.Has(node->op(), device_->type())) continue;
    std::string elsewhere;
    for (const std::string& type : registry.DeviceTypesWithKernels(node->op()))
      elsewhere += StrCat(elsewhere.empty() ? "" : ", ", type);
    Fail(Code::kUnimplemented, node->Describe(), ": op ", node->op(), " has no ", device_->type(),
         " kernel, so the graph cannot run on ", device_->name(), " (kernels exist for: ",
         elsewhere.empty() ? "no device" : elsewhere, ")");
  }
}

std::shared_ptr<Session::Executable> Session::Build(const FeedList& feeds,
                                                    const std::vector<TensorName>& fetches,
                                                    const std::vector<TensorName>& targets) {
  std::vector<NodeOut> feed_outs, fetch_outs;
  std::vector<Node*> target_nodes;
  std::set<std::string> target_names;
  for (const auto& [name, value] : feeds) feed_outs.push_back(Resolve(*graph_, name, "feed"));
  for (const auto& fetch : fetches) fetch_outs.push_back(Resolve(*graph_, fetch, "fetch"));
  for (const auto& target : targets) {
    std::string node_name = target.name[0] == '^' ? target.name.substr(1) : target.name;
    Node* node = graph_->FindNode(node_name);
    if (!node) Fail(Code::kNotFound, "target '", target.name, "': no node named '", node_name, "' in the graph");
    target_nodes.push_back(node);
    target_names.insert(node->name());
  }

  auto executable = std::make_shared<Executable>();
  for (const NodeOut& feed : feed_outs) {
    executable->feed_names.push_back(feed.name());
    executable->feed_dtypes.push_back(feed.node->output_dtype(feed.index));
    executable->feed_shapes.push_back(feed.node->output_shape(feed.index));
  }
  std::unique_ptr<Graph> graph = ExtractForExecution(*graph_, feed_outs, fetch_outs, target_nodes);
  RunPasses(*graph, *device_, options_.passes, target_names);
  Place(*graph);
  RequireKernels(*graph);
  executable->executor = std::make_unique<Executor>(std::move(graph), device_.get(), &resources_);
  return executable;
}

std::shared_ptr<Session::Executable> Session::GetExecutable(const FeedList& feeds,
                                                            const std::vector<TensorName>& fetches,
                                                            const std::vector<TensorName>& targets) {
  std::string key = SignatureKey(feeds, fetches, targets);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  auto executable = Build(feeds, fetches, targets);
  cache_[key] = executable;
  return executable;
}

std::vector<Tensor> Session::Run(const FeedList& feeds, const std::vector<TensorName>& fetches,
                                 const std::vector<TensorName>& targets, const RunOptions& options,
                                 RunMetadata* metadata) {
  std::shared_ptr<Executable> executable = GetExecutable(feeds, fetches, targets);
  std::vector<Tensor> args;
  args.reserve(feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const Tensor& value = feeds[i].second;
    const std::string& name = executable->feed_names[i];
    if (!value.valid()) Fail(Code::kInvalidArgument, "feed '", name, "' is an empty tensor");
    if (value.dtype() != executable->feed_dtypes[i])
      Fail(Code::kInvalidArgument, "feed '", name, "' expects ",
           DTypeName(executable->feed_dtypes[i]), executable->feed_shapes[i].ToString(), ", got ",
           value.SummaryString());
    if (!executable->feed_shapes[i].IsCompatibleWith(value.shape()))
      Fail(Code::kInvalidArgument, "feed '", name, "' expects shape ",
           executable->feed_shapes[i].ToString(), ", got ", value.SummaryString());
    args.push_back(value);
  }
  return executable->executor->Run(args, options, metadata);
}

}  // namespace dflow
