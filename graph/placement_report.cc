// The placement's plain parts: the device list check, applying a placement
// to a graph, and showing it (text and JSON).
#include <nlohmann/json.hpp>
#include <set>

#include "graph/placement.h"

namespace dflow {

std::vector<DeviceName> ParseDeviceList(const std::vector<std::string>& devices) {
  if (devices.empty()) Fail(Code::kInvalidArgument, "the device list is empty");
  std::vector<DeviceName> parsed;
  std::set<std::string> seen;
  for (const std::string& text : devices) {
    DeviceName name = DeviceName::Parse(text);
    if (name.type.empty() || !name.index)
      Fail(Code::kInvalidArgument, "device '", text,
           "' is not a full device name: it needs a type "
           "and an index (e.g. /job:worker/replica:0/task:0/device:CPU:0 or /device:CPU:1)");
    if (!seen.insert(name.ToString()).second)
      Fail(Code::kInvalidArgument, "device '", text, "' appears twice in the device list");
    parsed.push_back(std::move(name));
  }
  return parsed;
}

const std::string& Placement::DeviceOf(const std::string& node) const {
  auto it = nodes.find(node);
  if (it == nodes.end()) Fail(Code::kNotFound, "node '", node, "' has no device in this placement");
  return it->second.device;
}

void AssignDevices(Graph& graph, const Placement& placement) {
  for (Node* node : graph.nodes()) node->set_assigned_device(placement.DeviceOf(node->name()));
}

nlohmann::ordered_json PlacementToJson(const Graph& graph, const Placement& placement) {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const Node* node : graph.nodes()) {
    const NodePlacement& p = placement.nodes.at(node->name());
    nodes.push_back({{"name", node->name()},
                     {"op", node->op()},
                     {"requested", node->requested_device()},
                     {"device", p.device},
                     {"reason", p.reason},
                     {"finish_seconds", p.finish_seconds}});
  }
  return {{"devices", placement.devices},
          {"estimated_step_seconds", placement.estimated_step_seconds},
          {"nodes", std::move(nodes)}};
}

std::string PlacementToText(const Graph& graph, const Placement& placement) {
  std::string text;
  for (const Node* node : graph.nodes()) {
    const NodePlacement& p = placement.nodes.at(node->name());
    text += StrCat(node->name(), " (", node->op(), ") -> ", p.device, ": ", p.reason, "\n");
  }
  return text + StrCat("estimated step time: ", placement.estimated_step_seconds * 1e6, " us\n");
}

}  // namespace dflow
