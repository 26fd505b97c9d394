// The tasks of a ZeroMQ cluster as a Cluster: what a Session with target
// "zmq://host:port" places on and runs through. It asks that worker for the
// cluster, asks every task for its devices and incarnation, registers each
// partition on the task of its device once, and runs it there per step: feeds
// go to the tasks whose partitions read them, fetches come back, and the
// step's first error (with its origin: task and node) aborts it on every task
// the step runs on (ClientRendezvous below).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dist/transport/zmq_channel.h"
#include "graph/cluster.h"
#include "graph/session.h"

namespace dflow::dist {

class ZmqCluster final : public Cluster {
 public:
  // Connects to every task of the cluster at options.target that passes
  // options.device_filters; a task that does not answer fails it here.
  explicit ZmqCluster(const SessionOptions& options);
  // Deregisters its graphs without waiting for the replies (a dead task
  // must not hold the close up).
  ~ZmqCluster() override;

  const std::vector<std::string>& devices() const override { return devices_; }
  int64_t Incarnation(const std::string& device) const override;
  Device& pass_device() override { return *pass_device_; }
  std::unique_ptr<PartitionRunner> Load(const std::string& device, std::shared_ptr<Graph> graph) override;
  ClusterStep NewStep(const std::vector<std::string>& partition_devices) override;

  struct Task {
    std::string prefix;  // "/job:worker/replica:0/task:1"
    std::unique_ptr<Channel> channel;
    int64_t incarnation = 0;
    std::vector<int64_t> handles;  // every graph registered there
    // The task's steady clock minus this process's, and how far off that may
    // be (MeasureClock), so its traces join the client's timeline.
    int64_t clock_offset_ns = 0;
    int64_t clock_error_ns = 0;
  };
  // Every task the session reaches, in cluster order.
  const std::vector<Task>& tasks() const { return tasks_; }

 private:
  void Connect(const std::string& target, const std::vector<std::string>& device_filters);
  static void MeasureClock(Task& task);
  size_t TaskIndexOf(const std::string& device) const;  // in tasks_

  std::vector<Task> tasks_;
  std::vector<std::string> devices_;
  std::unique_ptr<ThreadPool> pass_pool_;  // constant folding runs here, on the client
  std::unique_ptr<Device> pass_device_;
};

}  // namespace dflow::dist
