// What a worker task does for its clients and peers (`dflow server`): it
// keeps partition graphs registered by clients (graphs only: no code travels,
// and only registered ops run), runs steps of them on its devices with one
// ZmqRendezvous per step through the one step runner (graph/step_runner.h)
// that every session uses, takes in the tensors its peers push to it, aborts
// and forgets steps, and keeps its variables between steps (one ResourceStore
// for the task, as TensorFlow's workers do). A step whose client vanished
// is aborted and forgotten after the step timeout (see WatchClients).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dist/cluster.h"
#include "dist/runtime/zmq_rendezvous.h"
#include "dist/transport/zmq_server.h"
#include "graph/local_cluster.h"
#include "graph/resource.h"

namespace dflow::dist {

inline constexpr int64_t kDefaultStepTimeoutMs = 30000;

class WorkerService {
 public:
  // `task` must be a task of `cluster`; its CPU device and its GPUs
  // (the cluster's gpus_per_task) are this worker's.
  // `step_timeout_ms` bounds how long a step outlives its client (0: forever).
  WorkerService(ClusterSpec cluster, TaskId task, int num_threads = 0,
                int64_t step_timeout_ms = kDefaultStepTimeoutMs);
  // Aborts the steps still running and waits for them.
  ~WorkerService();

  // The MessageServer handler: every request but heartbeats comes here.
  // `client` names the connection (MessageServer::SenderHandler's sender).
  void Handle(Message request, MessageServer::Respond respond, const std::string& client = {});

  // Step timeout. A client's channel sends a heartbeat every second, so a
  // live client is never silent for long, however long its step runs. Once
  // a step's client (the connection that sent its RunStep) has been silent
  // for the step timeout, by `liveness` (the server's), the step is aborted
  // (its Recvs fail) and forgotten. A step known only from tensors its peers
  // pushed is aborted when its RunStep has not come within the timeout (its
  // client died before sending it). Without WatchClients only the second
  // rule applies.
  void WatchClients(std::shared_ptr<const ConnectionLiveness> liveness);
  // Steps whose state this worker keeps (running, or finished and not yet cleaned up).
  size_t num_steps() const;

  const std::string& task_prefix() const { return task_prefix_; }
  int64_t incarnation() const { return incarnation_; }
  const std::vector<std::string>& device_names() const { return devices_.devices(); }
  // The task's variables and resources, shared by every client's graphs.
  ResourceStore& resources() { return resources_; }

 private:
  struct StepRun;
  using Clock = std::chrono::steady_clock;
  // What this task keeps for one step, by step id.
  struct StepState {
    std::shared_ptr<ZmqRendezvous> rendezvous;
    bool run_came = false;  // RunStep came (else only peers pushed tensors for it)
    std::string client;     // the connection that sent RunStep, if the handler was told
    Clock::time_point created;
  };
  Message GetStatus() const;
  Message RegisterGraph(const Message& request);
  void RegisterGraphOffIoThread(Message request, MessageServer::Respond respond);
  Message DeregisterGraph(const Message& request);
  void RunStep(const Message& request, MessageServer::Respond respond, const std::string& client);
  void TensorFromPeer(Message& request);
  Message AbortStep(const Message& request);
  Message CleanupStep(const Message& request);
  void FinishStep(StepRun& run, std::optional<Error> error);
  // The step's rendezvous, made on first use; `client` given: its RunStep came from it.
  std::shared_ptr<ZmqRendezvous> StepRendezvous(int64_t step_id, const std::string* client = nullptr);
  std::shared_ptr<ZmqRendezvous> StepRendezvousLocked(int64_t step_id, const std::string* client);  // under mu_
  // Remembers that a step was forgotten (under mu_), so late tensors do not bring it back.
  void Forget(int64_t step_id);
  void ReapLoop();
  std::optional<std::string> WhyReap(int64_t step_id, const StepState& step, Clock::time_point now) const;
  void ReapAbandonedSteps();
  Channel& PeerChannel(const std::string& task_prefix);

  ClusterSpec cluster_;
  std::string task_prefix_;
  int64_t incarnation_;
  ResourceStore resources_;
  LocalCluster devices_;  // this task's devices; its partitions run there

  const int64_t step_timeout_ms_;
  mutable std::mutex mu_;
  // A registered partition: its graph (feeds are checked against it) and runner.
  struct RegisteredGraph {
    std::shared_ptr<const Graph> graph;
    std::shared_ptr<PartitionRunner> runner;
  };
  std::map<int64_t, RegisteredGraph> graphs_;  // by handle
  int64_t next_handle_ = 1;
  // Declared before steps_, so the channels outlive the rendezvous that use them.
  std::map<std::string, std::unique_ptr<Channel>> peers_;  // by task prefix
  std::map<int64_t, StepState> steps_;  // by step id
  std::set<int64_t> forgotten_;         // the last kRememberForgotten steps forgotten,
  std::deque<int64_t> forgotten_order_;  // oldest first
  std::shared_ptr<const ConnectionLiveness> clients_;
  int running_steps_ = 0;  // steps and graph registrations under way
  std::condition_variable steps_done_;
  bool stopping_ = false;                // tells the reaper to end
  std::condition_variable reaper_wake_;
  std::thread reaper_;                   // runs ReapLoop while step_timeout_ms_ > 0
};

}  // namespace dflow::dist
