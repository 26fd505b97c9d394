// Placement: which device runs each node, and why.
//
// The policy, in order (each step only narrows what the one before allowed):
//  1. Kernels: a node may only go to a device whose type has a kernel for its
//     op and dtype.
//  2. Requests: a node's requested device, full ("/job:ps/replica:0/task:0/
//     device:CPU:0") or partial ("/job:ps", "/device:GPU:0"), must match.
//  3. Colocation: a variable and every op that takes its ref input form one
//     group (graph/colocation.h) that goes to one device, which must satisfy
//     every member's kernel and request.
//  4. The cost model (graph/cost_model.h) picks among the devices that remain,
//     by greedy list scheduling in topological order: each node (or group, at
//     its first member) goes where it would finish earliest, counting the
//     time its inputs take to arrive and the time the device is busy with
//     nodes placed before it (the earliest-finish-time heuristic, HEFT
//     without the ranking). Nodes without inputs (Const, Placeholder) are
//     placed with their first consumer: they are cheap to make anywhere and
//     costly to ship.
// Soft placement (off by default) relaxes a request that no device with a
// kernel satisfies: first to the request's job/replica/task, then to any
// device. It never overrides two conflicting requests in one group.
// Fallback devices (a GPU session's host CPU under soft placement) take only
// the nodes no other device can run, and those that request them.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "graph/cost_model.h"
#include "graph/graph.h"

namespace dflow {

struct PlacementOptions {
  bool allow_soft_placement = false;
  // Devices of the list used only where no other one can be.
  std::vector<std::string> fallback_devices{};
  CostModelOptions cost;
};

struct NodePlacement {
  std::string device;
  std::string reason;         // "requested '/job:ps'; ...", "cost model: ..."
  double finish_seconds = 0;  // estimated, from the step's start
};

struct Placement {
  std::vector<std::string> devices;            // the devices that were offered
  std::map<std::string, NodePlacement> nodes;  // by node name
  double estimated_step_seconds = 0;

  // The device of a node; throws kNotFound naming it when it was not placed.
  const std::string& DeviceOf(const std::string& node) const;
};

// Places every node of `graph` on one of `devices` (full device names, e.g.
// from ClusterSpec::DeviceNames(), or "/device:CPU:0"-style names for one
// process). Throws an Error naming the op, the requested device, the devices
// with a kernel and the colocation group when no device fits.
Placement Place(const Graph& graph, const std::vector<std::string>& devices,
                const PlacementOptions& options = {});

// Sets each node's assigned device from the placement.
void AssignDevices(Graph& graph, const Placement& placement);

// {"devices": [...], "estimated_step_seconds": s, "nodes": [{"name", "op",
// "requested", "device", "reason"}...]} with nodes in graph order.
nlohmann::ordered_json PlacementToJson(const Graph& graph, const Placement& placement);
// One line per node: "name (Op) -> device: reason".
std::string PlacementToText(const Graph& graph, const Placement& placement);

// Parses and checks a device list: each name needs a type and an index, and
// no name may repeat. Errors name the bad entry.
std::vector<DeviceName> ParseDeviceList(const std::vector<std::string>& devices);

}  // namespace dflow
