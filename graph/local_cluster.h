// The devices of this process as a Cluster: CPU and GPU devices, each with
// its own thread pool. Partitions run on in-process executors, and the
// partitions of one step meet in a LocalRendezvous (a tensor crossing
// between the host and a GPU is copied by the GPU's _Send or _Recv). A
// local Session runs on one, and so does a worker task for the partitions
// its clients register.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "graph/cluster.h"
#include "graph/resource.h"
#include "graph/thread_pool.h"

namespace dflow {

// An Executor of this process as a partition runner.
class ExecutorRunner final : public PartitionRunner {
 public:
  explicit ExecutorRunner(std::shared_ptr<Executor> executor) : executor_(std::move(executor)) {}
  void RunAsync(const ExecutorStep& step, const RunOptions& options, RunMetadata* metadata, Done done,
                bool caller_joins) override;
  const Executor& executor() const { return *executor_; }

 private:
  std::shared_ptr<Executor> executor_;
};

class LocalCluster final : public Cluster {
 public:
  // A session's devices: options.devices ("/device:CPU:0" when empty), and
  // under soft placement, when all of them are GPUs, the host CPU after
  // them as a fallback for the ops no GPU has a kernel for. Throws
  // kInvalidArgument for a malformed or repeated name, kUnavailable for a
  // GPU that is not visible.
  static std::unique_ptr<LocalCluster> ForSession(const SessionOptions& options, ResourceStore* resources);
  // CPU and GPU devices under full names ("/job:worker/replica:0/task:1/
  // device:CPU:0", ".../device:GPU:0"), each with a pool of `num_threads`
  // (0: one per hardware thread).
  LocalCluster(const std::vector<std::string>& devices, int num_threads, ResourceStore* resources);

  const std::vector<std::string>& devices() const override { return names_; }
  std::vector<std::string> fallback_devices() const override { return fallback_; }
  int64_t Incarnation(const std::string&) const override { return 1; }  // one process
  Device& pass_device() override { return *devices_.front(); }
  std::unique_ptr<PartitionRunner> Load(const std::string& device, std::shared_ptr<Graph> graph) override;
  ClusterStep NewStep(const std::vector<std::string>& partition_devices) override;

  const std::vector<std::unique_ptr<Device>>& local_devices() const { return devices_; }
  // Throws kInvalidArgument naming the devices there are.
  Device& DeviceNamed(const std::string& name) const;

 private:
  void AddNamed(const std::string& name, int threads);
  void Add(std::unique_ptr<ThreadPool> pool, std::unique_ptr<Device> device);

  ResourceStore* resources_;
  std::vector<std::unique_ptr<ThreadPool>> pools_;  // one per device
  std::vector<std::unique_ptr<Device>> devices_;    // after pools_: destroyed before them
  std::vector<std::string> names_;
  std::vector<std::string> fallback_;
};

}  // namespace dflow
