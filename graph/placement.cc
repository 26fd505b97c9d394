// Place(): the constraints (graph/placement_constraints.h) per colocation
// group, then earliest-finish-time list scheduling over what they leave.
#include "graph/placement.h"

#include <algorithm>
#include <set>

#include "graph/colocation.h"
#include "graph/placement_constraints.h"

namespace dflow {
namespace {

// The list scheduler's state: where each node went and when it finishes, and
// when each device is next free.
class Scheduler {
 public:
  Scheduler(const Graph& graph, const std::vector<DeviceName>& devices, const CostModel& cost)
      : devices_(devices),
        cost_(cost),
        device_of_(graph.id_bound(), -1),
        finish_(graph.id_bound(), 0),
        free_at_(devices.size(), 0) {}

  bool placed(const Node& node) const { return device_of_[node.id()] >= 0; }
  int device_of(const Node& node) const { return device_of_[node.id()]; }
  double finish(const Node& node) const { return finish_[node.id()]; }

  // When `node` would finish on device d. Inputs still waiting to be placed
  // (deferred sources) will go to d with it, so they cost no transfer.
  double FinishOn(const Node& node, int d) const {
    double ready = 0;
    for (int i = 0; i < node.num_inputs(); ++i) {
      const NodeOut& in = node.input(i);
      if (!placed(*in.node)) continue;
      // A ref input is the variable itself, colocated: nothing travels.
      int64_t bytes = node.IsRefInput(i) ? 0 : cost_.OutputBytes(*in.node, in.index);
      double arrives = finish(*in.node) +
                       cost_.TransferSeconds(bytes, devices_[device_of(*in.node)], devices_[d]);
      ready = std::max(ready, arrives);
    }
    for (const Node* control : node.control_inputs()) {
      if (!placed(*control)) continue;
      ready =
          std::max(ready, finish(*control) +
                              cost_.TransferSeconds(0, devices_[device_of(*control)], devices_[d]));
    }
    return std::max(ready, free_at_[d]) + cost_.ComputeSeconds(node, devices_[d]);
  }

  // The candidate where the node finishes first (the lowest index on a tie).
  int BestDevice(const Node& node, const std::vector<int>& candidates) const {
    int best = candidates.front();
    for (int d : candidates)
      if (FinishOn(node, d) < FinishOn(node, best)) best = d;
    return best;
  }

  void Assign(const Node& node, int d) {
    finish_[node.id()] = FinishOn(node, d);
    free_at_[d] = finish_[node.id()];
    device_of_[node.id()] = d;
  }

 private:
  const std::vector<DeviceName>& devices_;
  const CostModel& cost_;
  std::vector<int> device_of_;
  std::vector<double> finish_;
  std::vector<double> free_at_;
};

std::string Microseconds(double seconds) {
  return StrCat(static_cast<int64_t>(seconds * 1e6 + 0.5), " us");
}

// "cost model: finishes at 120 us on it (next best: 340 us on /job:...)".
// With a measured time for the node there: "cost model (measured 950 us): ...".
std::string CostReason(const Scheduler& scheduler, const CostModel& cost, const Node& node,
                       int chosen, const std::vector<int>& candidates,
                       const std::vector<DeviceName>& devices) {
  std::string text = "cost model";
  if (std::optional<double> measured = cost.MeasuredSeconds(node, devices[chosen]))
    text += " (measured " + Microseconds(*measured) + ")";
  text += ": finishes at " + Microseconds(scheduler.FinishOn(node, chosen));
  int runner_up = -1;
  for (int d : candidates)
    if (d != chosen &&
        (runner_up < 0 || scheduler.FinishOn(node, d) < scheduler.FinishOn(node, runner_up)))
      runner_up = d;
  if (runner_up >= 0)
    text += " (next best: " + Microseconds(scheduler.FinishOn(node, runner_up)) + " on " +
            devices[runner_up].ToString() + ")";
  return text;
}

std::string JoinReasons(const std::string& a, const std::string& b) {
  return a.empty() ? b : b.empty() ? a : a + "; " + b;
}

// A node the cost model places with its first consumer: no inputs, alone in
// its group, free to go to several devices.
bool IsDeferrable(const Node& node, const ColocationGroups& groups, const GroupConstraint& c) {
  return node.num_inputs() == 0 && node.control_inputs().empty() &&
         groups.Members(groups.GroupOf(node)).size() == 1 && c.candidates.size() > 1;
}

// The positions of `fallback` in `devices`; throws naming one that is not there.
std::vector<int> FallbackIndices(const std::vector<DeviceName>& devices,
                                 const std::vector<std::string>& fallback) {
  std::vector<int> indices;
  for (const std::string& name : fallback) {
    const std::string wanted = DeviceName::Parse(name).ToString();
    auto it = std::find_if(devices.begin(), devices.end(),
                           [&](const DeviceName& d) { return d.ToString() == wanted; });
    if (it == devices.end())
      Fail(Code::kInvalidArgument, "fallback device '", name, "' is not in the device list");
    indices.push_back(static_cast<int>(it - devices.begin()));
  }
  std::sort(indices.begin(), indices.end());
  return indices;
}

class Placer {
 public:
  Placer(const Graph& graph, const std::vector<std::string>& names, const PlacementOptions& options)
      : graph_(graph),
        devices_(ParseDeviceList(names)),
        options_(options),
        groups_(graph),
        cost_(options.cost),
        scheduler_(graph, devices_, cost_),
        fallback_(FallbackIndices(devices_, options.fallback_devices)),
        group_device_(graph.id_bound(), -1) {
    for (const DeviceName& d : devices_) result_.devices.push_back(d.ToString());
  }

