// The client half of a distributed session: what a Session with target
// "zmq://host:port" runs on. It asks that worker for the cluster, asks every
// task for its devices and incarnation, places and partitions the graph over
// all of them, registers each partition on its task, and runs steps: feeds go
// to the tasks whose partitions read them, fetches come back, and the first
// error of any task (with its origin: task and node) aborts the step on all.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dist/cluster.h"
#include "dist/zmq_channel.h"
#include "graph/session.h"

namespace dflow::dist {

class RemoteSession final : public RemoteSessionRunner {
 public:
  RemoteSession(std::shared_ptr<Graph> graph, const SessionOptions& options);
  // Deregisters its graphs without waiting for the replies (a dead task
  // must not hold the close up).
  ~RemoteSession() override;

  std::vector<Tensor> Run(const FeedList& feeds, const std::vector<TensorName>& fetches,
                          const std::vector<TensorName>& targets, const RunOptions& options,
                          RunMetadata* metadata) override;

  // Every device of the cluster, as placement saw it.
  const std::vector<std::string>& devices() const { return devices_; }

 private:
  struct Task {
    std::string prefix;
    std::unique_ptr<Channel> channel;
    int64_t incarnation = 0;
    std::vector<int64_t> handles;  // every graph registered there
  };
  // One task's share of an executable: its graphs and the feeds they read.
  struct TaskPart {
    size_t task = 0;
    std::vector<int64_t> graphs;
    std::vector<size_t> args;
  };
  struct Executable {
    std::vector<TaskPart> parts;
    RunSignature signature;
  };
  struct StepCalls;

  void Connect(const std::string& target);
  std::shared_ptr<Executable> GetExecutable(const FeedList& feeds, const std::vector<TensorName>& fetches,
                                            const std::vector<TensorName>& targets);
  std::shared_ptr<Executable> Build(const FeedList& feeds, const std::vector<TensorName>& fetches,
                                    const std::vector<TensorName>& targets);
  int64_t RegisterPartition(Task& task, const std::string& device, const Graph& graph);
  size_t TaskIndexOfDevice(const std::string& device) const;
  // `trace`: when given, every task's node stats are appended to it.
  void RunStep(const Executable& executable, const std::vector<Tensor>& args,
               std::vector<Tensor>& retvals, RunMetadata* trace);
  void AbortStep(const Executable& executable, int64_t step_id, const Error& error);

  std::shared_ptr<Graph> graph_;
  SessionOptions options_;
  std::vector<Task> tasks_;
  std::vector<std::string> devices_;
  std::unique_ptr<ThreadPool> pass_pool_;  // constant folding runs here, on the client
  std::unique_ptr<Device> pass_device_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Executable>> cache_;
};

}  // namespace dflow::dist
