// Session: runs a graph. Run(feeds, fetches, targets) prunes the graph to
// what the fetches and targets need, rewrites feeds and fetches into _Arg and
// _Retval nodes, runs the graph passes, places every node on a device, and
// builds an Executor; the result is cached per signature, so later calls with
// the same feeds/fetches/targets go straight to the executor. Variables keep
// their values across Run calls. Run may be called from several threads.
//
// With several devices the graph is placed and cut into one partition per
// device by the partitioner dist/ registers (dist::Place, dist::Partition);
// each step runs every partition's Executor at once with a fresh step id and
// one rendezvous, and the first error in any partition aborts the step in all
// of them and is what Run throws. One device is the one-partition case.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "graph/executor.h"
#include "graph/passes.h"
#include "graph/rendezvous.h"
#include "graph/run_signature.h"
#include "graph/scope.h"

namespace dflow {

struct SessionOptions {
  int num_threads = 0;  // worker threads per device; 0 = one per hardware thread
  PassOptions passes;
  // A node that asks for a device this session lacks runs on the CPU instead
  // of failing (TensorFlow's allow_soft_placement).
  bool allow_soft_placement = false;
  // CPU devices by full name ("/job:localhost/replica:0/task:0/device:CPU:1"),
  // each with its own thread pool. Empty: one "/device:CPU:0".
  std::vector<std::string> devices;
  // The device the whole graph runs on: "" or "/device:CPU:0" (the host),
  // "/device:GPU:N" (feeds are copied to the GPU and fetches back). A GPU
  // that is not visible, or an op without a kernel there, is an error.
  std::string device;
  // "zmq://host:port": the graph runs on the cluster of the worker listening
  // there (see RemoteSessionRunner below); empty: in this process.
  std::string target;
  // With a target: only the cluster's tasks that one of these requests
  // matches ("/job:ps", "/job:worker/task:1") are contacted and run the
  // graph (TensorFlow's ConfigProto.device_filters), so a replica's session
  // never waits for the other replicas. Empty: every task.
  std::vector<std::string> device_filters;
};

// How a Session with several devices cuts a graph and joins the pieces at run
// time. dist/ registers the real one (graph/ may not use dist/):
// `partition` assigns every node a device and returns one graph per device
// used, `new_rendezvous` makes the rendezvous of one step.
struct SessionPartitioner {
  using Partitions = std::vector<std::pair<std::string, std::shared_ptr<Graph>>>;
  std::function<Partitions(const Graph& graph, const std::vector<std::string>& devices,
                           bool allow_soft_placement)>
      partition;
  std::function<std::unique_ptr<Rendezvous>()> new_rendezvous;
};
void RegisterSessionPartitioner(SessionPartitioner partitioner);


// --- remote sessions (issue 7)
// A Session with a target hands every Run to a runner that dist/ registers
// (dist/remote_session.cc: it places, partitions and runs the graph on the
// cluster's worker tasks); graph/ may not use dist/.
class RemoteSessionRunner {
 public:
  virtual ~RemoteSessionRunner() = default;
  virtual std::vector<Tensor> Run(const FeedList& feeds, const std::vector<TensorName>& fetches,
                                  const std::vector<TensorName>& targets, const RunOptions& options,
                                  RunMetadata* metadata) = 0;
};
using RemoteSessionFactory = std::function<std::unique_ptr<RemoteSessionRunner>(
    std::shared_ptr<Graph> graph, const SessionOptions& options)>;
void RegisterRemoteSessionFactory(RemoteSessionFactory factory);
// --- end remote sessions

// Throws what a Session with this SessionOptions.device would: kInvalidArgument
// for a device type this build lacks, kUnavailable (with the reason) for a
// GPU that is not visible. For programs that check before they write
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
  Device& device() const { return *devices_.front(); }  // the first device
  const std::vector<std::unique_ptr<Device>>& devices() const { return devices_; }
  ResourceStore& resources() { return resources_; }
  // Executors built so far (one per distinct signature).
  size_t num_cached_executors() const;

 private:
  struct Executable;
  std::shared_ptr<Executable> GetExecutable(const FeedList& feeds,
                                            const std::vector<TensorName>& fetches,
                                            const std::vector<TensorName>& targets);
  std::shared_ptr<Executable> Build(const FeedList& feeds, const std::vector<TensorName>& fetches,
                                    const std::vector<TensorName>& targets);
  void StartRemote();
  void Place(Graph& graph) const;
  void AddExecutors(std::unique_ptr<Graph> graph, Executable& executable);
  void RunPartitions(const Executable& executable, const std::vector<Tensor>& args,
                     std::vector<Tensor>& retvals, const RunOptions& options,
                     RunMetadata* metadata) const;
  void RequireKernels(const Graph& graph, const Device& device) const;

  std::shared_ptr<Graph> graph_;
  SessionOptions options_;
  std::vector<std::unique_ptr<ThreadPool>> pools_;  // one per device
  std::vector<std::unique_ptr<Device>> devices_;
  ResourceStore resources_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Executable>> cache_;
  std::unique_ptr<RemoteSessionRunner> remote_;  // set when options.target is
};

}  // namespace dflow
