// Session: runs a graph. Every Run signature (feeds, fetches, targets) goes
// one way, in Build and Run below: prune the graph to what the fetches and
// targets need and rewrite feeds and fetches into _Arg and _Retval nodes
// (RunSignature), run the graph passes, place every node on one of the
// cluster's devices (graph/placement.h), cut the graph into one partition per
// device used with Send/Recv pairs on the cut edges (graph/partition.h), and
// load each partition on its device. The result is cached per signature.
// Each step then goes through the one step runner (graph/step_runner.h):
// every partition starts with one step id and rendezvous, and the first error
// aborts them all and is what Run throws. The cluster is this process's
// devices (graph/local_cluster.h) or, with a target, the tasks of a ZeroMQ
// cluster (dist/runtime/zmq_cluster.h); one device in this process is the
// one-partition case, run on the caller's thread as far as it can be.
// Variables keep their values across Run calls. Run may be called from
// several threads.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "graph/cluster.h"
#include "graph/executor.h"
#include "graph/partition.h"
#include "graph/passes.h"
#include "graph/rendezvous.h"
#include "graph/run_signature.h"
#include "graph/scope.h"

namespace dflow {

struct SessionOptions {
  int num_threads = 0;  // worker threads per device; 0 = one per hardware thread
  PassOptions passes{};
  // A node that asks for a device this session lacks, or whose op has no
  // kernel on the device it asks for, goes to a session device that has one
  // instead of failing (TensorFlow's allow_soft_placement); its placement
  // reason says so. The same on every kind of session.
  bool allow_soft_placement = false;
  // The devices the graph runs on, CPU and GPU, each with its own thread
  // pool: "/device:GPU:0", or full names ("/job:localhost/replica:0/task:0/
  // device:CPU:1"); the graph is cut between them where placement puts its
  // nodes, and feeds and fetches cross to the host as needed. Empty: the
  // host CPU, "/device:CPU:0". A GPU that is not visible is an error. When
  // every device is a GPU, soft placement adds the host CPU as a fallback:
  // it runs the ops no GPU has a kernel for (and nodes that request it).
  std::vector<std::string> devices{};
  // "zmq://host:port": the graph runs on the cluster of the worker listening
  // there (dist/runtime/zmq_cluster.h); empty: in this process.
  std::string target{};
  // With a target: only the cluster's tasks that one of these requests
  // matches ("/job:ps", "/job:worker/task:1") are contacted and run the
  // graph (TensorFlow's ConfigProto.device_filters), so a replica's session
  // never waits for the other replicas. Empty: every task.
  std::vector<std::string> device_filters{};
};

// Throws what a Session on this device (one of SessionOptions.devices; ""
// is the host CPU) would: kInvalidArgument for a malformed name or a device
// type this build lacks, kUnavailable (with the reason) for a GPU that is
// not visible. For programs that check before they write
// anything (a run directory, say).
void CheckSessionDevice(const std::string& device);

class Session {
 public:
  explicit Session(std::shared_ptr<Graph> graph, SessionOptions options = {});
  explicit Session(const Scope& scope, SessionOptions options = {});
  ~Session();

  // Returns one tensor per fetch. `targets` are nodes to run for their
  // effect (an Assign, an init group). Throws an Error naming the node on
  // any failure; the session stays usable afterwards.
  std::vector<Tensor> Run(const FeedList& feeds, const std::vector<TensorName>& fetches,
                          const std::vector<TensorName>& targets = {},
                          const RunOptions& options = {}, RunMetadata* metadata = nullptr);
  std::vector<Tensor> Run(const std::vector<TensorName>& fetches) { return Run({}, fetches); }

  const Graph& graph() const { return *graph_; }
  // Where the partitions run: the devices placement may use.
  const Cluster& cluster() const { return *cluster_; }
  // The variables of a session in this process (a cluster's live on its tasks).
  ResourceStore& resources() { return resources_; }
  // Executables built so far (one per distinct signature).
  size_t num_cached_executors() const;

 private:
  struct Executable;
  std::shared_ptr<Executable> GetExecutable(const FeedList& feeds,
                                            const std::vector<TensorName>& fetches,
                                            const std::vector<TensorName>& targets);
  std::shared_ptr<Executable> Build(const FeedList& feeds, const std::vector<TensorName>& fetches,
                                    const std::vector<TensorName>& targets);
  void CheckRequestedDevices(const Graph& graph) const;
  void CheckKernels(const Graph& graph) const;
  void PinPlacedVariables(Graph& graph) const;
  void RememberPlacedVariables(const Graph& graph, const Placement& placement);

  std::shared_ptr<Graph> graph_;
  SessionOptions options_;
  ResourceStore resources_;
  std::unique_ptr<Cluster> cluster_;  // after resources_: its executors use them
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Executable>> cache_;
  // Where each variable went when a run first placed it, by node name (under
  // mu_): placement is per run signature, and a variable without a full
  // device request must stay where its value is.
  std::map<std::string, std::string> variable_devices_;
};

}  // namespace dflow
