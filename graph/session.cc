#include "graph/session.h"

#include <chrono>
#include <condition_variable>
#include <set>

namespace dflow {

struct Session::Executable {
  std::vector<std::unique_ptr<Executor>> partitions;  // one per device used
  RunSignature signature;
};

void CheckSessionDevice(const std::string& device) {
  DeviceName wanted = DeviceName::Parse(device.empty() ? "/device:CPU:0" : device);
  if (wanted.type.empty() || wanted.type == "CPU") return;
  if (wanted.type != "GPU")
    Fail(Code::kInvalidArgument, "SessionOptions.device '", device,
         "' names no device type this build has (CPU, GPU)");
  int index = wanted.index.value_or(0);
  GpuDiscovery gpus = DiscoverGpus();
  if (index >= gpus.count)
    Fail(Code::kUnavailable, "no GPU is visible for /device:GPU:", index, ": ",
         gpus.count == 0 ? gpus.reason : StrCat("only ", gpus.count, " GPU(s) are visible"));
}

Session::Session(std::shared_ptr<Graph> graph, SessionOptions options)
    : graph_(std::move(graph)), options_(options) {
  if (!graph_) Fail(Code::kInvalidArgument, "Session needs a graph");
  if (!options_.target.empty()) {
    StartRemote();
    return;
  }
  int threads = options_.num_threads > 0 ? options_.num_threads : ThreadPool::DefaultNumThreads();
  if (!options_.devices.empty() && !options_.device.empty())
    Fail(Code::kInvalidArgument, "SessionOptions: give `device` (one device) or `devices` (several "
         "CPU devices), not both");
  if (options_.devices.empty()) {
    CheckSessionDevice(options_.device);
    pools_.push_back(std::make_unique<ThreadPool>(threads, "dflow-cpu"));
    DeviceName wanted = DeviceName::Parse(options_.device.empty() ? "/device:CPU:0" : options_.device);
    if (wanted.type == "GPU")
      devices_.push_back(NewGpuDevice(wanted.index.value_or(0), pools_.back().get()));
    else
      devices_.push_back(NewCpuDevice(wanted.index.value_or(0), pools_.back().get()));
    return;
  }
  std::set<std::string> seen;
  for (const std::string& name : options_.devices) {
    DeviceName parsed = DeviceName::Parse(name);
    if (parsed.type != "CPU" || !parsed.index)
      Fail(Code::kInvalidArgument, "session device '", name,
           "' is not a full CPU device name (e.g. /job:localhost/replica:0/task:0/device:CPU:1)");
    if (!seen.insert(name).second)
      Fail(Code::kInvalidArgument, "session device '", name, "' is listed twice");
    pools_.push_back(std::make_unique<ThreadPool>(threads, StrCat("dflow-cpu", *parsed.index)));
    devices_.push_back(NewCpuDevice(name, pools_.back().get()));
  }
}

// --- remote sessions (issue 7)
namespace {
RemoteSessionFactory& RegisteredRemoteFactory() {
  static RemoteSessionFactory factory;
  return factory;
}
}  // namespace

void RegisterRemoteSessionFactory(RemoteSessionFactory factory) {
  RegisteredRemoteFactory() = std::move(factory);
}

// The graph runs elsewhere; the one local device only serves device().
void Session::StartRemote() {
  if (!options_.device.empty() || !options_.devices.empty())
    Fail(Code::kInvalidArgument, "SessionOptions: target '", options_.target, "' runs the graph "
         "on that cluster's devices; give no `device` or `devices` with it (request devices on "
         "the nodes instead)");
  if (!RegisteredRemoteFactory())
    Fail(Code::kFailedPrecondition, "session target '", options_.target,
         "' needs a remote session factory, and none is registered (dist/remote_session.cc "
         "registers one in libdflow)");
  pools_.push_back(std::make_unique<ThreadPool>(1, "dflow-cpu"));
  devices_.push_back(NewCpuDevice(0, pools_.back().get()));
  remote_ = RegisteredRemoteFactory()(graph_, options_);
}
// --- end remote sessions

Session::Session(const Scope& scope, SessionOptions options) : Session(scope.graph_ptr(), options) {}

Session::~Session() = default;

size_t Session::num_cached_executors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cache_.size();
}

