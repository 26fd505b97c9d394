#include "dist/training/replica_device_setter.h"

#include <algorithm>

#include "graph/colocation.h"
#include "graph/device.h"

namespace dflow::dist {
namespace {

// Fields the request names win; the others come from `fallback`.
std::string MergeDevice(const std::string& request, const DeviceName& fallback) {
  DeviceName merged = DeviceName::Parse(request);
  if (merged.job.empty()) merged.job = fallback.job;
  if (!merged.replica) merged.replica = fallback.replica;
  if (!merged.task) merged.task = fallback.task;
  if (merged.type.empty()) merged.type = fallback.type;
  if (!merged.index && merged.type == fallback.type) merged.index = fallback.index;
  // A type without an index means any device of that type: "/device:GPU",
  // not DeviceName's "/device:GPU:*", which does not parse back.
  std::string text = merged.ToString();
  if (text.ends_with(":*")) text.resize(text.size() - 2);
  return text;
}

// The ops that hold state on a parameter server (TensorFlow's ps_ops).
bool IsVariable(const Node& node) { return node.op() == "VariableV2"; }

int64_t VariableBytes(const Node& node) {
  const Shape& shape = node.output_shape(0);
  int64_t elements = shape.IsFullyDefined() ? shape.NumElements() : 1;
  return elements * static_cast<int64_t>(DTypeSize(node.output_dtype(0)));
}

// Chooses the parameter server task of each variable group in turn.
class PsTaskChooser {
 public:
  PsTaskChooser(int num_tasks, PsStrategy strategy)
      : strategy_(strategy), bytes_(static_cast<size_t>(num_tasks), 0) {}
  int Next(int64_t group_bytes) {
    auto least_loaded = std::min_element(bytes_.begin(), bytes_.end());
    int task = strategy_ == PsStrategy::kRoundRobin
                   ? static_cast<int>(count_++ % static_cast<int64_t>(bytes_.size()))
                   : static_cast<int>(least_loaded - bytes_.begin());
    bytes_[task] += group_bytes;
    return task;
  }

 private:
  PsStrategy strategy_;
  std::vector<int64_t> bytes_;
  int64_t count_ = 0;
};

}  // namespace

std::map<std::string, std::string> AssignReplicaDevices(Graph& graph,
                                                        const ReplicaDeviceOptions& options) {
  DFLOW_REQUIRE(options.num_ps_tasks >= 0, "AssignReplicaDevices: num_ps_tasks must be >= 0, got ",
                options.num_ps_tasks);
  DFLOW_REQUIRE(!options.ps_job.empty(), "AssignReplicaDevices: ps_job is empty");
  DeviceName worker = DeviceName::Parse(options.worker_device);
  ColocationGroups groups(graph);
  PsTaskChooser chooser(std::max(options.num_ps_tasks, 1), options.strategy);
  std::map<int, DeviceName> ps_of_group;  // decided at the group's first variable
  std::map<std::string, std::string> placed;
  for (Node* node : graph.nodes()) {
    int group = groups.GroupOf(*node);
    if (IsVariable(*node) && options.num_ps_tasks > 0 && !ps_of_group.count(group)) {
      int64_t bytes = 0;
      for (Node* member : groups.Members(group))
        if (IsVariable(*member)) bytes += VariableBytes(*member);
      DeviceName ps;
      ps.job = options.ps_job;
      ps.task = chooser.Next(bytes);
      ps_of_group[group] = ps;
    }
  }
  for (Node* node : graph.nodes()) {
    auto ps = ps_of_group.find(groups.GroupOf(*node));
    node->set_requested_device(
        MergeDevice(node->requested_device(), ps == ps_of_group.end() ? worker : ps->second));
    if (IsVariable(*node) && ps != ps_of_group.end())
      placed[node->name()] = node->requested_device();
  }
  return placed;
}

}  // namespace dflow::dist
