// Measured profiles (graph/profile.h) from RunMetadata or a Chrome trace file.
#include "graph/profile.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "graph/device.h"
#include "graph/file.h"
#include "graph/json.h"

namespace dflow {
namespace {

// Sums of durations per node, turned into means.
class ProfileBuilder {
 public:
  void Add(const std::string& node, const std::string& device, double seconds) {
    if (device.empty()) return;
    Entry& e = entries_[node];
    e.type = DeviceName::Parse(device).type;
    e.total += seconds;
    e.count += 1;
  }

  MeasuredProfile Build() const {
    MeasuredProfile profile;
    for (const auto& [node, e] : entries_) profile[node] = {e.total / e.count, e.type};
    return profile;
  }

 private:
  struct Entry {
    std::string type;
    double total = 0;
    int count = 0;
  };
  std::map<std::string, Entry> entries_;
};

// pid -> device, from the trace's "process_name" metadata events.
std::map<int64_t, std::string> DevicesByPid(const nlohmann::json& events) {
  std::map<int64_t, std::string> devices;
  for (const auto& e : events) {
    if (!e.is_object() || e.value("ph", "") != "M" || e.value("name", "") != "process_name")
      continue;
    const auto args = e.find("args");
    const auto pid = e.find("pid");
    if (pid != e.end() && pid->is_number_integer() && args != e.end() && args->is_object())
      devices[pid->get<int64_t>()] = args->value("name", "");
  }
  return devices;
}

// A node event's device: its args.device (dflow's traces, whose processes are
// tasks), else its process's name (traces whose processes are devices).
std::string DeviceOfEvent(const nlohmann::json& e, const std::map<int64_t, std::string>& devices) {
  auto args = e.find("args");
  if (args != e.end() && args->is_object() && args->contains("device") && (*args)["device"].is_string())
    return (*args)["device"].get<std::string>();
  auto device = devices.find(e["pid"].get<int64_t>());
  return device == devices.end() ? std::string() : device->second;
}

MeasuredProfile ParseProfile(const nlohmann::json& doc, const std::string& path) {
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    Fail(Code::kInvalidArgument, "profile '", path, "' has no traceEvents list: expected a "
         "Chrome trace from `dflow run --trace` or `dflow profile --trace`");
  const nlohmann::json& events = doc["traceEvents"];
  std::map<int64_t, std::string> devices = DevicesByPid(events);
  ProfileBuilder builder;
  for (const auto& e : events) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    if (!e.contains("name") || !e["name"].is_string() || !e.contains("dur") ||
        !e["dur"].is_number() || e["dur"].get<double>() < 0 || !e.contains("pid") ||
        !e["pid"].is_number_integer())
      Fail(Code::kInvalidArgument, "profile '", path, "': a node event needs a name, a "
           "non-negative dur and a pid, got ", JsonForMessage(e));
    builder.Add(e["name"].get<std::string>(), DeviceOfEvent(e, devices), e["dur"].get<double>() * 1e-6);
  }
  MeasuredProfile profile = builder.Build();
  if (profile.empty())
    Fail(Code::kInvalidArgument, "profile '", path, "' has no node timings on a device");
  return profile;
}

}  // namespace

MeasuredProfile ProfileFromRunMetadata(const RunMetadata& metadata) {
  ProfileBuilder builder;
  for (const NodeExecStats& s : metadata.step_stats)
    builder.Add(s.node, s.device, std::max<int64_t>(s.end_ns - s.start_ns, 0) * 1e-9);
  return builder.Build();
}

MeasuredProfile LoadProfile(const std::string& path) {
  nlohmann::json doc;
  try {
    doc = ParseJson(ReadFileToString(path), path);
  } catch (const Error& e) {
    if (e.code() != Code::kInvalidArgument) throw;  // missing or unreadable
    Fail(e.code(), "profile '", path, "' is not a Chrome trace: ", e.message());
  }
  try {
    return ParseProfile(doc, path);
  } catch (const nlohmann::json::exception& e) {
    Fail(Code::kInvalidArgument, "profile '", path, "' is not a Chrome trace: ", JsonErrorMessage(e));
  }
}

}  // namespace dflow
