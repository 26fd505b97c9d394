// Partitioning: cuts a placed graph into one subgraph per device. Every data
// edge between devices becomes a _Send on the producer's device and a _Recv on
// the consumer's; every control edge between devices becomes a tiny dummy
// tensor (an empty Const made after the control source) sent the same way,
// with the consumer's control edge now coming from its _Recv.
//
// A pair's attrs hold the rendezvous key minus the step id (known only at run
// time): send_device, send_device_incarnation, recv_device, tensor_name
// ("node:index" for data, "^node" for a control edge). One _Send/_Recv pair
// serves every consumer of a tensor on one destination device.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "graph/placement.h"
#include "graph/graph.h"

namespace dflow {

struct PartitionOptions {
  // Each device's incarnation: a number its process draws when it starts, so
  // a restarted process never takes a tensor meant for its predecessor.
  // Devices not listed get 1.
  std::map<std::string, int64_t> incarnations;
};

struct DevicePartition {
  std::string device;
  std::shared_ptr<Graph> graph;  // nodes keep their names; requested = assigned = device
};

// One partition per device that got at least one node, in the placement's
// device order. Throws naming the node when it has no device in `placement`.
std::vector<DevicePartition> Partition(const Graph& graph, const Placement& placement,
                                       const PartitionOptions& options = {});
// The same for a graph the caller gives up. When every node is on one device
// no edge is cut and the graph itself becomes the one partition: a copy would
// cost time to build and, measured, ~5% per node to run (its nodes lie
// scattered in memory).
std::vector<DevicePartition> Partition(std::unique_ptr<Graph> graph, const Placement& placement,
                                       const PartitionOptions& options = {});

// {"partitions": [{"device": ..., "graph": <graph JSON>}...]}
nlohmann::ordered_json PartitionsToJson(const std::vector<DevicePartition>& partitions);
// One Graphviz cluster per device; each _Send joined to its _Recv by a bold
// red edge labelled with the tensor name.
std::string PartitionsToDot(const std::vector<DevicePartition>& partitions);
// "worker.1.CPU.0" for "/job:worker/replica:0/task:1/device:CPU:0": a device
// as a node-name and file-name fragment.
std::string DeviceFileName(const std::string& device);

}  // namespace dflow
