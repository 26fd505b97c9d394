// What a worker task does for its clients and peers (`dflow server`): it
// keeps partition graphs registered by clients (graphs only: no code travels,
// and only registered ops run), runs steps of them on its devices with one
// ZmqRendezvous per step, serves its peers' RecvTensor requests, aborts and
// forgets steps, and keeps its variables between steps (one ResourceStore
// for the task, as TensorFlow's workers do).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dist/cluster.h"
#include "dist/zmq_rendezvous.h"
#include "dist/zmq_server.h"
#include "graph/executor.h"
#include "graph/resource.h"
#include "graph/thread_pool.h"

namespace dflow::dist {

class WorkerService {
 public:
  // `task` must be a task of `cluster`; its CPU devices are this worker's.
  WorkerService(ClusterSpec cluster, TaskId task, int num_threads = 0);
  // Aborts the steps still running and waits for them.
  ~WorkerService();

  // The MessageServer handler: every request but heartbeats comes here.
  void Handle(Message request, MessageServer::Respond respond);

  const std::string& task_prefix() const { return task_prefix_; }
  int64_t incarnation() const { return incarnation_; }
  const std::vector<std::string>& device_names() const { return device_names_; }
  // The task's variables and resources, shared by every client's graphs.
  ResourceStore& resources() { return resources_; }

 private:
  struct StepRun;
  Message GetStatus() const;
  Message RegisterGraph(const Message& request);
  void RegisterGraphOffIoThread(Message request, MessageServer::Respond respond);
  Message DeregisterGraph(const Message& request);
  void RunStep(const Message& request, MessageServer::Respond respond);
  void RecvTensor(const Message& request, MessageServer::Respond respond);
  Message AbortStep(const Message& request);
  Message CleanupStep(const Message& request);
  void FinishStep(StepRun& run);
  std::shared_ptr<ZmqRendezvous> StepRendezvous(int64_t step_id);
  Channel& PeerChannel(const std::string& task_prefix);
  Device& DeviceNamed(const std::string& name) const;

  ClusterSpec cluster_;
  std::string task_prefix_;
  int64_t incarnation_;
  std::vector<std::string> device_names_;
  std::vector<std::unique_ptr<ThreadPool>> pools_;
  std::vector<std::unique_ptr<Device>> devices_;
  ResourceStore resources_;

  std::mutex mu_;
  std::map<int64_t, std::shared_ptr<Executor>> graphs_;  // by handle
  int64_t next_handle_ = 1;
  std::map<int64_t, std::shared_ptr<ZmqRendezvous>> steps_;  // by step id
  std::map<std::string, std::unique_ptr<Channel>> peers_;    // by task prefix
  int running_steps_ = 0;  // steps and graph registrations under way
  std::condition_variable steps_done_;
};

}  // namespace dflow::dist
