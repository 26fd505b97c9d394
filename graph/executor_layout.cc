// The executor's construction: one item per node in topological order, one
// slot per node output, the readers of each slot and the roots a step starts
// from (graph/executor.h).
#include <algorithm>

#include "graph/executor_item.h"
#include "graph/memory_types.h"

namespace dflow {

namespace {

// Bit o set: output o lives in host memory (graph/memory_types.h). Outputs
// past the 64th stay in device memory.
uint64_t HostOutputs(const std::vector<MemoryType>& outputs) {
  uint64_t bits = 0;
  for (size_t o = 0; o < outputs.size() && o < 64; ++o)
    if (outputs[o] == MemoryType::kHost) bits |= uint64_t{1} << o;
  return bits;
}

}  // namespace

Executor::Executor(std::shared_ptr<Graph> graph, Device* device, ResourceStore* resources)
    : graph_(std::move(graph)), device_(device), resources_(resources) {
  std::vector<Node*> order = graph_->TopologicalOrder();
  std::vector<int> item_of(graph_->id_bound(), -1);
  items_.resize(order.size());
  // On a device with memory of its own: where each node's inputs are read.
  const bool device_memory = HasDeviceMemory(device_->type());
  std::vector<std::vector<MemoryType>> input_memory(device_memory ? order.size() : 0);
  for (size_t i = 0; i < order.size(); ++i) {
    Item& item = items_[i];
    item.node = order[i];
    item_of[order[i]->id()] = static_cast<int>(i);
    item.first_output_slot = num_slots_;
    num_slots_ += order[i]->num_outputs();
    item.kernel = KernelRegistry::Global().Create(*order[i], device_->type());
    if (device_memory) {
      NodeMemoryTypes types = MemoryTypesOf(*order[i], device_->type());
      item.host_outputs = HostOutputs(types.outputs);
      input_memory[i] = std::move(types.inputs);
    }
    if (order[i]->op() == "_Arg") {
      ++num_args_;
      arg_bound_ = std::max(arg_bound_, order[i]->attr<int64_t>("index") + 1);
    }
    if (order[i]->op() == "_Retval") {
      ++num_retvals_;
      item.retval_index = order[i]->attr<int64_t>("index");
      retval_bound_ = std::max(retval_bound_, item.retval_index + 1);
    }
  }
  slot_readers_.assign(num_slots_, 0);
  for (Item& item : items_) {
    const Node& node = *item.node;
    for (int i = 0; i < node.num_inputs(); ++i) {
      const NodeOut& in = node.input(i);
      const Item& source = items_[item_of[in.node->id()]];
      int slot = source.first_output_slot + in.index;
      item.input_slots.push_back(slot);
      item.input_is_ref.push_back(node.IsRefInput(i));
      // A ref input names the variable and does not read the value the
      // variable node output, so it does not keep that value alive: an
      // in-place update (Assign, ApplyAdam) then finds the buffer unshared
      // and skips the copy-on-write.
      if (!item.input_is_ref.back()) ++slot_readers_[slot];
    }
    for (int slot : item.input_slots)
      item.input_slot_unique.push_back(
          std::count(item.input_slots.begin(), item.input_slots.end(), slot) == 1);
    item.num_in_edges = node.num_inputs() + static_cast<int>(node.control_inputs().size());
    int self = static_cast<int>(&item - items_.data());
    for (const NodeOut& in : node.inputs()) items_[item_of[in.node->id()]].out_edges.push_back(self);
    for (Node* control : node.control_inputs()) items_[item_of[control->id()]].out_edges.push_back(self);
    const bool synchronous_const = node.op() == "Const" && !item.kernel->AsAsync();
    if (item.num_in_edges == 0) (synchronous_const ? const_roots_ : roots_).push_back(self);
  }
  if (device_memory) CheckInputMemory(item_of, input_memory);
}

// On a device with memory of its own, every input must arrive in the memory
// its kernel reads it from (graph/memory_types.h). Partitioning moves values
// there, so a mismatch means the graph was partitioned without this device
// type's host-memory declarations (by a client without the GPU module): the
// kernel would be handed a host pointer as device memory, or the reverse.
void Executor::CheckInputMemory(const std::vector<int>& item_of,
                                const std::vector<std::vector<MemoryType>>& input_memory) const {
  for (size_t index = 0; index < items_.size(); ++index) {
    const Item& item = items_[index];
    const Node& node = *item.node;
    if (node.op() == "_Send") continue;  // sends from either memory
    const std::vector<MemoryType>& inputs = input_memory[index];
    for (int i = 0; i < node.num_inputs(); ++i) {
      if (item.input_is_ref[i]) continue;  // the variable itself, where it lives
      const NodeOut& in = node.input(i);
      const uint64_t source_host = items_[item_of[in.node->id()]].host_outputs;
      const bool host = in.index < 64 && (source_host >> in.index & 1);
      if (host == (inputs[i] == MemoryType::kHost)) continue;
      const char* have = host ? "host" : "device";
      const char* want = host ? "device" : "host";
      Fail(Code::kInternal, node.Describe(), " on ", device_->name(), ": input ", i, " comes from ",
           in.node->Describe(), " in ", have, " memory but its kernel reads it from ", want,
           " memory (was the graph partitioned without this device type's host-memory declarations?)");
    }
  }
}

}  // namespace dflow
