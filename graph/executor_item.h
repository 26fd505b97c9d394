// The executor's per-node record, shared by its construction
// (graph/executor_layout.cc) and its steps (graph/executor.cc). Internal:
// not installed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/executor.h"

namespace dflow {

struct Executor::Item {
  const Node* node = nullptr;
  std::unique_ptr<OpKernel> kernel;
  std::vector<int> input_slots;
  std::vector<bool> input_slot_unique;  // the slot feeds this node only once
  std::vector<bool> input_is_ref;       // a ref input: the variable, not its value
  int first_output_slot = 0;
  std::vector<int> out_edges;           // consumer item per outgoing edge
  int num_in_edges = 0;
  int64_t retval_index = -1;            // a _Retval: the fetch it hands back
  uint64_t host_outputs = 0;            // bit o: output o lives in host memory (graph/memory_types.h)
};

}  // namespace dflow