  Placement Run() {
    for (const Node* node : graph_.TopologicalOrder()) {
      if (IsDeferrable(*node, groups_, Constraint(*node))) {
        deferred_.insert(node);
        continue;
      }
      PlaceNode(*node, "");
    }
    for (const Node* node : graph_.TopologicalOrder())  // sources nobody consumes
      if (deferred_.count(node)) PlaceNode(*node, "");
    return std::move(result_);
  }

 private:
  const GroupConstraint& Constraint(const Node& node) {
    int group = groups_.GroupOf(node);
    auto it = constraints_.find(group);
    if (it == constraints_.end())
      it = constraints_
               .emplace(group,
                        ConstrainGroup(groups_, group, devices_, options_.allow_soft_placement, fallback_))
               .first;
    return it->second;
  }

  void PlaceNode(const Node& node, const std::string& extra_reason) {
    const GroupConstraint& c = Constraint(node);
    int group = groups_.GroupOf(node);
    std::string reason = c.reason;
    if (group_device_[group] < 0) {
      group_device_[group] = scheduler_.BestDevice(node, c.candidates);
      if (c.candidates.size() > 1)
        group_reason_[group] =
            CostReason(scheduler_, cost_, node, group_device_[group], c.candidates, devices_);
      else if (reason.empty())
        reason = "the only device";
    }
    reason = JoinReasons(JoinReasons(reason, group_reason_[group]), extra_reason);
    PlaceDeferredInputs(node, group_device_[group]);
    Record(node, group_device_[group], reason);
  }

  // Sources waiting for their first consumer go to its device.
  void PlaceDeferredInputs(const Node& consumer, int d) {
    auto place = [&](const Node* source) {
      if (!deferred_.erase(source)) return;
      const std::vector<int>& allowed = Constraint(*source).candidates;
      if (std::find(allowed.begin(), allowed.end(), d) == allowed.end())
        return PlaceNode(*source, "");
      Record(*source, d,
             "placed with its first consumer " + consumer.Describe() +
                 " (no inputs: cheaper to make there than to ship)");
      group_device_[groups_.GroupOf(*source)] = d;
    };
    for (const NodeOut& in : consumer.inputs()) place(in.node);
    for (const Node* control : consumer.control_inputs()) place(control);
  }

  void Record(const Node& node, int d, std::string reason) {
    scheduler_.Assign(node, d);
    double finish = scheduler_.finish(node);
    result_.nodes[node.name()] = {devices_[d].ToString(), std::move(reason), finish};
    result_.estimated_step_seconds = std::max(result_.estimated_step_seconds, finish);
  }

  const Graph& graph_;
  std::vector<DeviceName> devices_;
  const PlacementOptions& options_;
  ColocationGroups groups_;
  CostModel cost_;
  Scheduler scheduler_;
  std::vector<int> fallback_;  // indices into devices_, ascending
  std::map<int, GroupConstraint> constraints_;
  std::vector<int> group_device_;
  std::map<int, std::string> group_reason_;
  std::set<const Node*> deferred_;
  Placement result_;
};

}  // namespace

Placement Place(const Graph& graph, const std::vector<std::string>& devices,
                const PlacementOptions& options) {
  return Placer(graph, devices, options).Run();
}

}  // namespace dflow