namespace {

SessionPartitioner& RegisteredPartitioner() {
  static SessionPartitioner partitioner;
  return partitioner;
}

// Run's metadata for a step of several partitions: every partition's node
// stats, the largest peak, and the step's wall time.
void MergeMetadata(std::vector<RunMetadata>& parts, int64_t step_ns, RunMetadata& merged) {
  merged = {};
  merged.step_ns = step_ns;
  for (RunMetadata& part : parts) {
    merged.peak_bytes = std::max(merged.peak_bytes, part.peak_bytes);
    for (NodeExecStats& stats : part.step_stats) merged.step_stats.push_back(std::move(stats));
  }
}

}  // namespace

// Every node goes on this session's one device. A request for another
// device is an error unless soft placement is allowed.
void Session::Place(Graph& graph) const {
  const Device& device = *devices_.front();
  DeviceName here = DeviceName::Parse(device.name());
  for (Node* node : graph.nodes()) {
    const std::string& requested = node->requested_device();
    if (!requested.empty() && !DeviceName::Parse(requested).Matches(here) &&
        !options_.allow_soft_placement)
      Fail(Code::kInvalidArgument, node->Describe(), " requests device '", requested,
           "' but this session has only ", device.name(),
           " (set allow_soft_placement to run it there instead)");
    node->set_assigned_device(device.name());
  }
}

// Fails before building an executor when an op has no kernel on this
// session's device, naming the op and the device types that have one.
void Session::RequireKernels(const Graph& graph, const Device& device) const {
  const KernelRegistry& registry = KernelRegistry::Global();
  for (const Node* node : graph.nodes()) {
    if (registry.HasFor(*node, device.type())) continue;
    if (registry.Has(node->op(), device.type()))
      Fail(Code::kUnimplemented, node->Describe(), ": op ", node->op(), " has no ", device.type(),
           " kernel for dtype ", DTypeName(KernelDType(*node)), ", so the graph cannot run on ",
           device.name());
    std::string elsewhere;
    for (const std::string& type : registry.DeviceTypesWithKernels(node->op()))
      elsewhere += StrCat(elsewhere.empty() ? "" : ", ", type);
    Fail(Code::kUnimplemented, node->Describe(), ": op ", node->op(), " has no ", device.type(),
         " kernel, so the graph cannot run on ", device.name(), " (kernels exist for: ",
         elsewhere.empty() ? "no device" : elsewhere, ")");
  }
}

std::shared_ptr<Session::Executable> Session::Build(const FeedList& feeds,
                                                    const std::vector<TensorName>& fetches,
                                                    const std::vector<TensorName>& targets) {
  auto executable = std::make_shared<Executable>();
  executable->signature = RunSignature::Resolve(*graph_, feeds, fetches, targets);
  const RunSignature& signature = executable->signature;
  AddExecutors(signature.PrepareGraph(*graph_, *devices_.front(), options_.passes), *executable);
  return executable;
}

void RegisterSessionPartitioner(SessionPartitioner partitioner) {
  RegisteredPartitioner() = std::move(partitioner);
}

