#include "dist/cluster.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "graph/file.h"
#include "graph/graph_io.h"
#include "graph/json.h"
#include "graph/status.h"

namespace dflow::dist {
namespace {

using Json = nlohmann::ordered_json;

template <typename... Args>
[[noreturn]] void Bad(std::string_view source, const Args&... args) {
  Fail(Code::kInvalidArgument, source, ": ", args...);
}

void RequireOnlyKeys(const Json& object, std::initializer_list<std::string_view> allowed,
                     std::string_view source, std::string_view where) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (known) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    Bad(source, where, ": unknown field \"", key, "\" (expected ", list, ")");
  }
}

// A job name is used inside device names, so it may not hold '/' or ':'.
bool IsValidJobName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

std::vector<std::string> ReadTaskList(const std::string& job, const Json& list,
                                      std::string_view source) {
  std::string where = "cluster." + job;
  if (!list.is_array() || list.empty())
    Bad(source, where, " must be a non-empty list of \"host:port\" strings, got ",
        DescribeJson(list));
  std::vector<std::string> addresses;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string field = StrCat(where, "[", i, "]");
    if (!list[i].is_string())
      Bad(source, field, " must be a \"host:port\" string, got ", DescribeJson(list[i]));
    std::string address = list[i].get<std::string>();
    ParseHostPort(address, StrCat(source, ": ", field));
    addresses.push_back(address);
  }
  return addresses;
}

}  // namespace

std::pair<std::string, int> ParseHostPort(std::string_view address, std::string_view where) {
  size_t colon = address.rfind(':');
  if (colon == std::string_view::npos)
    Fail(Code::kInvalidArgument, where, ": address '", address, "' is not \"host:port\"");
  std::string_view host = address.substr(0, colon);
  std::string_view port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  bool host_ok = !host.empty();
  for (char c : host) host_ok = host_ok && !std::isspace(static_cast<unsigned char>(c)) && c != '/';
  if (!host_ok) Fail(Code::kInvalidArgument, where, ": address '", address, "' has a bad host");
  int port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port < 1 || port > 65535)
    Fail(Code::kInvalidArgument, where, ": address '", address, "' has a bad port '", port_text,
         "' (expected 1..65535)");
  return {std::string(host), port};
}

ClusterSpec ClusterSpec::FromJson(const Json& doc, std::string_view source) {
  if (!doc.is_object())
    Bad(source, "a cluster spec must be a JSON object, got ", DescribeJson(doc));
  RequireOnlyKeys(doc, {"cluster", "task", "gpus_per_task", "curve_keys"}, source, "top level");
  if (!doc.contains("cluster") || !doc["cluster"].is_object() || doc["cluster"].empty())
    Bad(source, "\"cluster\" must be an object of jobs, e.g. {\"worker\": [\"127.0.0.1:2222\"]}");
  ClusterSpec spec;
  std::map<std::string, std::string> owner;  // address -> "job[i]" that uses it
  for (const auto& [job, list] : doc["cluster"].items()) {
    if (!IsValidJobName(job))
      Bad(source, "cluster: bad job name \"", job, "\" (letters, digits, '_' and '-' only)");
    spec.jobs_[job] = ReadTaskList(job, list, source);
    for (size_t i = 0; i < spec.jobs_[job].size(); ++i) {
      std::string who = StrCat(job, "[", i, "]");
      auto [it, fresh] = owner.emplace(spec.jobs_[job][i], who);
      if (!fresh)
        Bad(source, "cluster.", who, ": address '", it->first, "' is already used by ", it->second);
    }
  }
  if (doc.contains("gpus_per_task")) {
    const Json& gpus = doc["gpus_per_task"];
    if (!gpus.is_number_integer() || gpus.get<int64_t>() < 0 || gpus.get<int64_t>() > 64)
      Bad(source, "gpus_per_task must be an integer in 0..64, got ", DescribeJson(gpus));
    spec.gpus_per_task_ = gpus.get<int>();
  }
  if (doc.contains("curve_keys")) {
    if (!doc["curve_keys"].is_string() || doc["curve_keys"].get<std::string>().empty())
      Bad(source, "curve_keys must name the folder of the cluster's CURVE keys, got ", DescribeJson(doc["curve_keys"]));
    spec.curve_keys_ = doc["curve_keys"].get<std::string>();
  }
  if (doc.contains("task")) {
    const Json& task = doc["task"];
    if (!task.is_object()) Bad(source, "task must be an object {\"type\": JOB, \"index\": N}");
    RequireOnlyKeys(task, {"type", "index"}, source, "task");
    if (!task.contains("type") || !task["type"].is_string())
      Bad(source, "task.type must be a job name");
    if (!task.contains("index") || !task["index"].is_number_integer())
      Bad(source, "task.index must be an integer");
    TaskId self{task["type"].get<std::string>(), 0};
    if (!spec.jobs_.count(self.job))
      Bad(source, "task.type: job '", self.job, "' is not in the cluster");
    int64_t index = task["index"].get<int64_t>();
    int64_t count = spec.num_tasks(self.job);
    if (index < 0 || index >= count)
      Bad(source, "task.index ", index, " is out of range: job '", self.job, "' has ", count,
          " task(s), 0..", count - 1);
    self.index = static_cast<int>(index);
    spec.self_ = self;
  }
  return spec;
}

ClusterSpec ClusterSpec::Parse(std::string_view text, std::string_view source) {
  return FromJson(ParseJson<Json>(text, source), source);
}

ClusterSpec ClusterSpec::Load(const std::string& path) {
  return Parse(ReadFileToString(path), path);
}

int ClusterSpec::num_tasks(const std::string& job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

const std::string& ClusterSpec::Address(const TaskId& task) const {
  int count = num_tasks(task.job);
  if (task.index < 0 || task.index >= count)
    Fail(Code::kNotFound, "no task ", TaskPrefix(task), " in the cluster (job '", task.job,
         "' has ", count, " task(s))");
  return jobs_.at(task.job)[task.index];
}

std::vector<std::string> ClusterSpec::DeviceNames() const {
  std::vector<std::string> names;
  for (const auto& [job, tasks] : jobs_)
    for (int i = 0; i < static_cast<int>(tasks.size()); ++i) {
      std::string prefix = TaskPrefix({job, i});
      names.push_back(prefix + "/device:CPU:0");
      for (int g = 0; g < gpus_per_task_; ++g) names.push_back(StrCat(prefix, "/device:GPU:", g));
    }
  return names;
}

std::string ClusterSpec::TaskPrefix(const TaskId& task) {
  return StrCat("/job:", task.job, "/replica:0/task:", task.index);
}

}  // namespace dflow::dist
