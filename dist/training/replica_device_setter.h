// Between-graph replication's device setter (TensorFlow's
// tf.train.replica_device_setter), as a pass over a built graph: every
// variable, with the ops that must live with it (its colocation group:
// initialiser Assign, optimizer Apply ops and slots), goes to one parameter
// server task, spread round-robin or by size; every other node goes to this
// replica's worker task. A device a node already requests keeps the fields it
// names; the setter only fills in the rest (a "/device:GPU:0" request on
// worker 1 becomes "/job:worker/task:1/device:GPU:0").
//
//   Scope s = ...build the model and optimizer...;
//   dist::AssignReplicaDevices(s.graph(),
//                              {.num_ps_tasks = 2, .worker_device = "/job:worker/task:1"});
#pragma once

#include <map>
#include <string>

#include "graph/graph.h"

namespace dflow::dist {

enum class PsStrategy {
  kRoundRobin,    // variable groups in creation order to ps task 0, 1, ..., 0, 1, ...
  kSizeBalanced,  // each group to the task holding the fewest bytes so far
};

struct ReplicaDeviceOptions {
  int num_ps_tasks = 1;  // 0: everything stays on the worker
  std::string ps_job = "ps";
  std::string worker_device = "/job:worker";  // this replica's task
  PsStrategy strategy = PsStrategy::kRoundRobin;
};

// Sets every node's requested device as above; returns each variable's name
// with the parameter server device it was given.
std::map<std::string, std::string> AssignReplicaDevices(Graph& graph,
                                                        const ReplicaDeviceOptions& options);

}  // namespace dflow::dist