// One device: every node goes there (Place) and the graph is the one
// partition. Several: the registered partitioner places and cuts it.
void Session::AddExecutors(std::unique_ptr<Graph> graph, Executable& executable) {
  if (devices_.size() == 1) {
    Place(*graph);
    RequireKernels(*graph, *devices_.front());
    executable.partitions.push_back(
        std::make_unique<Executor>(std::move(graph), devices_.front().get(), &resources_));
    return;
  }
  const SessionPartitioner& partitioner = RegisteredPartitioner();
  if (!partitioner.partition || !partitioner.new_rendezvous)
    Fail(Code::kFailedPrecondition, "a session with several devices needs a partitioner, and none is "
         "registered (dist/session_partitioner.cc registers one in libdflow)");
  auto partitions = partitioner.partition(*graph, options_.devices, options_.allow_soft_placement);
  for (auto& [name, part] : partitions) {
    auto device = std::find_if(devices_.begin(), devices_.end(),
                               [&](const auto& d) { return d->name() == name; });
    if (device == devices_.end())
      Fail(Code::kInternal, "the partitioner made a partition for '", name, "', not a session device");
    executable.partitions.push_back(std::make_unique<Executor>(part, device->get(), &resources_));
  }
}

// Starts every partition on its own pool with one step id and rendezvous,
// and waits for all of them. The first error anywhere aborts the rendezvous
// (the executor does that), which fails every Recv still waiting, so each
// partition finishes; that first error is the one thrown.
void Session::RunPartitions(const Executable& executable, const std::vector<Tensor>& args,
                            std::vector<Tensor>& retvals, const RunOptions& options,
                            RunMetadata* metadata) const {
  std::unique_ptr<Rendezvous> rendezvous = RegisteredPartitioner().new_rendezvous();
  ExecutorStep step{NewStepId(), &args, &retvals, rendezvous.get()};
  std::vector<RunMetadata> part_metadata(executable.partitions.size());
  auto start = std::chrono::steady_clock::now();
  std::mutex mu;
  std::condition_variable all_done;
  size_t running = executable.partitions.size();
  std::optional<Error> first_error;
  auto finish_one = [&](std::optional<Error> error) {
    std::lock_guard<std::mutex> lock(mu);  // notify under the lock: the waiter owns these
    if (error && !first_error) first_error = std::move(error);
    if (--running == 0) all_done.notify_all();
  };
  for (size_t p = 0; p < executable.partitions.size(); ++p) {
    try {
      RunMetadata* part = metadata ? &part_metadata[p] : nullptr;
      executable.partitions[p]->RunAsync(step, options, part, finish_one);
    } catch (const Error& e) {
      rendezvous->StartAbort(e);
      finish_one(e);
    }
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    all_done.wait(lock, [&] { return running == 0; });
  }
  if (metadata) {
    auto elapsed = std::chrono::steady_clock::now() - start;
    int64_t step_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
    MergeMetadata(part_metadata, step_ns, *metadata);
  }
  // The rendezvous holds the first error of all (a partition's own error may
  // be just its Recv being aborted).
  if (std::optional<Error> origin = rendezvous->abort_error()) throw *origin;
  if (first_error) throw *first_error;
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

std::vector<Tensor> Session::Run(const FeedList& feeds, const std::vector<TensorName>& fetches,
                                 const std::vector<TensorName>& targets, const RunOptions& options,
                                 RunMetadata* metadata) {
  if (remote_) {  // the fetches arrive together: each is reported then
    std::vector<Tensor> results = remote_->Run(feeds, fetches, targets, options, metadata);
    if (options.on_fetch_ready)
      for (size_t i = 0; i < results.size(); ++i) options.on_fetch_ready(i, results[i]);
    return results;
  }
  std::shared_ptr<Executable> executable = GetExecutable(feeds, fetches, targets);
  std::vector<Tensor> args = executable->signature.CheckFeeds(feeds);
  if (executable->partitions.size() == 1)  // no rendezvous needed: the caller's thread joins in
    return executable->partitions.front()->Run(args, options, metadata);
  std::vector<Tensor> retvals(fetches.size());
  RunPartitions(*executable, args, retvals, options, metadata);
  for (size_t i = 0; i < retvals.size(); ++i)
    if (!retvals[i].valid()) Fail(Code::kInternal, "fetch '", fetches[i].name, "' was not produced");
  return retvals;
}

}  // namespace dflow
