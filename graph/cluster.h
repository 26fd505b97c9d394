// Where a session's partitions run. A Session places its graph over the
// devices a Cluster offers, loads one partition per device used, and runs
// every step through the one step runner (graph/step_runner.h). It does not
// know whether the devices are in this process (graph/local_cluster.h) or on
// the tasks of a ZeroMQ cluster (dist/runtime/zmq_cluster.h): the two differ only in
// who runs a partition.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/executor.h"
#include "graph/rendezvous.h"

namespace dflow {

struct SessionOptions;

// Runs one partition of a step: an executor in this process, or a graph
// registered on a task of a cluster.
class PartitionRunner {
 public:
  using Done = std::function<void(std::optional<Error> error)>;
  virtual ~PartitionRunner() = default;

  // Starts this partition's share of `step` and returns; calls `done` once,
  // when the partition has finished or failed (it never throws: a step it
  // cannot start is reported through `done` too). `step`'s pointers and
  // `metadata` must outlive that call. With `caller_joins` the calling
  // thread may run some of the partition's work before it returns (the
  // caller waits for the step anyway: a small step never leaves its thread).
  virtual void RunAsync(const ExecutorStep& step, const RunOptions& options, RunMetadata* metadata,
                        Done done, bool caller_joins) = 0;
};

// One step as a cluster runs it: the id its partitions share, and the
// rendezvous that joins them and that the first error aborts. A step of one
// partition in this process has none: nothing crosses between partitions.
struct ClusterStep {
  int64_t id = 0;
  std::unique_ptr<Rendezvous> rendezvous;
};

class Cluster {
 public:
  virtual ~Cluster() = default;

  // The devices placement may use, by full name.
  virtual const std::vector<std::string>& devices() const = 0;
  // Those of devices() placement uses only for what no other can run (a
  // GPU session's host CPU under soft placement).
  virtual std::vector<std::string> fallback_devices() const { return {}; }
  // The start number of the process that owns `device` (Send/Recv keys
  // carry it, so a restarted process never takes its predecessor's tensors).
  virtual int64_t Incarnation(const std::string& device) const = 0;
  // The device of this process that graph passes (constant folding) use.
  virtual Device& pass_device() = 0;
  // Makes `graph`, placed on `device`, runnable step after step.
  virtual std::unique_ptr<PartitionRunner> Load(const std::string& device,
                                                std::shared_ptr<Graph> graph) = 0;
  // A fresh step whose partitions are on `partition_devices` (one each).
  virtual ClusterStep NewStep(const std::vector<std::string>& partition_devices) = 0;
};

// A cluster behind a session target "SCHEME://...". The library part that
// implements one registers it by scheme (dist/ registers "zmq"), so graph/
// needs no knowledge of transports.
using ClusterFactory = std::function<std::unique_ptr<Cluster>(const SessionOptions& options)>;
void RegisterClusterFactory(const std::string& scheme, ClusterFactory factory);
// The cluster for options.target; throws kInvalidArgument for a target of no
// registered scheme.
std::unique_ptr<Cluster> NewRemoteCluster(const SessionOptions& options);

}  // namespace dflow
