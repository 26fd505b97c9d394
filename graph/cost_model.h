// The placer's cost model: how long an op takes on a device and how long a
// tensor takes to cross a link. Estimates, not measurements: good enough to
// tell "this MatMul is worth shipping its input for" from "it is not".
//
//   compute(node, device) = overhead + flops(node) / flops_per_second(device type)
//   transfer(bytes, a, b) = 0                                   when a == b
//                         = same_task.latency  + bytes / same_task.bandwidth
//                         = cross_task.latency + bytes / cross_task.bandwidth
//
// flops(node) comes from static shapes: 2·m·n·k for MatMul (times the batch
// for BatchMatMul), 2·|output|·kh·kw·cin for Conv2D, and one flop per input
// and output element for every other op. A tensor whose shape is not fully
// known counts as `unknown_elements` elements.
//
// A measured profile (graph/profile.h: a traced step's time per node) takes
// the place of the estimate for the nodes it has, on devices of the type it
// was measured on: compute(node, device) = measured seconds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "graph/device.h"
#include "graph/graph.h"

namespace dflow {

struct LinkCost {
  double latency_seconds;
  double bytes_per_second;
};

// A node's compute time measured on a device of type `device_type` ("CPU").
struct MeasuredTime {
  double seconds = 0;
  std::string device_type;
};

struct CostModelOptions {
  double cpu_flops_per_second = 2e10;
  double gpu_flops_per_second = 2e12;
  double op_overhead_seconds = 2e-6;  // dispatching one kernel
  LinkCost same_task{5e-6, 1e10};     // two devices of one process: a memcpy
  LinkCost cross_task{1e-4, 1e9};     // two processes: a socket (~10 GbE)
  int64_t unknown_elements = 1024;
  // Measured compute times by node name (graph/profile.h); empty: estimates only.
  std::map<std::string, MeasuredTime> measured;
};

class CostModel {
 public:
  explicit CostModel(CostModelOptions options = {}) : options_(options) {}

  double Flops(const Node& node) const;
  double ComputeSeconds(const Node& node, const DeviceName& device) const;
  // The measured time ComputeSeconds uses for this node on this device, if any.
  std::optional<double> MeasuredSeconds(const Node& node, const DeviceName& device) const;
  int64_t OutputBytes(const Node& node, int output) const;
  double TransferSeconds(int64_t bytes, const DeviceName& from, const DeviceName& to) const;
  const CostModelOptions& options() const { return options_; }

 private:
  double Elements(const Shape& shape) const;
  CostModelOptions options_;
};

// Same job, replica and task: one process.
bool SameTask(const DeviceName& a, const DeviceName& b);

}  // namespace dflow
