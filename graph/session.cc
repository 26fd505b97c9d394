#include "graph/session.h"

#include <set>

#include "graph/local_cluster.h"
#include "graph/step_runner.h"

namespace dflow {

// A signature's partitions, each loaded on its device.
struct Session::Executable {
  RunSignature signature;
  std::vector<std::string> devices;                     // [partition]
  std::vector<std::unique_ptr<PartitionRunner>> runners;  // [partition]
  std::vector<PartitionRunner*> partitions;             // the runners, as the step runner takes them
};

void CheckSessionDevice(const std::string& device) {
  DeviceName wanted = DeviceName::Parse(device.empty() ? "/device:CPU:0" : device);
  const char* not_full = "session device is not a full CPU or GPU device name: '";
  if (wanted.type != "CPU" && wanted.type != "GPU")
    Fail(Code::kInvalidArgument, not_full, device, "' names no device type this build has (CPU, GPU)");
  if (!wanted.index)
    Fail(Code::kInvalidArgument, not_full, device, "' has no index (e.g. /device:", wanted.type, ":0)");
  if (wanted.type == "CPU") return;
  int index = *wanted.index;
  GpuDiscovery gpus = DiscoverGpus();
  if (index >= gpus.count)
    Fail(Code::kUnavailable, "no GPU is visible for ", device, ": ",
         gpus.count == 0 ? gpus.reason : StrCat("only ", gpus.count, " GPU(s) are visible"));
}

Session::Session(std::shared_ptr<Graph> graph, SessionOptions options)
    : graph_(std::move(graph)), options_(std::move(options)) {
  if (!graph_) Fail(Code::kInvalidArgument, "Session needs a graph");
  if (options_.target.empty()) {
    cluster_ = LocalCluster::ForSession(options_, &resources_);
    return;
  }
  if (!options_.devices.empty())
    Fail(Code::kInvalidArgument, "SessionOptions: target '", options_.target, "' runs the graph "
         "on that cluster's devices; give no `devices` with it (request devices on the nodes "
         "instead)");
  cluster_ = NewRemoteCluster(options_);
}

Session::Session(const Scope& scope, SessionOptions options) : Session(scope.graph_ptr(), options) {}

// The cluster owns the devices and their allocators, and variables may hold
// a GPU's memory: free the executables and the variables while the devices
// still exist (members alone would destroy the cluster first).
Session::~Session() {
  cache_.clear();
  resources_.Clear();
}

size_t Session::num_cached_executors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

namespace {

std::string DeviceList(const std::vector<std::string>& devices) {
  std::string list;
  for (const std::string& device : devices) list += StrCat(list.empty() ? "" : ", ", device);
  return list;
}

}  // namespace

// A request that no device of the session matches is an error unless soft
// placement is allowed (then the placer relaxes it).
void Session::CheckRequestedDevices(const Graph& graph) const {
  if (options_.allow_soft_placement) return;
  std::vector<DeviceName> devices;
  for (const std::string& name : cluster_->devices()) devices.push_back(DeviceName::Parse(name));
  for (const Node* node : graph.nodes()) {
    const std::string& requested = node->requested_device();
    if (requested.empty()) continue;
    DeviceName request = DeviceName::Parse(requested);
    if (std::any_of(devices.begin(), devices.end(), [&](const DeviceName& d) { return request.Matches(d); }))
      continue;
    Fail(Code::kInvalidArgument, node->Describe(), " requests device '", requested,
         "' but this session has only ", DeviceList(cluster_->devices()),
         " (set allow_soft_placement to run it there instead)");
  }
}

// Fails before placing when an op has a kernel on none of the session's
// device types, naming the op and the device types that have one.
void Session::CheckKernels(const Graph& graph) const {
  std::set<std::string> types;
  for (const std::string& name : cluster_->devices()) types.insert(DeviceName::Parse(name).type);
  std::string type_list;
  for (const std::string& type : types) type_list += StrCat(type_list.empty() ? "" : " or ", type);
  const KernelRegistry& registry = KernelRegistry::Global();
  for (const Node* node : graph.nodes()) {
    if (std::any_of(types.begin(), types.end(), [&](const std::string& t) { return registry.HasFor(*node, t); }))
      continue;
    std::string devices = DeviceList(cluster_->devices());
    if (std::any_of(types.begin(), types.end(), [&](const std::string& t) { return registry.Has(node->op(), t); }))
      Fail(Code::kUnimplemented, node->Describe(), ": op ", node->op(), " has no ", type_list,
           " kernel for dtype ", DTypeName(KernelDType(*node)), ", so the graph cannot run on ", devices);
    std::string elsewhere;
    for (const std::string& type : registry.DeviceTypesWithKernels(node->op()))
      elsewhere += StrCat(elsewhere.empty() ? "" : ", ", type);
    Fail(Code::kUnimplemented, node->Describe(), ": op ", node->op(), " has no ", type_list,
         " kernel, so the graph cannot run on ", devices, " (kernels exist for: ",
         elsewhere.empty() ? "no device" : elsewhere, ")");
  }
}

// A variable keeps its value on the device that holds it (a task keeps its
// own variables): a later signature must place it there again, whatever
// the cost model would choose for that signature's consumers. The
// recorded device narrows the node's request (it satisfied it).
void Session::PinPlacedVariables(Graph& graph) const {
  for (Node* node : graph.nodes()) {
    if (!node->def().is_variable) continue;
    auto placed = variable_devices_.find(node->name());
    if (placed != variable_devices_.end()) node->set_requested_device(placed->second);
  }
}

void Session::RememberPlacedVariables(const Graph& graph, const Placement& placement) {
  for (const Node* node : graph.nodes())
    if (node->def().is_variable) variable_devices_.emplace(node->name(), placement.DeviceOf(node->name()));
}

// The one pipeline: prune and rewrite, passes, place, partition, load.
std::shared_ptr<Session::Executable> Session::Build(const FeedList& feeds,
                                                    const std::vector<TensorName>& fetches,
                                                    const std::vector<TensorName>& targets) {
  auto executable = std::make_shared<Executable>();
  executable->signature = RunSignature::Resolve(*graph_, feeds, fetches, targets);
  std::unique_ptr<Graph> graph =
      executable->signature.PrepareGraph(*graph_, cluster_->pass_device(), options_.passes);
  CheckRequestedDevices(*graph);
  CheckKernels(*graph);
  PinPlacedVariables(*graph);
  PlacementOptions placement_options;
  placement_options.allow_soft_placement = options_.allow_soft_placement;
  placement_options.fallback_devices = cluster_->fallback_devices();
  Placement placement = Place(*graph, cluster_->devices(), placement_options);
  RememberPlacedVariables(*graph, placement);
  PartitionOptions partition_options;
  for (const std::string& device : cluster_->devices())
    partition_options.incarnations[device] = cluster_->Incarnation(device);
  for (DevicePartition& part : Partition(std::move(graph), placement, partition_options)) {
    executable->runners.push_back(cluster_->Load(part.device, std::move(part.graph)));
    executable->partitions.push_back(executable->runners.back().get());
    executable->devices.push_back(part.device);
  }
  return executable;
}

std::shared_ptr<Session::Executable> Session::GetExecutable(const FeedList& feeds,
                                                            const std::vector<TensorName>& fetches,
                                                            const std::vector<TensorName>& targets) {
  std::string key = RunSignature::Key(feeds, fetches, targets);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  auto executable = Build(feeds, fetches, targets);
  cache_[key] = executable;
  return executable;
}

// Every Run, of every kind of session, goes through here.
std::vector<Tensor> Session::Run(const FeedList& feeds, const std::vector<TensorName>& fetches,
                                 const std::vector<TensorName>& targets, const RunOptions& options,
                                 RunMetadata* metadata) {
  std::shared_ptr<Executable> executable = GetExecutable(feeds, fetches, targets);
  std::vector<Tensor> args = executable->signature.CheckFeeds(feeds);
  std::vector<Tensor> retvals(fetches.size());
  ClusterStep step = cluster_->NewStep(executable->devices);
  RunStep(executable->partitions, {step.id, &args, &retvals, step.rendezvous.get()}, options, metadata);
  for (size_t i = 0; i < retvals.size(); ++i)
    if (!retvals[i].valid()) Fail(Code::kInternal, "fetch '", fetches[i].name, "' was not produced");
  return retvals;
}

// The clusters behind targets, by scheme.
namespace {
std::map<std::string, ClusterFactory>& ClusterFactories() {
  static std::map<std::string, ClusterFactory> factories;
  return factories;
}
}  // namespace

void RegisterClusterFactory(const std::string& scheme, ClusterFactory factory) {
  ClusterFactories()[scheme] = std::move(factory);
}

std::unique_ptr<Cluster> NewRemoteCluster(const SessionOptions& options) {
  size_t colon = options.target.find("://");
  std::string scheme = colon == std::string::npos ? "" : options.target.substr(0, colon);
  auto it = ClusterFactories().find(scheme);
  if (it == ClusterFactories().end())
    Fail(Code::kInvalidArgument, "session target '", options.target, "' is not of the form "
         "zmq://host:port (no cluster of scheme '", scheme, "' is known)");
  return it->second(options);
}

}  // namespace dflow
