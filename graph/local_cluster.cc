#include "graph/local_cluster.h"

#include <algorithm>
#include <set>

#include "graph/local_rendezvous.h"
#include "graph/session.h"

namespace dflow {

void ExecutorRunner::RunAsync(const ExecutorStep& step, const RunOptions& options, RunMetadata* metadata,
                              Done done, bool caller_joins) {
  executor_->RunAsync(step, options, metadata, std::move(done), caller_joins);
}

namespace {

// The host CPU in the form of `device`'s name ("/device:CPU:0", or the
// same job/replica/task).
std::string HostCpuBeside(const std::string& device) {
  DeviceName host = DeviceName::Parse(device);
  host.type = "CPU";
  host.index = 0;
  return host.ToString();
}

}  // namespace

std::unique_ptr<LocalCluster> LocalCluster::ForSession(const SessionOptions& options, ResourceStore* resources) {
  std::vector<std::string> names = options.devices;
  if (names.empty()) names.push_back("/device:CPU:0");
  for (const std::string& name : names) CheckSessionDevice(name);
  std::vector<std::string> fallback;
  const bool all_gpus = std::none_of(names.begin(), names.end(),
                                     [](const std::string& name) { return DeviceName::Parse(name).type == "CPU"; });
  if (options.allow_soft_placement && all_gpus) fallback.push_back(HostCpuBeside(names.front()));
  names.insert(names.end(), fallback.begin(), fallback.end());
  auto cluster = std::make_unique<LocalCluster>(names, options.num_threads, resources);
  cluster->fallback_ = std::move(fallback);
  return cluster;
}

LocalCluster::LocalCluster(const std::vector<std::string>& devices, int num_threads, ResourceStore* resources)
    : resources_(resources) {
  int threads = num_threads > 0 ? num_threads : ThreadPool::DefaultNumThreads();
  std::set<std::string> seen;
  for (const std::string& name : devices) {
    DeviceName parsed = DeviceName::Parse(name);
    if ((parsed.type != "CPU" && parsed.type != "GPU") || !parsed.index)
      Fail(Code::kInvalidArgument, "session device '", name, "' is not a full CPU or GPU device name ",
           "(e.g. /job:localhost/replica:0/task:0/device:CPU:1)");
    if (!seen.insert(name).second)
      Fail(Code::kInvalidArgument, "session device '", name, "' is listed twice");
    AddNamed(name, threads);
  }
  if (devices_.empty()) Fail(Code::kInvalidArgument, "a local cluster needs at least one device");
}

// A device of the name's type, with a pool of `threads` for its kernels
// (a GPU's for their host-side work).
void LocalCluster::AddNamed(const std::string& name, int threads) {
  DeviceName parsed = DeviceName::Parse(name);
  const bool gpu = parsed.type == "GPU";
  auto pool = std::make_unique<ThreadPool>(threads, StrCat(gpu ? "dflow-gpu" : "dflow-cpu", parsed.index.value_or(0)));
  std::unique_ptr<Device> device = gpu ? NewGpuDevice(name, pool.get()) : NewCpuDevice(name, pool.get());
  Add(std::move(pool), std::move(device));
}

void LocalCluster::Add(std::unique_ptr<ThreadPool> pool, std::unique_ptr<Device> device) {
  names_.push_back(device->name());
  pools_.push_back(std::move(pool));
  devices_.push_back(std::move(device));
}

Device& LocalCluster::DeviceNamed(const std::string& name) const {
  for (const auto& device : devices_)
    if (device->name() == name) return *device;
  std::string names;
  for (const std::string& known : names_) names += StrCat(names.empty() ? "" : ", ", known);
  Fail(Code::kInvalidArgument, "this process has no device '", name, "' (it has ", names, ")");
}

std::unique_ptr<PartitionRunner> LocalCluster::Load(const std::string& device, std::shared_ptr<Graph> graph) {
  return std::make_unique<ExecutorRunner>(std::make_shared<Executor>(std::move(graph), &DeviceNamed(device), resources_));
}

ClusterStep LocalCluster::NewStep(const std::vector<std::string>& partition_devices) {
  ClusterStep step;
  step.id = NewStepId();
  if (partition_devices.size() > 1) step.rendezvous = std::make_unique<LocalRendezvous>();
  return step;
}

}  // namespace dflow
